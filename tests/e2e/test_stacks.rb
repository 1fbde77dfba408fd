# SPDX-License-Identifier: GPL-2.0-only
# Stacks as Ruby shows them: the exact stack, threads.
class E2E
  smoke :test_exact_stack, :test_three_threads

  # (a) every frame equals Ruby's own caller_locations, C functions marked, in every sample, each
  # method named with its owner (Method#owner) on every version. At 499 Hz, so that the sample
  # count's allowance (samples_ok?) is a small share of it beside CPU hogs. Sabotaged builds,
  # run against this test: one that drops a Ruby sample in ten silently, caught (2,214 samples
  # for 2,442 +- 25 expected, the machine nearly idle; beside two CPU hogs, busy 0.48: 1,062 for
  # 1,188 +- 51, where the good build had 1,230 for 1,232); one that names a method without its owner
  # one frame lookup in ten, caught (974/2,436 samples exact).
  def test_exact_stack
    r = profile_script("exact_stack.rb", flags: ["--frequency", "499"])
    facts, prof, samples, total = r.facts, r.prof, r.samples, r.total
    want = facts["frames"]
    if qualified_ruby?
      wrong = want.reject { |w| w["qualified"] == w["label"] }
      check(wrong.empty?, "the script's owners disagree with Ruby's labels: #{wrong.map { |w| [w["label"], w["qualified"]] }}")
    end
    matching = samples.select do |s|
      frames = prof.frames(s)
      frames.size == want.size && frames.zip(want).all? { |f, w| same?(f, w) && f.name == w["qualified"] }
    end.sum(&:count)
    best = samples.max_by(&:count)
    # The script spins on one line that allocates nothing (no GC), in its only Ruby thread, after
    # it recorded Ruby's own stack: every sample holds that stack, none is excused.
    check(total.positive? && matching == total,
          "#{matching}/#{total} samples hold Ruby's stack; Ruby says:\n  " +
          want.map { |w| "#{w["qualified"]} #{w["path"]}:#{w["lineno"]}" }.join("\n  ") +
          "\nmost frequent stack:\n  " + prof.frames(best).map { |l| fmt(l, prof) }.join("\n  "))
    frames = prof.frames(best)
    facts["c_functions"].each do |name, is_c|
      idx = want.index { |w| w["label"] == name || w["label"].end_with?("##{name}") }
      check(idx, "#{name} is not in Ruby's backtrace")
      check(prof.cfunc?(frames[idx]) == is_c,
            "#{frames[idx].name}: marked #{prof.cfunc?(frames[idx]) ? "C" : "Ruby"}, but Ruby says it is #{is_c ? "C" : "Ruby"}")
    end
    "#{matching}/#{total} samples, #{want.size} frames"
  end

  # Fibers: inside an Enumerator driven by `next`, and inside a resumed Fiber, Ruby shows only the
  # fiber's own frames; the EC sampled is the running fiber's, so the profile shows the same.
  def test_fibers
    r = profile_script("fibers.rb", duration: 6)
    facts, prof, samples, total = r.facts, r.prof, r.samples, r.total
    results = %w[enum fiber].map do |kind|
      want = facts["stacks"].fetch(kind)
      leaf = want.first["label"]
      mine = samples.select { |s| (f = prof.frames(s).first) && ruby_label(f) == leaf }
      got = mine.sum(&:count)
      check(got >= 0.2 * total, "#{kind}: only #{got}/#{total} samples at #{leaf}")
      matching = mine.select do |s|
        frames = prof.frames(s)
        frames.size == want.size && frames.zip(want).all? { |f, w| same?(f, w) }
      end.sum(&:count)
      odd = mine.find { |s| f = prof.frames(s); !(f.size == want.size && f.zip(want).all? { |a, w| same?(a, w) }) }
      best = odd || mine.max_by(&:count)
      check(matching == got,
            "#{kind}: #{matching}/#{got} samples hold the fiber's stack; Ruby says:\n  #{show(want)}" \
            "\nfirst other stack:\n  " + prof.frames(best).map { |l| fmt(l, prof) }.join("\n  "))
      "#{kind} #{matching}/#{got} (#{want.size} frames)"
    end
    results.join(", ")
  end

  # (b) three spinning threads, each under its own tid and name, each with the samples its CPU
  # time gives (about a third each, as the GVL hands them turns; measured by the test from each
  # thread's own CPU clock in the same run, /proc/PID/task/TID/stat)
  def test_three_threads
    names = %w[alpha beta gamma]
    threads = nil
    r = profile_script("threads.rb", duration: 6,
                                     watch: ->(f) { threads = threads_by_name(f["pid"]).values_at(*names.map { |n| "rp-#{n}" }) })
    facts, prof, samples, total = r.facts, r.prof, r.samples, r.total
    check(threads.all?, "threads rp-alpha, rp-beta, rp-gamma not found: #{threads_by_name(facts["pid"]).keys}")
    t0 = prof.time.to_f
    cpu = threads.to_h { |t| [t, r.cpu.used(t, t0, t0 + Float(prof.duration))] }
    check(cpu.values.all?, "the threads' CPU time was not read through the profile's window")
    cpu_total = cpu.values.sum
    shares = names.zip(threads).map do |name, tid|
      mine = samples.select { |s| prof.frames(s).any? { |l| method?(l, "spin_#{name}") } }
      tids = mine.map { |s| s.labels["tid"] }.uniq
      names = mine.map { |s| s.labels["thread_name"] }.uniq
      check(tids.size == 1, "spin_#{name} sampled under tids #{tids.inspect}")
      check(names == ["rp-#{name}"], "spin_#{name} sampled under thread names #{names.inspect}")
      check(tids.first != facts["pid"].to_s, "spin_#{name} sampled under the main thread")
      check(tids.first == tid[1].to_s, "spin_#{name} sampled under tid #{tids.first}, Ruby's thread is #{tid[1]}")
      n = mine.sum(&:count)
      check(samples_ok?(n, cpu[tid] * 99, cpu_total / Float(prof.duration)),
            format("spin_%s has %d samples, for %.2f s on a CPU (%.0f expected)", name, n, cpu[tid], cpu[tid] * 99))
      [name, tids.first, (100.0 * n / total).round(1), (100.0 * cpu[tid] / cpu_total).round(1)]
    end
    check(shares.map { |s| s[1] }.uniq.size == 3, "threads share a tid: #{shares.inspect}")
    shares.map { |n, _, s, c| "#{n} #{s}% (CPU #{c}%)" }.join(", ")
  end
end
