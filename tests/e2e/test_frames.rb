# SPDX-License-Identifier: GPL-2.0-only
# Frames as Ruby shows them (issue 4): every label kind, GC, JIT, and stacks of any depth.
class E2E
  smoke :test_labels

  # Ruby's own frames that rubyprofd marks: "[JIT code]", "(garbage collection)", ...
  def marks(prof, frames) = frames.take_while { |l| prof.mappings[l.mapping] == "[rubyprofd]" }

  # Every label kind: each case's stack equals what caller_locations said in the same process, in
  # every sample of the case (it spins on one line that allocates nothing), each owner named as
  # the script knows it: none is excused. A build that names a method without its owner one
  # frame lookup in ten: caught (62/69 samples of the instance method's case named).
  def test_labels
    facts, prof, stderr = oneshot_facts("labels.rb")
    hot_line = facts["cases"].first[1][0]["lineno"]
    failures = []
    facts["cases"].each do |name, want, owner_labels|
      # samples of this case: the caller of spin is the case's frame
      mine = prof.samples.select do |s|
        f = prof.frames(s)
        f.size == want.size && f[0].line == hot_line && same?(f[1], want[1])
      end
      n = mine.sum(&:count)
      exact = mine.select { |s| prof.frames(s).zip(want).all? { |f, w| same?(f, w) } }.sum(&:count)
      # the owner, as the script knows it: rubyprofd prints it on every version
      named = mine.select do |s|
        f = prof.frames(s)
        owner_labels.all? { |i, label| f[i].name == label }
      end.sum(&:count)
      if n < 5 || exact < n || named < n
        best = mine.max_by(&:count)
        failures << "#{name}: owner labels #{owner_labels.inspect}: #{named}/#{n}" if named < n
        failures << "#{name}: #{exact}/#{n} samples exact; Ruby says:\n  #{show(want)}" +
                    (best ? "\n rubyprofd:\n  " + prof.frames(best).map { |l| fmt(l, prof) }.join("\n  ") : "")
      end
    end
    unless failures.empty?
      # for diagnosis: the stacks at the hot line that belong to no case
      known = facts["cases"].map { |_, want, _| want[1] }
      stray = prof.samples.select do |s|
        f = prof.frames(s)
        f[0]&.line == hot_line && f[1] && known.none? { |w| same?(f[1], w) }
      end.max_by(3, &:count)
      failures << "stacks at the hot line that match no case:\n  " +
                  stray.map { |s| "#{s.count}: " + prof.frames(s).map { |l| fmt(l, prof) }.join(" < ") }.join("\n  ")
    end
    check(failures.empty?, failures.join("\n") + "\n#{stderr}")
    "#{facts["cases"].size} label kinds exact"
  end

  # GC: "(garbage collection)" and its phase on top of the Ruby stack that triggered it. The
  # script calls GC.start in a loop on one line: every sample is one of these instants, named
  # and counted in the result, and none is left over:
  # - :gc_phase: in the collector, its phase named ("(marking)", "(sweeping)", "(compacting)"),
  #   above GC.start and exactly Ruby's stack;
  # - :gc_no_phase: in the collector (Ruby's during_gc flag set) while its mode says neither
  #   phase: gc_start's setup before marking begins, and gc_exit's work after the sweep;
  # - :start: GC.start's own frame on top of Ruby's stack, outside the collector (its argument
  #   handling, before gc_start and after it; GC.start is Ruby code of <internal:gc> from 3.0);
  # - spin_stacks' instants between two calls (the block, or Kernel#loop), not in GC.start;
  # - :failed_read: the daemon's mark of a failed read.
  # The share in GC is the workload's, not the profiler's (GC.start in a loop on a small heap:
  # most of its time is the collector's: on the host's 3.1 at a load average of 10-15 on two
  # CPUs, 34/34, 63/64 and 13/14 samples in GC in three runs (gc_phase 34; 63 and start 1;
  # 13), at a load of 7 275/276 (gc_phase 275, between 1); no gc_no_phase or failed read seen): a build that
  # never marks GC gives none (its samples fall in
  # :start), one that marks one sample in ten a tenth of that share, so 0.5 tells them apart.
  # What the floor does not name is exact: every sample is one of the instants above.
  def test_gc
    r = profile_script("gc_churn.rb", duration: 4)
    facts, prof, samples, total = r.facts, r.prof, r.samples, r.total
    want = facts["frames"]
    kinds = Hash.new(0)
    odd = nil
    samples.each do |s|
      f = prof.frames(s)
      m = marks(prof, f)
      gc = m.any? { |l| l.name == "(garbage collection)" }
      phased = m.any? { |l| %w[(marking) (sweeping) (compacting)].include?(l.name) }
      below = f.drop(m.size)
      # GC.start: a Ruby method of <internal:gc> from 3.0 (its Primitive makes no frame), a C
      # function before
      start = below.first && method?(below.first, "start")
      exact = start && spin_kind(below.drop(1), want) == :block
      k = if read_failed?(f)
            :failed_read
          elsif gc && exact
            phased ? :gc_phase : :gc_no_phase
          elsif m.empty? && exact
            :start
          elsif m.empty?
            spin_kind(f, want)
          end
      odd ||= f unless k
      kinds[k || :other] += s.count
    end
    ngc = kinds[:gc_phase] + kinds[:gc_no_phase]
    check(kinds[:other].zero?, "#{kinds[:other]}/#{total} samples are none of GC's instants on Ruby's stack " \
                               "(#{kinds.inspect}):\n  #{show(want)}\nfirst:\n  " +
                               (odd || []).map { |l| fmt(l, prof) }.join("\n  "))
    check(ngc >= 0.5 * total, "only #{ngc}/#{total} samples in GC (#{kinds.inspect})")
    "#{ngc}/#{total} samples in GC: #{kinds.sort.map { |k, n| "#{k} #{n}" }.join(", ")}"
  end

  # YJIT: the leaf is marked, its line is not made up, every frame below is exact.
  def test_yjit
    raise Skip, "YJIT came with Ruby 3.1, this is #{@rt.name}" if Gem::Version.new(@rt.version) < Gem::Version.new("3.1")
    r = profile_script("jit.rb", duration: 4, ruby_opts: ["--yjit"]) do |facts|
      raise Skip, "this Ruby (#{facts["version"]}) has no YJIT" unless facts["yjit"]
    end
    facts, prof, samples, total = r.facts, r.prof, r.samples, r.total
    want = facts["frames"] # step, batch, block in hot, loop, hot, <main>
    jit = samples.select { |s| marks(prof, prof.frames(s)).any? { |l| l.name == "[JIT code]" } }
    njit = jit.sum(&:count)
    check(njit >= 0.2 * total, "only #{njit}/#{total} samples marked as JIT code")
    bad = jit.reject do |s|
      f = prof.frames(s).drop(1) # the mark
      leaf = f.shift
      # the leaf is step or batch at line 0 (rb_profile_frames' answer) or its true line
      k = want.index { |w| w["label"] == ruby_label(leaf) }
      k && leaf.file == want[k]["path"] && [0, want[k]["lineno"]].include?(leaf.line) &&
        f.size == want.size - k - 1 && f.zip(want.drop(k + 1)).all? { |a, w| same?(a, w) }
    end
    nbad = bad.sum(&:count)
    check(nbad <= 0.1 * njit, "#{nbad}/#{njit} JIT samples differ from Ruby's stack:\n  #{show(want)}\nfirst:\n  " +
          (bad.first ? prof.frames(bad.first).map { |l| fmt(l, prof) }.join("\n  ") : ""))
    "#{njit}/#{total} samples in JIT code"
  end

  # The spinning script is in its block (Ruby's recorded stack, :block) or between two calls of
  # it (:between). Between calls, Kernel#loop is C code on 2.7 and 3.1 (the same stack without
  # the block frame) and Ruby code from 3.3 (<internal:kernel>: its frame is at its `while true`
  # line, the line above the `yield` that the block's caller_locations shows, measured 1-13 in
  # 140 samples on 3.3 and 3.4; or at the yield's own line, :between_yield). On 2.7 the last
  # instructions of a block carry line 0 in Ruby's own line table (rb_iseq_line_no: its
  # caller_locations there says 0 too; measured 1-4 in 100 samples, pos 48 of the block's 50):
  # :line0. Each is Ruby's own answer for that instant, named and counted in the result.
  def spin_stacks(want)
    loop_frame = want[1]
    alts = { block: want, between: want.drop(1) }
    if loop_frame && loop_frame["path"] == "<internal:kernel>"
      alts[:between] = [loop_frame.merge("lineno" => loop_frame["lineno"] - 1), *want.drop(2)]
      alts[:between_yield] = want.drop(1)
    end
    alts[:line0] = [want[0].merge("lineno" => 0), *want.drop(1)] if Gem::Version.new(@rt.version) < Gem::Version.new("3.0")
    alts
  end

  # Which of spin_stacks' instants frames is: its name, or nil. With leaf: only its first leaf
  # frames are compared (a truncated stack), and the instant's whole size is returned too.
  def spin_kind(frames, want, leaf: nil)
    spin_stacks(want).each do |k, w|
      part = leaf ? w.first(leaf) : w
      next unless leaf || frames.size == w.size
      return leaf ? [k, w.size] : k if frames.first(part.size).zip(part).all? { |a, b| a && same?(a, b) }
    end
    nil
  end

  def whole?(frames, want) = !spin_kind(frames, want).nil?

  def deep_stack(depth, max_frames, env = {})
    r = profile_script("deep.rb", depth.to_s, duration: 4, flags: ["--max-frames", max_frames.to_s],
                                              env: env, timeout: 60)
    check(r.facts["frames"].size >= depth, "Ruby reports #{r.facts["frames"].size} frames, expected #{depth}")
    r
  end

  # A sample the daemon itself marks as a failed read of the target's memory (a stack of
  # thousands of frames read while Ruby writes it; counted in the summary): the one cause that
  # excuses a sample of these spinning scripts from the exact stack. How many: in the result.
  def read_failed?(frames) = frames.any? { |l| l.name.start_with?("[partial stack: read failed]", "[stack read failed]") }

  # Stacks deeper than the default limit arrive whole when the limit is raised: every sample is
  # Ruby's stack at one of spin_stacks' instants, or marked as a failed read.
  def check_whole(r)
    want = r.facts["frames"]
    kinds = Hash.new(0)
    odd = nil
    r.samples.each do |s|
      f = r.prof.frames(s)
      k = read_failed?(f) ? :failed_read : spin_kind(f, want)
      odd ||= f unless k
      kinds[k || :other] += s.count
    end
    check(kinds[:other].zero? && kinds[:block].positive?,
          "#{kinds[:other]}/#{r.total} samples are not Ruby's stack of #{want.size} frames (#{kinds.inspect}); first:\n  " +
          (odd || []).first(4).map { |l| fmt(l, r.prof) }.join("\n  "))
    "#{r.total} samples with #{want.size} frames: #{kinds.sort.map { |k, n| "#{k} #{n}" }.join(", ")}"
  end

  def test_deep_5000 = check_whole(deep_stack(5000, 12_000))

  def test_deep_10000 = check_whole(deep_stack(10_000, 12_000, "RUBY_THREAD_VM_STACK_SIZE" => (32 << 20).to_s))

  # Past --max-frames: the leaf frames, then "[truncated: N frames]", counted in the summary.
  def test_truncated
    r = deep_stack(5000, 1000)
    want, prof, samples, total, stdout = r.facts["frames"], r.prof, r.samples, r.total, r.stdout
    kinds = Hash.new(0)
    odd = nil
    samples.each do |s|
      f = prof.frames(s)
      k, size = spin_kind(f, want, leaf: 1000)
      k = nil unless k && f.size == 1001 && f.last.name == "[truncated: #{size - 1000} frames]"
      k = :failed_read if !k && read_failed?(f)
      odd ||= f unless k
      kinds[k || :other] += s.count
    end
    good = total - kinds[:other] - kinds[:failed_read]
    check(kinds[:other].zero? && kinds[:block].positive?,
          "#{kinds[:other]}/#{total} samples do not keep 1000 leaf frames of Ruby's stack and a truncation frame " \
          "(#{kinds.inspect}); first:\n  " + (odd || []).first(4).map { |l| fmt(l, prof) }.join("\n  ") +
          "\n  ...\n  " + (odd || []).last(1).map { |l| fmt(l, prof) }.join)
    check(stdout =~ /truncated: (\d+)/ && $1.to_i >= good, "the summary does not count them:\n#{stdout}")
    "#{total} samples truncated to 1000 + 1: #{kinds.sort.map { |k, n| "#{k} #{n}" }.join(", ")}"
  end
end
