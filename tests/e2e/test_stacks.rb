# SPDX-License-Identifier: GPL-2.0-only
# Stacks as Ruby shows them: the exact stack, threads.
class E2E
  # (a) every frame equals Ruby's own caller_locations, C functions marked, >= 90 % of samples
  def test_exact_stack
    r = profile_script("exact_stack.rb")
    facts, prof, samples, total = r.facts, r.prof, r.samples, r.total
    want = facts["frames"]
    matching = samples.select do |s|
      frames = prof.frames(s)
      frames.size == want.size && frames.zip(want).all? { |f, w| same?(f, w) }
    end.sum(&:count)
    best = samples.max_by(&:count)
    check(matching >= 0.9 * total,
          "#{matching}/#{total} samples hold Ruby's stack; Ruby says:\n  " +
          want.map { |w| "#{w["label"]} #{w["path"]}:#{w["lineno"]}" }.join("\n  ") +
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
      best = mine.max_by(&:count)
      check(matching >= 0.9 * got,
            "#{kind}: #{matching}/#{got} samples hold the fiber's stack; Ruby says:\n  #{show(want)}" \
            "\nmost frequent stack:\n  " + prof.frames(best).map { |l| fmt(l, prof) }.join("\n  "))
      "#{kind} #{matching}/#{got} (#{want.size} frames)"
    end
    results.join(", ")
  end

  # (b) three spinning threads: a third of the samples each, each under its own tid and name
  def test_three_threads
    r = profile_script("threads.rb", duration: 6)
    facts, prof, samples, total = r.facts, r.prof, r.samples, r.total
    shares = %w[alpha beta gamma].map do |name|
      mine = samples.select { |s| prof.frames(s).any? { |l| method?(l, "spin_#{name}") } }
      tids = mine.map { |s| s.labels["tid"] }.uniq
      names = mine.map { |s| s.labels["thread_name"] }.uniq
      check(tids.size == 1, "spin_#{name} sampled under tids #{tids.inspect}")
      check(names == ["rp-#{name}"], "spin_#{name} sampled under thread names #{names.inspect}")
      check(tids.first != facts["pid"].to_s, "spin_#{name} sampled under the main thread")
      share = 100.0 * mine.sum(&:count) / total
      check((share - 100.0 / 3).abs <= 10, "spin_#{name} has #{share.round(1)} % of the samples")
      [name, tids.first, share.round(1)]
    end
    check(shares.map { |s| s[1] }.uniq.size == 3, "threads share a tid: #{shares.inspect}")
    shares.map { |n, _, s| "#{n} #{s}%" }.join(", ")
  end
end
