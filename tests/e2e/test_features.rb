# SPDX-License-Identifier: GPL-2.0-only
# Features that only a whole daemon shows, each against what the test itself set up: the /proc
# rescan's safety net, the container id from a process's cgroup, SIGHUP of labels, rules, log
# level and of a broken file.
class E2E
  # What they check is the daemon's own logic, the same whatever Ruby it reads.
  host_only :test_rescan_dlopen, :test_service_container, :test_service_reload
  group :service, :test_service_container, :test_service_reload

  # A Ruby that no event announces: dlhost (tests/fixtures/dlhost.c) is not Ruby at its exec,
  # and loads libruby with dlopen only when the test says so (DLHOST_WAIT), after the daemon
  # looked at it twice and found no Ruby (tracker.c: within ms of the exec). No fork or exec
  # comes after: only the /proc rescan (every 2 s in --oneshot, a process found not Ruby looked
  # at again past 10 s) can find it. Found by the rescan means found seconds after the dlopen,
  # never within the exec's looks; then its samples hold Ruby's stack. A build that never
  # rescans fails here (caught: not logged within 40 s).
  def test_rescan_dlopen
    host = fixture("dlhost")
    script = @rt.script("exact_stack.rb")
    out = File.join(@rt.workdir, "facts-rescan-#{rand(1 << 30)}")
    go = "#{out}.dlopen"
    pid = go_at = found_at = facts = nil
    # -vv: the line that says it was found is one of the lines about processes, 20 a minute;
    # past that (a churn of other tests' Rubies on the host) it is written at debug level
    prof, stderr, = while_profiling("-vv") do
      pid = Process.spawn({ "DLHOST_WAIT" => go }, host, script, out, pgroup: true)
      @pids << pid
      # the exec's looks (5 ms after it, then 10 ms) found no Ruby: the daemon says so at -vv
      wait_log(/pid #{pid}: not Ruby /)
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
    # every sample but those the daemon marks as a failed read (counted in its summary's failed
    # reads): of the stack (1 in 101 in one run, the read raced a write of the target's memory),
    # or of the frames' names ("[unknown Ruby frame]": 1 in 99 beside a churn of short Rubies)
    marked = ->(l) { l.name.start_with?("[stack read failed]", "[partial stack: read failed]", "[unknown Ruby frame]", "[unknown C function]") }
    failed = samples.select { |s| prof.frames(s).any?(&marked) }.sum(&:count)
    # and the child before its exec: a copy of this runner (a profiled Ruby), in Process.spawn,
    # whose fork is profiled from its first tick (seen once, 1 of 103, beside two CPU hogs)
    spawning = ->(f) { f.any? { |l| l.name == "Process.spawn" } && f.any? { |l| l.file.to_s.end_with?("/test_features.rb") } }
    before_exec = samples.select { |s| spawning.(prof.frames(s)) }.sum(&:count)
    check(before_exec <= 3, "#{before_exec} samples of pid #{pid} in this runner's Process.spawn, before its exec")
    odd = samples.find { |s| !same_stack?(prof, prof.frames(s), facts["frames"]) && prof.frames(s).none?(&marked) && !spawning.(prof.frames(s)) }
    check(matching + failed + before_exec == total,
          "#{matching}/#{total} samples hold Ruby's stack, #{failed} marked as a failed read, #{before_exec} before the exec:\n  #{show(facts["frames"])}\nfirst other:\n  " +
          (odd ? prof.frames(odd).map { |l| fmt(l, prof) }.join("\n  ") : ""))
    format("found by the rescan %.1f s after the dlopen; %d/%d samples exact, %d marked as a failed read, %d before the exec", after, matching, total, failed, before_exec)
  end

  # app.rb under another name: an app started after the service is named at once, by its script
  # (its title comes later).
  private def app_script(name)
    path = File.join(File.dirname(@rt.script("app.rb")), "#{name}.rb")
    FileUtils.cp(@rt.script("app.rb"), path)
    path
  end

  # The container id from a process's cgroup (made here: a docker cgroup of the pids hierarchy
  # on cgroup v1, of the unified one on v2), end to end: a Ruby without a title or script in it
  # is the app container-<12 hex>; an app in another keeps its script's name. Both
  # carry container_id, the whole id, on the series (sidecar) and on each sample.
  def test_service_container
    ids = Array.new(2) { Random.bytes(32).unpack1("H*") }
    base = %w[/sys/fs/cgroup/pids /sys/fs/cgroup/unified /sys/fs/cgroup].find { |d| File.exist?("#{d}/cgroup.procs") } or
      raise Skip, "no cgroup hierarchy to make a container's cgroup in"
    dirs = ids.map { |id| File.join(base, "docker", id) }
    dirs.each { |d| FileUtils.mkdir_p(d) }
    svc = service(["--interval", "1", "--frequency", "99"], conf: "rule = cmdline ~ tests/e2e/run\\.rb => ignore\n")
    pids = []
    begin
      check(svc.wait_note(/READY=1/, 15), "no READY=1:\n#{svc.log_text}")
      # each joins its cgroup before its exec: the daemon sees it there from the start
      spin = "x = 0; loop { x += 1 }"
      pids << Process.spawn("sh", "-c", "echo $$ > #{dirs[0]}/cgroup.procs && exec \"$@\"", "sh",
                            @rt.bin, "-e", spin, pgroup: true)
      facts_out = File.join(@rt.workdir, "facts-container-#{rand(1 << 30)}")
      pids << Process.spawn("sh", "-c", "echo $$ > #{dirs[1]}/cgroup.procs && exec \"$@\"", "sh",
                            *@rt.argv(app_script("container_shop"), facts_out, "-", "shop_work"), pgroup: true)
      @pids.concat(pids)
      short = "container-#{ids[0][0, 12]}"
      got = svc_wait(svc, "profiles of #{short} and container_shop", 60) do
        b = by_service(svc)
        b[short] && b["container_shop"] ? b : nil
      end
      [[short, ids[0], pids[0]], ["container_shop", ids[1], pids[1]]].each do |name, id, pid|
        meta, path = got[name].last
        check(meta["labels"]["container_id"] == id, "#{name}: series labels #{meta["labels"].inspect}, container #{id}")
        prof = PprofRaw.read(path)
        mine = prof.samples_of(pid)
        check(mine.any?, "#{name}: no samples of pid #{pid}")
        bad = mine.reject { |s| s.labels["container_id"] == id }
        check(bad.empty?, "#{name}: #{bad.size} samples without container_id #{id}: #{bad.first&.labels.inspect}")
      end
      st, = svc.stop("TERM")
      check(st.success?, "exit #{st.inspect}\n#{svc.log_text}")
      "#{short} and container_shop, container_id on their series and samples"
    ensure
      svc.kill
      pids.each { |p| Process.kill("KILL", -p) rescue nil; Process.waitpid(p) rescue nil }
      @pids -= pids
      dirs.each { |d| Dir.rmdir(d) rescue nil }
    end
  end

  # SIGHUP: a new file's labels, rules and log level take effect, a broken one is refused and the
  # configuration in force stays. Before: log_level = warn (no "pid N: Ruby" line), label
  # stage=one. After: info (the reload's own line, and the new app's), stage=two, a rule that
  # labels the new app. Then a file with a broken rule: an error, the service goes on as it was.
  def test_service_reload
    base = "frequency = 99\nrule = cmdline ~ tests/e2e/run\\.rb => ignore\n"
    svc = service(["--interval", "1"], conf: base + "log_level = warn\nlabel = stage=one\n")
    begin
      check(svc.wait_note(/READY=1/, 15), "no READY=1:\n#{svc.log_text}")
      shop = start(File.basename(app_script("reload_shop")), "-", "shop_work")
      one = svc_wait(svc, "a profile of reload_shop", 60) { by_service(svc)["reload_shop"] }
      check(one.all? { |m, _| m["labels"]["stage"] == "one" }, "before SIGHUP: #{one.map { |m, _| m["labels"] }}")
      check(svc.log_text !~ /pid #{shop["pid"]}: Ruby/, "log_level = warn, yet an info line:\n#{svc.log_text}")

      File.write(svc.conf, base + "log_level = info\nlabel = stage=two\nrule = cmdline ~ jobs_work => team=payments\n")
      n = svc.read_notes.size
      Process.kill("HUP", svc.pid)
      svc_wait(svc, "READY=1 after SIGHUP", 15) { svc.read_notes[n..].any? { |x| x =~ /READY=1/ } }
      check(svc.log_text =~ /configuration reloaded: 99 Hz, interval 1 s, 1 label, 2 rules/,
            "no reload line at log_level = info:\n#{svc.log_text}")
      reloaded = Time.now.to_f * 1e9
      # (the reload's own line shows log_level = info in force; the new app's "pid N: Ruby" line
      # is one of the lines about processes, 20 a minute, and other tests' Rubies on the host
      # can use them up: its profiles below show it found)
      start(File.basename(app_script("reload_jobs")), "-", "jobs_work")
      after = lambda do |name|
        (by_service(svc)[name] || []).select { |m, _| Integer(m["from_ns"]) > reloaded }
      end
      svc_wait(svc, "profiles of both apps after SIGHUP", 60) { after.("reload_shop").any? && after.("reload_jobs").any? }
      [["reload_shop", nil], ["reload_jobs", "payments"]].each do |name, team|
        after.(name).each do |m, _|
          check(m["labels"]["stage"] == "two" && m["labels"]["team"] == team, "#{name} after SIGHUP: #{m["labels"]}")
        end
      end

      File.write(svc.conf, base + "label = stage=three\nrule = cmdline ~ sidekiq => name sidekiq\n")
      n = svc.read_notes.size
      Process.kill("HUP", svc.pid)
      svc_wait(svc, "READY=1 after a broken file", 15) { svc.read_notes[n..].any? { |x| x =~ /READY=1/ } }
      check(svc.log_text =~ /rubyprofd\.conf:\d+: rule:.*\n.*reload: the configuration stays as it was/,
            "the broken rule is not refused with its line:\n#{svc.log_text}")
      refused = Time.now.to_f * 1e9
      later = svc_wait(svc, "a profile after the refused reload", 60) do
        (by_service(svc)["reload_shop"] || []).select { |m, _| Integer(m["from_ns"]) > refused }.then { |a| a.empty? ? nil : a }
      end
      check(later.all? { |m, _| m["labels"]["stage"] == "two" }, "after the refused file: #{later.map { |m, _| m["labels"] }}")
      st, = svc.stop("TERM")
      check(st.success?, "exit #{st.inspect}\n#{svc.log_text}")
      "labels one -> two, a rule's label on a new app, warn -> info; a broken file refused, stage=two kept"
    ensure
      svc.kill
    end
  end
end
