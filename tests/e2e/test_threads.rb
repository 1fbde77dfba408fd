# SPDX-License-Identifier: GPL-2.0-only
# Ruby threads as labels: every sample carries the identity of the Ruby thread that ran
# (ruby_thread) and its Thread#name (ruby_thread_name), also where Ruby threads share native
# threads (M:N, Ruby 3.3+), compared with what Ruby says of its threads in the same process.
class E2E
  smoke :test_ruby_threads, :test_ruby_threads_mn

  def test_ruby_threads = check_ruby_threads({})

  # RUBY_MAX_CPU=1: every M:N Ruby thread runs on the one shared native thread
  def test_ruby_threads_mn
    version = @rt.version
    raise Skip, "M:N threads exist from Ruby 3.3 (this is #{version})" if Gem::Version.new(version) < Gem::Version.new("3.3")
    check_ruby_threads({ "RUBY_MN_THREADS" => "1", "RUBY_MAX_CPU" => "1" }, mn: true)
  end

  # A thread that names itself 0.5 s after its start: rubyprofd saw it unnamed first, and its
  # samples carry the name from then on, not from the next interval (a oneshot's run is one).
  # The label is the name when the daemon reads the sample (within the reader's 20 ms poll and
  # the 20 ms between a young unnamed thread's reads): a few samples on each side of the rename
  # may carry the other side's label.
  def test_ruby_thread_named_late
    facts = start("late_name.rb")
    pid = facts["pid"]
    path, = rubyprofd("--pid", pid.to_s, "--duration", "3", "--frequency", "99") { go(facts) }
    prof = PprofRaw.read(path)
    samples = prof.samples_of(pid)
    before = samples.select { |s| prof.frames(s).any? { |l| method?(l, "spin_unnamed") } }
    after = samples.select { |s| prof.frames(s).any? { |l| method?(l, "spin_named") } }
    nb, na = [before, after].map { |m| m.sum(&:count) }
    check(nb >= 10 && na >= 50, "spin_unnamed #{nb}, spin_named #{na} samples")
    tally = ->(m) { m.group_by { |s| s.labels["ruby_thread_name"] }.transform_values { |v| v.sum(&:count) } }
    named_early = before.select { |s| s.labels["ruby_thread_name"] == facts["name"] }.sum(&:count)
    unnamed_late = after.reject { |s| s.labels["ruby_thread_name"] == facts["name"] }.sum(&:count)
    check(named_early <= 4, "before the name: #{tally.(before)}")
    check(unnamed_late <= 4, "after the name: #{tally.(after)}")
    ids = (before + after).map { |s| s.labels["ruby_thread"] }.uniq
    check(ids.size == 1 && ids.first, "one Ruby thread: #{ids}")
    "#{nb} samples before the name (#{named_early} named), #{na} after it (#{unnamed_late} unnamed)"
  end

  private

  def check_ruby_threads(env, mn: false)
    r = profile_script("ruby_threads.rb", duration: 6, env: env)
    facts, prof, samples = r.facts, r.prof, r.samples
    seen = facts["threads"].map do |method, ruby|
      mine = samples.select { |s| prof.frames(s).any? { |l| method?(l, "spin_#{method}") } }
      n = mine.sum(&:count)
      check(n >= 5, "only #{n} samples in spin_#{method}")
      ids = mine.map { |s| s.labels["ruby_thread"] }.uniq
      names = mine.map { |s| s.labels["ruby_thread_name"] }.uniq
      tids = mine.map { |s| s.labels["tid"] }.uniq
      check(ids.size == 1 && ids.first, "spin_#{method} sampled under ruby_thread #{ids.inspect}")
      # nil: an unnamed thread has no ruby_thread_name label
      check(names == [ruby["name"]],
            "spin_#{method} sampled under ruby_thread_name #{names.inspect}, Ruby says #{ruby["name"].inspect}")
      if ruby["struct"]
        check(ids.first == ruby["struct"],
              "spin_#{method}: ruby_thread #{ids.first}, Ruby's rb_thread_t is at #{ruby["struct"]}")
      end
      [method, ids.first, tids, n]
    end
    ids = seen.map { |s| s[1] }
    check(ids.uniq.size == ids.size, "Ruby threads share a ruby_thread label: #{seen.inspect}")
    all_tids = seen.flat_map { |s| s[2] }
    shared = all_tids.size != all_tids.uniq.size
    check(shared, "M:N threads on one native thread, yet no tid is shared: #{seen.inspect}") if mn
    compared = facts["threads"].values.count { |t| t["struct"] }
    "#{seen.map { |m, id, tids, n| "#{m} #{id} (#{n} on tids #{tids.join(" ")})" }.join(", ")}; " \
      "#{compared}/4 compared with Ruby's rb_thread_t; Thread.main.name #{facts["main_name"].inspect}" +
      (shared ? "; tids shared" : "")
  end
end
