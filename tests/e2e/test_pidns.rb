# SPDX-License-Identifier: GPL-2.0-only
# rubyprofd itself in a pid namespace (a container, a booted root: issue 22): it profiles the
# Rubies of its namespace by the pids they have there, and never a process outside it.
require "json"
require "open3"

class E2E
  # The daemon's namespace, not the Ruby's version, is under test: the host's Ruby only.
  host_only :test_daemon_in_pid_namespace, :test_daemon_in_pid_namespace_wall, :test_daemon_refuses_a_foreign_proc,
            :test_service_in_pid_namespace, :test_daemon_in_pid_namespace_wall_iterator
  full_only :test_daemon_in_pid_namespace_wall_iterator

  # A command run by `unshare --pid --fork --mount-proc`: pid 1 of a new namespace, its own /proc.
  private def in_new_pid_namespace(*argv)
    unshare = which("unshare") or raise Skip, "unshare (util-linux) is missing"
    [unshare, "--pid", "--fork", "--mount-proc", *argv]
  end

  # The host pids of pid's descendants (its threads' children, recursively).
  private def descendants(pid)
    kids = Dir["/proc/#{pid}/task/*/children"].flat_map { |f| (File.read(f) rescue "").split.map(&:to_i) }
    kids + kids.flat_map { |k| descendants(k) }
  end

  # The host pid of the process below `top` whose command line (its arguments) the block
  # accepts (nil: none yet).
  private def host_pid_of(top)
    descendants(top).find { |d| yield((File.read("/proc/#{d}/cmdline") rescue "").split("\0")) }
  end

  # Runs argv (rubyprofd as pid 1 of a new namespace, `unshare` its parent) until the Ruby that
  # writes facts_path has run 2 s on a CPU after it wrote them (its hot line) and rubyprofd found
  # its execution context (it is sampled from then on), then stops rubyprofd with SIGINT. A busy
  # machine slows the Ruby's and rubyprofd's start, not what the profile holds.
  # Returns [stdout, stderr, status, the CPU seconds `watch` used meanwhile, sampled].
  private def run_until_hot(argv, facts_path, watch, env: {})
    log = facts_path + ".log"
    out = facts_path + ".out"
    unshare = Process.spawn(env, *argv, out: out, err: log, pgroup: true)
    @pids << unshare
    deadline = Time.now + 60
    until File.exist?(facts_path) && File.read(log).include?("execution context:") &&
          (ruby = host_pid_of(unshare) { |args| args.first == @rt.bin && args.include?(facts_path) })
      fail!("the namespace's Ruby not at its hot line in 60 s:\n#{File.read(log)}") if Time.now > deadline
      fail!("rubyprofd in the namespace ended:\n#{File.read(log)}") if Process.waitpid(unshare, Process::WNOHANG)
      sleep 0.05
    end
    cpu0 = cpu_seconds(watch)
    wait_cpu(ruby, 2)
    watched = cpu_seconds(watch) - cpu0
    daemon = Integer(File.read("/proc/#{unshare}/task/#{unshare}/children").split.first)
    Process.kill("INT", daemon)
    _, st = Process.waitpid2(unshare)
    @pids.delete(unshare)
    [File.read(out), File.read(log), st, watched]
  end

  # One run of rubyprofd --oneshot inside a new namespace, beside a Ruby that spins outside it:
  # `how` runs the namespace's Ruby (exact_stack.rb) as rubyprofd's command (:command), beside a
  # system-wide rubyprofd (:beside), or beside it in a namespace of its own nested in rubyprofd's
  # (:nested). Returns what the check found, for the test's line.
  private def namespaced_run(name, how, flags, env: {})
    # nice 19: rubyprofd's start (the wall object's verification takes seconds of CPU) is not
    # slowed by it, and what it runs is sampled all the same
    outside = start("app.rb", "-", "jobs_work")
    Process.setpriority(Process::PRIO_PROCESS, outside["pid"], 19)
    script = @rt.script("exact_stack.rb")
    facts_path = File.join(@rt.workdir, "facts-ns-#{name}-#{rand(1 << 30)}")
    out = File.join(@rt.workdir, "profile-ns-#{name}-#{rand(1 << 30)}.pb.gz")
    daemon = [RUBYPROFD, "--oneshot", "-v", "-o", out, "--duration", "300", *flags]
    ruby = [@rt.bin, script, facts_path]
    ruby = in_new_pid_namespace(*ruby) if how == :nested
    argv = case how
           when :command then in_new_pid_namespace(*daemon, "--", *ruby)
           # the Ruby first, then rubyprofd as pid 1 (it finds the Ruby in its scan of /proc)
           else in_new_pid_namespace(@rt.bin, "-e", "n = Integer(ARGV.shift); spawn(*ARGV.shift(n)); exec(*ARGV)",
                                     ruby.size.to_s, *ruby, *daemon)
           end
    stdout, stderr, st, outside_cpu = run_until_hot(argv, facts_path, outside["pid"], env: env)
    check(st.success?, "#{name}: rubyprofd in a pid namespace exited #{st.exitstatus}:\n#{stderr}#{stdout}")
    check(stderr =~ /in pid namespace \d+ \(level 1\)/, "#{name}: no line about its pid namespace:\n#{stderr}")
    facts = Marshal.load(File.binread(facts_path))
    prof = PprofRaw.read(out)

    # The pid Ruby has in the namespace, which the host never gives it (the host's pid 2 is
    # kthreadd): a profile of host pids would hold none of its samples. Nested, Ruby is pid 1
    # of its own namespace, which rubyprofd's sees as pid 3 (after unshare) and labels ns_pid.
    pid = how == :nested ? 3 : facts["pid"]
    check(pid <= 5, "#{name}: the namespace's Ruby says it is pid #{facts["pid"]}")
    if how == :nested
      ns = prof.samples.map { |s| s.labels["ns_pid"] }.uniq
      check(ns == [facts["pid"].to_s], "#{name}: ns_pid labels #{ns.inspect}, Ruby says its pid is #{facts["pid"]}")
    end
    # profiled from its start in the command form: its stacks once at the hot line
    hot = facts["frames"][0]
    at_hot = prof.samples_of(pid).select do |s|
      (leaf = prof.frames(s).first) && leaf.file == hot["path"] && leaf.line == hot["lineno"]
    end
    total = at_hot.sum(&:count)
    check(total >= 50, "#{name}: only #{total} samples of pid #{pid} at its hot line:\n#{stderr}")
    matching = at_hot.select { |s| same_stack?(prof, prof.frames(s), facts["frames"]) }.sum(&:count)
    # every one: the target spins on one allocation-free line after it recorded its stack
    best = at_hot.find { |s| !same_stack?(prof, prof.frames(s), facts["frames"]) } || at_hot.max_by(&:count)
    check(matching == total,
          "#{name}: #{matching}/#{total} samples at the hot line hold the expected stack:\n  #{show(facts["frames"])}" \
          "\nfirst other stack:\n  " + prof.frames(best).map { |l| fmt(l, prof) }.join("\n  "))
    pids = prof.samples.map { |s| s.labels["pid"] }.uniq
    check(pids == [pid.to_s], "#{name}: samples of pids #{pids.inspect}, the namespace's Ruby is #{pid}")
    foreign = prof.samples.select { |s| prof.frames(s).any? { |l| method?(l, "jobs_work") || l.file.end_with?("app.rb") } }
    check(foreign.empty?, "#{name}: #{foreign.sum(&:count)} samples of the Ruby outside the namespace")

    # What the Ruby outside did on a CPU meanwhile was sampled and counted, not looked at.
    seen = stdout[/^outside the pid namespace: (\d+) samples/, 1].to_i
    hz = (i = flags.index("--frequency")) ? Integer(flags[i + 1]) : 99
    check(seen >= 0.5 * outside_cpu * hz,
          "#{name}: #{seen} samples outside the namespace, the Ruby outside ran #{outside_cpu.round(2)} s on a CPU:\n#{stdout}")
    stop_all
    "#{name}: pid #{pid} #{matching}/#{total} exact at the hot line, #{seen} outside"
  end

  # The command form (the issue's own `rubyprofd --oneshot -- ruby ...`), and a Ruby in a
  # namespace nested in rubyprofd's.
  def test_daemon_in_pid_namespace
    [namespaced_run("cpu", :command, []), namespaced_run("nested", :nested, [])].join("; ")
  end

  # System-wide in wall mode: the syscall program (bpf_task_from_vpid).
  def test_daemon_in_pid_namespace_wall = namespaced_run("wall", :beside, ["--clock", "wall"])

  # The same the 6.1 way (an iterator filtered to a pid of the namespace): the full suite's, as
  # a variant of the one above in the iterator's mode (make test runs the iterator in
  # wall_states_iterator).
  def test_daemon_in_pid_namespace_wall_iterator
    namespaced_run("wall-iterator", :beside, ["--clock", "wall"], env: { "RP_WALL_ITER" => "1" })
  end

  # A new pid namespace with the host's /proc: its pids are not rubyprofd's. Refused, saying so.
  def test_daemon_refuses_a_foreign_proc
    unshare = which("unshare") or raise Skip, "unshare (util-linux) is missing"
    out = File.join(@rt.workdir, "profile-foreign-proc.pb.gz")
    stdout, stderr, st = Open3.capture3(unshare, "--pid", "--fork", RUBYPROFD, "--oneshot", "-o", out, "--duration", "1")
    check(!st.success?, "exit 0 with the host's /proc in a new pid namespace:\n#{stderr}#{stdout}")
    check(stderr =~ /\/proc is mounted for a pid namespace 1 level\(s\) above rubyprofd's .*--mount-proc/,
          "the refusal does not say why:\n#{stderr}")
    check(!File.exist?(out), "a profile was written anyway")
    "exit #{st.exitstatus}: #{stderr.lines.first.strip[0, 100]}"
  end

  # The service in a new namespace beside an app of its own, an app of the host running too: the
  # spool holds the namespace's app alone, under its name, its samples by its pid there.
  def test_service_in_pid_namespace
    outside = start("app.rb", "outside-app", "jobs_work")
    Process.setpriority(Process::PRIO_PROCESS, outside["pid"], 19)
    dir = Dir.mktmpdir("rubyprofd-service-ns-", @rt.workdir)
    spool = File.join(dir, "spool")
    conf = File.join(dir, "rubyprofd.conf")
    File.write(conf, "")
    log = File.join(dir, "rubyprofd.log")
    facts_path = File.join(dir, "facts-inside")
    app = [@rt.bin, @rt.script("app.rb"), facts_path, "inside-app", "shop_work"]
    daemon = [RUBYPROFD, "--config", conf, "--spool-dir", spool, "--interval", "1", "-v"]
    argv = in_new_pid_namespace(@rt.bin, "-e", "n = Integer(ARGV.shift); spawn(*ARGV.shift(n)); exec(*ARGV)",
                                app.size.to_s, *app, *daemon)
    unshare = Process.spawn(*argv, out: [log, "a"], err: [log, "a"], pgroup: true)
    @pids << unshare
    entries = []
    deadline = Time.now + 60
    until entries.any? { |meta, _| meta["service"] == "inside-app" }
      fail!("no profile of the namespace's app in 60 s:\n#{File.read(log)}") if Time.now > deadline
      fail!("the service ended:\n#{File.read(log)}") if Process.waitpid(unshare, Process::WNOHANG)
      sleep 0.2
      entries = Dir[File.join(spool, "*.json")].sort.filter_map do |j|
        prof = j.sub(/\.json\z/, ".pb.gz")
        [JSON.parse(File.read(j)), prof] if File.exist?(prof)
      end
    end
    # then 1.5 s of the app's CPU (about 28 samples at 19 Hz) in the profiles to come
    app_pid = host_pid_of(unshare) { |args| args.first == "inside-app" } or fail!("no host pid of the namespace's app")
    wait_cpu(app_pid, 1.5)
    # pid 1 of the namespace is rubyprofd: SIGTERM writes the interval in progress and ends it
    host_pid = Integer(File.read("/proc/#{unshare}/task/#{unshare}/children").split.first)
    Process.kill("TERM", host_pid)
    _, st = Process.waitpid2(unshare)
    @pids.delete(unshare)
    check(st.success?, "the service in a pid namespace exited #{st.exitstatus}:\n#{File.read(log)}")
    check(File.read(log) =~ /in pid namespace \d+ \(level 1\)/, "no line about its pid namespace:\n#{File.read(log)}")
    entries = Dir[File.join(spool, "*.json")].sort.map { |j| [JSON.parse(File.read(j)), j.sub(/\.json\z/, ".pb.gz")] }
    names = entries.map { |meta, _| meta["service"] }.uniq
    check(names == ["inside-app"], "services in the spool: #{names.inspect}")
    inside = Marshal.load(File.binread(facts_path))["pid"]
    total = work = 0
    entries.each do |_, path|
      prof = PprofRaw.read(path)
      pids = prof.samples.map { |s| s.labels["pid"] }.uniq
      check(pids == [inside.to_s], "#{File.basename(path)}: samples of pids #{pids.inspect}, the app is #{inside}")
      check(prof.samples.none? { |s| prof.frames(s).any? { |l| method?(l, "jobs_work") } },
            "#{File.basename(path)}: the host's app is in it")
      total += prof.samples.sum(&:count)
      work += prof.samples.select { |s| prof.frames(s).any? { |l| method?(l, "shop_work") } }.sum(&:count)
    end
    check(work >= 10 && work >= 0.8 * total, "#{work}/#{total} samples in shop_work")
    "#{entries.size} profiles of inside-app (pid #{inside}), #{work}/#{total} samples in shop_work"
  ensure
    FileUtils.rm_rf(dir) if dir
  end
end
