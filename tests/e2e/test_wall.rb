# SPDX-License-Identifier: GPL-2.0-only
# Wall-clock mode (--clock wall, issue 13): every Ruby thread gets a sample per tick, running or
# not, with the stack Ruby itself shows in that state and the state docs/internals/wall-clock.md §3
# decides for it, compared with what the script says of its own threads.
class E2E
  WALL_HZ = 19
  WALL_SECONDS = 4
  # The state each thread of wall_states.rb is in, for good (docs/internals/wall-clock.md §1.5).
  WALL_STATES = {
    "rp-cpu" => "running",
    "rp-sleep" => "sleeping",
    "rp-pipe" => "blocked_io",
    "rp-mutex" => "sleeping",
    "rp-queue" => "sleeping",
  }.freeze

  smoke :test_wall_states
  group :service, :test_wall_service

  def test_wall_states = check_wall_states({}, mn: false)

  # The 6.1 way of running the wall program (a task iterator created and read per run, filtered
  # to the main task), forced on a newer kernel: the same states and stacks.
  def test_wall_states_iterator
    check_wall_states({}, mn: false, daemon_env: { "RP_WALL_ITER" => "1" }, how: "task iterator")
  end

  def test_wall_states_mn
    raise Skip, "M:N threads exist from Ruby 3.3 (this is #{@rt.version})" if Gem::Version.new(@rt.version) < Gem::Version.new("3.3")
    check_wall_states({ "RUBY_MN_THREADS" => "1" }, mn: true)
  end

  # GVL contention: three threads spinning in Ruby share the GVL; each is running about a third
  # of the time and waiting for the GVL the rest, at most one is running at a time, and every
  # sample, running or waiting, holds the thread's stack.
  def test_wall_gvl
    wall_supported!
    spinners = nil
    r = profile_script("threads.rb", duration: WALL_SECONDS,
                                     flags: ["--clock", "wall", "--frequency", WALL_HZ.to_s],
                                     watch: ->(f) { spinners = threads_by_name(f["pid"]).values_at("rp-alpha", "rp-beta", "rp-gamma").compact })
    samples, prof = r.samples, r.prof
    ticks = WALL_SECONDS * WALL_HZ # the run's ticks, by the test's clock: --duration at WALL_HZ
    shares = %w[alpha beta gamma].map do |name|
      mine = samples.select { |s| s.labels["ruby_thread_name"] == "rp-#{name}" }
      n = mine.sum(&:count)
      # one sample per tick: on a CPU from the perf samples, off it from the iterator, never both
      check(n >= 0.6 * ticks && n <= 1.2 * ticks, "rp-#{name}: #{n} samples in #{ticks} ticks")
      states = mine.group_by { |s| s.labels["thread_state"] }.transform_values { |v| v.sum(&:count) }
      running = states.fetch("running", 0)
      gvl = states.fetch("gvl_wait", 0)
      check(running + gvl >= 0.9 * n, "rp-#{name}: states #{states.inspect}")
      check(running >= 0.1 * n && gvl >= 0.3 * n,
            "rp-#{name}: #{running} running and #{gvl} waiting for the GVL of #{n} (expected ~1/3, ~2/3)")
      good = mine.select { |s| spin_stack?(prof.frames(s), name) }.sum(&:count)
      check(good >= running_floor * n,
            "rp-#{name}: #{good}/#{n} samples hold the spinning stack; most frequent:\n  " +
            prof.frames(mine.max_by(&:count)).map { |l| fmt(l, prof) }.join("\n  "))
      [name, running, gvl, n, good]
    end
    # one GVL: the running samples of all three are one per tick. Two samplers make them (the
    # perf samples while the holder is on a CPU, the iterator while it is preempted): they add
    # up to the ticks on average only, a double count would be twice as many.
    # On a busy machine they add up to more: the daemon's own wake-up at a tick can preempt the
    # holder (the likely cause), and the iterator then finds it off a CPU more often than chance
    # would (seen: 1.34 times the ticks beside two CPU-bound processes, 1.0 idle). The check tells one holder
    # from two: half way between one sample per tick and two.
    running = shares.sum { |s| s[1] }
    held = spinners.size == 3 ? spinners.sum { |t| cpu_in_window(r.cpu, t, prof) || 0 } : 0
    check(running <= 1.5 * ticks,
          format("%d running samples in %d ticks (the holders ran %.2f s on a CPU): more than one GVL holder",
                 running, ticks, held))
    shares.map { |name, run, gvl, n, good| "#{name} running #{run} gvl_wait #{gvl} of #{n} exact #{good}" }.join(", ") +
      format(" (%d ticks, %d running: %.2f per tick; the holders on a CPU %.0f %% of the time)", ticks, running,
             running.to_f / ticks, 100 * held / Float(prof.duration))
  end

  # A process stopped by SIGSTOP: every thread is `stopped` (its task's state says so), whatever
  # Ruby last left in its fields; still one sample per tick each.
  def test_wall_stopped
    wall_supported!
    raise Skip, "Ruby 2.7 keeps no thread id to find a thread's task by" if Gem::Version.new(@rt.version) < Gem::Version.new("3.0")
    facts = start("wall_states.rb")
    Process.kill("STOP", facts["pid"])
    begin
      path, = rubyprofd("--pid", facts["pid"].to_s, "--duration", "3", "--clock", "wall",
                        "--frequency", WALL_HZ.to_s)
    ensure
      Process.kill("CONT", facts["pid"])
    end
    samples = PprofRaw.read(path).samples_of(facts["pid"])
    total = samples.sum(&:count)
    check(total >= 7 * 0.6 * WALL_HZ * 3, "only #{total} samples of 7 threads")
    states = samples.group_by { |s| s.labels["thread_state"] }.transform_values { |v| v.sum(&:count) }
    check(states.fetch("stopped", 0) >= 0.9 * total, "states of a stopped process: #{states.inspect}")
    "#{states["stopped"]}/#{total} stopped"
  end

  # The service in wall-clock mode: its interval profiles carry wall time and the states, the
  # sidecar names the series "wall" for the collector, /metrics counts the iterator's work.
  def test_wall_service
    wall_supported!
    facts = start("wall_states.rb")
    pid = facts["pid"]
    port = 20000 + rand(20000)
    svc = service(["--clock", "wall", "--interval", "2", "--frequency", WALL_HZ.to_s,
                   "--metrics-address", "127.0.0.1:#{port}"], conf: FAULT_CONF)
    begin
      check(svc.wait_note(/READY=1/, 60), "no READY=1:\n#{svc.log_text}")
      wait_for("the start line naming wall-clock mode", 10, svc) { svc.log_text.include?("(wall clock: every Ruby thread)") }
      meta, path = wait_for("a wall profile of the target", 30, svc) do
        svc.profiles.find { |_, pth| PprofRaw.read(pth).samples_of(pid).sum(&:count) >= WALL_HZ }
      end
      check(meta["profile_name"] == "wall", "sidecar: #{meta.inspect}")
      prof = PprofRaw.read(path)
      check(prof.sample_types == %w[samples/count wall/nanoseconds], "sample types #{prof.sample_types.inspect}")
      mine = prof.samples_of(pid)
      sleeping = mine.select { |x| x.labels["ruby_thread_name"] == "rp-sleep" }
      states = sleeping.group_by { |x| x.labels["thread_state"] }.transform_values { |v| v.sum(&:count) }
      check(states.keys == ["sleeping"], "rp-sleep in the service's profile: #{states.inspect}")
      runs = metric(port, "rubyprofd_wall_runs_total").to_i
      threads = metric(port, "rubyprofd_wall_threads_sampled_total").to_i
      check(runs > 0 && threads >= runs, "wall metrics: runs #{runs}, threads #{threads}")
      st, = svc.stop("TERM")
      check(st.exited? && st.exitstatus == 0, "SIGTERM: #{st.inspect}\n#{svc.log_text}")
      "#{mine.sum(&:count)} samples of #{mine.map { |x| x.labels["ruby_thread"] }.uniq.size} threads in #{File.basename(path)}; rp-sleep #{states.inspect}; #{runs} iterator runs, #{threads} threads"
    ensure
      svc.kill
    end
  end

  # Stack reuse (docs/internals/wall-clock.md, "Reuse and the cursor") must never show a stale stack: a
  # thread that sleeps in alt_a, then in alt_b (same depth, same state, same header but for the
  # stack) shows both stacks in their shares, and one that alternates sleep with IO.select never
  # shows the sleep's stack with the select's state or the reverse.
  def test_wall_alternate
    wall_supported!
    r = profile_script("wall_alternate.rb", duration: WALL_SECONDS,
                                            flags: ["--clock", "wall", "--frequency", WALL_HZ.to_s])
    places, prof, samples = r.facts["places"], r.prof, r.samples
    want_state = { "sleep" => "sleeping", "select" => "blocked_io" }
    report = %w[rp-ab rp-si].map do |name|
      mine = samples.select { |s| s.labels["ruby_thread_name"] == name }
      n = mine.sum(&:count)
      check(n >= 0.6 * WALL_HZ * WALL_SECONDS, "#{name}: only #{n} samples")
      mine_places = places.select { |k, _| k.start_with?("#{name} ") }
      check(mine_places.size == 2, "#{name}: places #{mine_places.keys.inspect}")
      by_place = Hash.new(0)
      wrong_state = Hash.new(0)
      mine.each do |s|
        frames = prof.frames(s)
        key, f = mine_places.find { |_, pl| wall_blocked_stack?(prof, frames, pl["frames"], pl["cfunc"]) }
        key ||= "other"
        by_place[key] += s.count
        wrong_state[key] += s.count if f && s.labels["thread_state"] != want_state.fetch(f["cfunc"])
      end
      # the ticks in between (the loop, the note) are rare: each place holds about half
      check(by_place["other"] <= 0.1 * n, "#{name}: #{by_place.inspect} of #{n}")
      mine_places.each_key do |k|
        check(by_place[k] >= 0.3 * n && by_place[k] <= 0.7 * n, "#{name}: #{by_place.inspect} of #{n}: a stale stack?")
      end
      check(wrong_state.values.sum <= 0.05 * n, "#{name}: samples whose stack and state disagree #{wrong_state.inspect}")
      "#{name} #{n}: " + mine_places.keys.map { |k| "#{k.split.last} #{by_place[k]}" }.join(" ")
    end
    reused = r.stdout[/wall reuse: (\d+) stacks reused/, 1]
    report.join(", ") + (reused ? ", #{reused} reused" : "")
  end

  # A parked thread's reused visits wait in BPF and are sent together later: those of threads
  # that end while parked (one after the other, 0.8 s each) are all in the profile, under the
  # sleep's exact stack; without the daemon taking them from the map they would be about one
  # sample per thread (its first, walked visit).
  def test_wall_brief_threads
    wall_supported!
    r = profile_script("wall_brief.rb", duration: WALL_SECONDS,
                                        flags: ["--clock", "wall", "--frequency", WALL_HZ.to_s])
    ticks = WALL_SECONDS * WALL_HZ # by the test's clock: --duration at WALL_HZ
    want = r.facts["threads"].fetch("rp-brief")
    mine = r.samples.select { |s| s.labels["ruby_thread_name"] == "rp-brief" }
    n = mine.sum(&:count)
    threads = mine.map { |s| s.labels["ruby_thread"] }.uniq.size
    exact = mine.select { |s| wall_blocked_stack?(r.prof, r.prof.frames(s), want["frames"], "sleep") }.sum(&:count)
    sleeping = mine.select { |s| s.labels["thread_state"] == "sleeping" }.sum(&:count)
    # one rp-brief at a time, parked all its life but for its start and end
    # on a shortfall, where the rest went: samples of other names, or of no thread at all (an
    # ended thread's visits sent after its name could no longer be read)
    names = r.samples.group_by { |s| [s.labels["ruby_thread_name"], s.labels["ruby_thread"] ? "thread" : "no thread"] }
                     .transform_values { |v| v.sum(&:count) }
    check(n >= 0.8 * ticks && n <= 1.1 * ticks,
          "rp-brief: #{n} samples of #{threads} threads in #{ticks} ticks; all of the process by name: " \
          "#{names.inspect}; the daemon said:\n#{r.stdout.lines.grep(/^wall|tick|visit|thread/).join}")
    check(exact >= 0.95 * n && sleeping >= 0.95 * n, "rp-brief: #{exact} exact, #{sleeping} sleeping of #{n}")
    taken = r.stdout[/\((\d+) taken at the end or a thread's end/, 1]
    "rp-brief: #{n} samples of #{threads} threads in #{ticks} ticks, #{exact} exact; #{taken} visits taken by the daemon"
  end

  # Parked threads are visited without copying their headers while the thread list stays as it
  # was: a thread that ends between two parked ones (only the list's count changes) must not be
  # sampled after its end, and one added later must be found from then on. Where the two events
  # fall in the profile comes from their wall-clock times and the end of the run (the ticks
  # counted back from it); a ghost of rp-b would have every tick, a missed rp-d none.
  def test_wall_list_changes
    wall_supported!
    duration = 6
    facts = start("wall_brief.rb", "list")
    t_start = nil
    path, stdout, = rubyprofd("--pid", facts["pid"].to_s, "--duration", duration.to_s, "--clock", "wall",
                              "--frequency", WALL_HZ.to_s) { t_start = Time.now.to_f; go(facts) }
    prof = PprofRaw.read(path)
    # the run, by the test's clock: from READY=1 (the go) for --duration
    ticks = duration * WALL_HZ
    t_end = t_start + duration
    times_path = @rt.root ? File.join(@rt.root, facts["times"]) : facts["times"]
    times = File.readlines(times_path).to_h { |l| k, v = l.split; [k, Float(v)] }
    want_b = ((times.fetch("b_end") - t_start) * WALL_HZ).clamp(0, ticks)
    want_d = ((t_end - times.fetch("d_start")) * WALL_HZ).clamp(0, ticks)
    check(want_b >= 5 && want_d >= 5, "rubyprofd sampled too late to see the changes: #{ticks} ticks from #{t_start}, #{times.inspect}")
    n = %w[rp-a rp-b rp-c rp-d].to_h do |name|
      mine = prof.samples_of(facts["pid"]).select { |s| s.labels["ruby_thread_name"] == name }
      want = facts["threads"][name]
      bad = want ? mine.reject { |s| wall_blocked_stack?(prof, prof.frames(s), want["frames"], "sleep") }.sum(&:count) : 0
      check(bad <= 0.05 * [mine.sum(&:count), 1].max, "#{name}: #{bad} samples off the sleep's stack")
      [name, mine.sum(&:count)]
    end
    check(n["rp-a"] >= 0.95 * ticks && n["rp-c"] >= 0.95 * ticks, "parked all along: #{n.inspect} in #{ticks} ticks")
    # READY=1 and the go are a few ms before the first tick, the end a few tenths of a second
    # after the last one: a margin of 8 ticks
    check((n["rp-b"] - want_b).abs <= 8, "rp-b ended after about #{want_b.round} ticks: #{n.inspect} in #{ticks}")
    check((n["rp-d"] - want_d).abs <= 8, "rp-d added about #{want_d.round} ticks before the end: #{n.inspect} in #{ticks}")
    quiet = stdout[/, (\d+) visits without a header copy/, 1]
    "#{n.map { |k, v| "#{k} #{v}" }.join(", ")} of #{ticks} ticks (rp-b about #{want_b.round}, rp-d #{want_d.round}); " \
      "#{quiet} visits without a header copy"
  end

  # The same for a process that ends while its thread is parked: its pending visits are sent
  # before the process is forgotten.
  def test_wall_brief_process
    wall_supported!
    facts = start("wall_brief.rb", "exit")
    pid = facts["pid"]
    path, stdout, = rubyprofd("--pid", pid.to_s, "--duration", "8", "--clock", "wall", "--frequency", WALL_HZ.to_s) { go(facts) }
    # the process ends EXIT_AFTER (5 s, wall_brief.rb) after the go, by its own clock: its ticks
    ticks = 5 * WALL_HZ
    want = facts["threads"].fetch("rp-parked")
    prof = PprofRaw.read(path)
    mine = prof.samples_of(pid).select { |s| s.labels["ruby_thread_name"] == "rp-parked" }
    n = mine.sum(&:count)
    exact = mine.select { |s| wall_blocked_stack?(prof, prof.frames(s), want["frames"], "sleep") }.sum(&:count)
    check(n >= 0.9 * ticks && n <= 1.1 * ticks, "rp-parked: #{n} samples in the #{ticks} ticks of its 5 s after the go")
    check(exact >= 0.95 * n, "rp-parked: #{exact} exact of #{n}")
    # nothing of the process runs: its ticks are skipped (not on 6.1, nor 2.7: no thread ids)
    skipped = stdout[/ms in BPF; (\d+) ticks skipped/, 1].to_i
    if wall_by_syscall? && Gem::Version.new(@rt.version) >= Gem::Version.new("3.0")
      check(skipped >= ticks / 2, "only #{skipped} of #{ticks} ticks skipped while nothing ran")
    end
    "rp-parked: #{n} samples in #{ticks} ticks (#{skipped} skipped), #{exact} exact, #{ticks} ticks before the process ended"
  end

  private

  # Share of a running thread's samples that must hold its exact stack. Its stack comes from
  # the perf samples (walked by the thread itself) where the iterator can tell it is on a CPU;
  # 2.7 keeps no thread id to find its task by, so its running threads are walked from the
  # iterator while they run: their leaf can move under the walk.
  def running_floor = Gem::Version.new(@rt.version) >= Gem::Version.new("3.0") ? 0.95 : 0.8

  # threads.rb's spinning stack: spin_NAME's block (or Kernel#loop between two of its runs),
  # Kernel#loop, spin_NAME, the thread's block; all at their lines.
  def spin_stack?(frames, name)
    line = { "alpha" => 5, "beta" => 6, "gamma" => 7 }.fetch(name)
    frames = frames.drop(1) if frames[0] && frames[0].name =~ /\Ablock in (Object#)?spin_#{name}\z/ && frames[0].line == line
    frames.size == 3 && method?(frames[0], "loop") && method?(frames[1], "spin_#{name}") &&
      frames[1].line == line && frames[2].name == "block (2 levels) in <main>" && frames[2].line == 12
  end

  # 6.2 has bpf_task_from_pid: the runs are BPF_PROG_RUN of a syscall program.
  def wall_by_syscall?
    major, minor = File.read("/proc/sys/kernel/osrelease").split(".").map(&:to_i)
    major > 6 || (major == 6 && minor >= 2)
  end

  def wall_supported!
    major, minor = File.read("/proc/sys/kernel/osrelease").split(".").map(&:to_i)
    raise Skip, "wall-clock mode needs kernel 6.1 (this is #{major}.#{minor})" if major < 6 || (major == 6 && minor < 1)
    v = Gem::Version.new(@rt.version)
    raise Skip, "no wall-clock offsets for Ruby #{@rt.version} yet" if v < Gem::Version.new("2.7") || (v >= Gem::Version.new("3.0") && v < Gem::Version.new("3.1")) || v >= Gem::Version.new("3.5")
  end

  # The sample's frames are the recorded ones under one leaf frame: the blocking method.
  def wall_blocked_stack?(prof, frames, want, cfunc)
    frames.size == want.size + 1 && method?(frames[0], cfunc) &&
      frames.drop(1).zip(want).all? { |f, w| same?(f, w) }
  end

  def wall_exact?(frames, want)
    frames.size == want.size && frames.zip(want).all? { |f, w| same?(f, w) }
  end

  # Kernel#loop written in Ruby (<internal:kernel>, 3.3+) between two runs of the block: any
  # line of its own, the rest of the stack as Ruby said.
  def wall_in_loop?(frames, want)
    frames.size == want.size - 1 && want.size >= 2 && method?(frames[0], "loop") &&
      frames[0].file == want[1]["path"] && wall_exact?(frames.drop(1), want.drop(2))
  end

  def check_wall_states(env, mn:, daemon_env: {}, how: nil)
    wall_supported!
    cpu_thread = nil
    r = profile_script("wall_states.rb", duration: WALL_SECONDS, env: env, daemon_env: daemon_env,
                                         flags: ["--clock", "wall", "--frequency", WALL_HZ.to_s],
                                         watch: ->(f) { [cpu_thread = threads_by_name(f["pid"])["rp-cpu"]].compact })
    how ||= wall_by_syscall? ? "syscall program" : "task iterator"
    check(r.stdout =~ /^wall: \d+ thread samples in \d+ runs \(#{how},/, "runs not made by the #{how}:\n#{r.stdout}")
    facts, prof, samples = r.facts, r.prof, r.samples
    check(prof.sample_types == %w[samples/count wall/nanoseconds],
          "sample types #{prof.sample_types.inspect}")
    check(prof.period_type == "wall/nanoseconds", "period type #{prof.period_type.inspect}")
    unlabelled = samples.reject { |s| s.labels["thread_state"] }.sum(&:count)
    check(unlabelled == 0, "#{unlabelled} samples without a thread_state label")
    ticks = WALL_HZ * WALL_SECONDS
    report = facts["threads"].sort.map do |name, f|
      mine = samples.select { |s| s.labels["ruby_thread_name"] == name }
      n = mine.sum(&:count)
      # one sample per tick, whatever the thread does (a loaded VM may run late ticks)
      check(n >= 0.6 * ticks && n <= 1.2 * ticks, "#{name}: #{n} samples in #{WALL_SECONDS} s at #{WALL_HZ} Hz")
      ids = mine.map { |s| s.labels["ruby_thread"] }.uniq
      check(ids.size == 1 && ids.first, "#{name} sampled under ruby_thread #{ids.inspect}")
      want = f["frames"]
      exact, other = mine.partition do |s|
        frames = prof.frames(s)
        if f["cfunc"]
          wall_blocked_stack?(prof, frames, want, f["cfunc"])
        else
          # a CPU loop: at its line, or in Kernel#loop between two runs of the block (C before
          # 3.3; Ruby from 3.3, at its `while` or its `yield` line)
          wall_exact?(frames, want) || wall_exact?(frames, want.drop(1)) || wall_in_loop?(frames, want)
        end
      end
      good = exact.sum(&:count)
      best = other.max_by(&:count) || mine.max_by(&:count)
      floor = f["cfunc"] ? 0.9 : running_floor
      check(good >= floor * n,
            "#{name}: #{good}/#{n} samples hold Ruby's stack; Ruby says (under #{f["cfunc"].inspect}):\n  " +
            show(want) + "\nmost frequent other stack (#{best.labels["thread_state"]}):\n  " +
            prof.frames(best).map { |l| fmt(l, prof) }.join("\n  "))
      states = mine.group_by { |s| s.labels["thread_state"] }.transform_values { |v| v.sum(&:count) }
      expected = WALL_STATES.fetch(name)
      check(states.fetch(expected, 0) >= 0.9 * n,
            "#{name}: states #{states.inspect}, expected #{expected}")
      note = ""
      # the syscall its task sleeps in: poll on 3.x (§1.5); 2.7 keeps no tid to find the task by
      # (it would be read), an M:N thread waiting for I/O has no task
      if name == "rp-pipe" && !mn && Gem::Version.new(@rt.version) >= Gem::Version.new("3.0")
        want_call = "poll"
        calls = mine.group_by { |s| s.labels["syscall"] }.transform_values { |v| v.sum(&:count) }
        check(calls.fetch(want_call, 0) >= 0.9 * n, "rp-pipe: syscalls #{calls.inspect}, expected #{want_call}")
        note = " (#{want_call})"
      end
      "#{name} #{n} #{expected} #{states.fetch(expected, 0)}/#{n}#{note} exact #{good}/#{n}"
    end
    # Wall time, not counts: the CPU loop's time is its perf samples' (on a CPU) plus the
    # iterator's (off it, a sample weighing every period owed), as long as a sleeper's. The perf
    # part spreads as samples_ok? says for the CPU time the thread had (on a busy machine
    # beside two CPU-bound processes: rp-cpu's time 1.17 of rp-sleep's, 3 sd of that spread);
    # 15 % at least (an M:N thread has no task of its own to measure).
    nanos = ->(name) { samples.select { |s| s.labels["ruby_thread_name"] == name }.sum(&:nanos) }
    cpu_ns, sleep_ns = nanos.("rp-cpu"), nanos.("rp-sleep")
    period_ns = 1e9 / WALL_HZ
    cpu_s = cpu_thread && cpu_in_window(r.cpu, cpu_thread, prof)
    allowed = [0.15 * sleep_ns, cpu_s ? sample_spread(cpu_s * WALL_HZ, cpu_s / Float(prof.duration)) * period_ns : 0].max
    check((cpu_ns - sleep_ns).abs <= allowed,
          format("rp-cpu's wall time %.0f ms, rp-sleep's %.0f ms (allowed %.0f ms: rp-cpu ran %s s on a CPU): " \
                 "not one thread's time each", cpu_ns / 1e6, sleep_ns / 1e6, allowed / 1e6, cpu_s ? format("%.2f", cpu_s) : "?"))
    report << format("rp-cpu/rp-sleep time %.2f", cpu_ns.to_f / sleep_ns)
    threads = samples.map { |s| s.labels["ruby_thread"] }.uniq
    # the five, the mutex holder and the main thread
    check(threads.size == 7, "#{threads.size} Ruby threads sampled: #{threads.inspect}")
    summary = r.stdout[/^wall time per thread and state:\n(?:  .*\n)+/]
    check(summary && facts["threads"].keys.all? { |n| summary.include?("(#{n})") },
          "the summary does not list each thread's states:\n#{r.stdout}")
    # the top list split by state: the pipe reader's read is the blocked_io leaf
    check(r.stdout =~ /^  blocked_io .*: 100\.0% IO#read$/, "no blocked_io top line with IO#read:\n#{r.stdout}")
    report.join(", ")
  end
end
