# SPDX-License-Identifier: GPL-2.0-only
# Features that only a whole daemon shows, each against what the test itself set up: the /proc
# rescan's safety net.
class E2E
  # What they check is the daemon's own logic, the same whatever Ruby it reads.
  host_only :test_rescan_dlopen

  # A Ruby that no event announces: dlhost (tests/fixtures/dlhost.c) is not Ruby at its exec,
  # and loads libruby with dlopen only when the test says so (DLHOST_WAIT), after the daemon
  # looked at it twice and found no Ruby (tracker.c: within ms of the exec). No fork or exec
  # comes after: only the /proc rescan (every 2 s in --oneshot, a process found not Ruby looked
  # at again past 10 s) can find it. Found by the rescan means found seconds after the dlopen,
  # never within the exec's looks; then its samples hold Ruby's stack. A build that never
  # rescans fails here (caught: "not found within 40 s").
  def test_rescan_dlopen
    host = fixture("dlhost")
    script = @rt.script("exact_stack.rb")
    out = File.join(@rt.workdir, "facts-rescan-#{rand(1 << 30)}")
    go = "#{out}.dlopen"
    pid = go_at = found_at = facts = nil
    prof, stderr, = while_profiling("-v") do
      pid = Process.spawn({ "DLHOST_WAIT" => go }, host, script, out, pgroup: true)
      @pids << pid
      # the exec's looks (5 ms after it, then 10 ms) are long done when the process has slept a
      # second; a daemon that late would find it at once after the dlopen: told apart below
      sleep 1
      check(File.read("/proc/#{pid}/maps") !~ /libruby/, "libruby is mapped before the dlopen")
      FileUtils.touch(go)
      go_at = Time.now
      deadline = Time.now + 30
      sleep 0.05 until File.exist?(out) || Time.now > deadline
      check(File.exist?(out), "dlhost did not reach the hot line within 30 s")
      facts = Marshal.load(File.binread(out))
      wait_log(/pid #{pid}: Ruby /, timeout: 40)
      found_at = Time.now
      wait_cpu(pid, 1)
    end
    after = found_at - go_at
    check(after >= 1.5, "pid #{pid} found %.1f s after its dlopen: by the exec's looks, not by the rescan" % after)
    samples = prof.samples_of(pid)
    total = samples.sum(&:count)
    check(total >= 20, "only #{total} samples of pid #{pid} in the CPU second after it was found\n#{stderr}")
    matching = samples.select { |s| same_stack?(prof, prof.frames(s), facts["frames"]) }.sum(&:count)
    check(matching == total, "#{matching}/#{total} samples hold Ruby's stack:\n  #{show(facts["frames"])}")
    format("found by the rescan %.1f s after the dlopen; %d/%d samples exact", after, matching, total)
  end
end
