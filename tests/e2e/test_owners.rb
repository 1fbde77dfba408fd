# SPDX-License-Identifier: GPL-2.0-only
# Owners of shared method bodies (issue 15): one iseq run under several owners is named, in each
# sample, with the owner of that call, as Ruby itself names it.
class E2E
  def test_shared_iseq_owners
    facts, prof, stderr = oneshot_facts("owners.rb")
    failures = []
    check(facts["cases"].size == 4, "the script recorded #{facts["cases"].size} cases, not 4")
    facts["cases"].each do |name, want, label|
      # Ruby 3.4+ prints the owner itself: the script's expectation must agree with it
      if qualified_ruby? && want[0]["label"] != label
        failures << "#{name}: Ruby says #{want[0]["label"]}, the script expected #{label}"
      end
      # samples of this case: the shared body at its hot line, called from this case's line
      mine = prof.samples.select do |s|
        f = prof.frames(s)
        f.size == want.size && f[0].line == want[0]["lineno"] && same?(f[1], want[1])
      end
      n = mine.sum(&:count)
      exact = mine.select { |s| prof.frames(s).zip(want).all? { |f, w| same?(f, w) } }.sum(&:count)
      named = mine.select { |s| prof.frames(s)[0].name == label }.sum(&:count)
      next if n >= 5 && exact == n && named == n

      names = mine.group_by { |s| prof.frames(s)[0].name }.transform_values { |v| v.sum(&:count) }
      failures << "#{name}: #{n} samples, #{exact} exact, #{named} named #{label}: #{names.inspect}" \
                  "\n  Ruby says:\n  #{show(want)}"
    end
    check(failures.empty?, failures.join("\n") + "\n#{stderr}")
    facts["cases"].map { |name, _, label| label }.join(", ")
  end
end
