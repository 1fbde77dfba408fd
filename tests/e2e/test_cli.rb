# SPDX-License-Identifier: GPL-2.0-only
# The command line: commands, processes that come and go, errors a user meets.
class E2E
  # The host's Ruby only: starting a command and ending with it, the summary's lines, and keeping
  # the names of a process that exited are the daemon's own logic, the same whatever Ruby it
  # reads (each version's frames are compared with Ruby's in exact_stack, labels and the rest).
  host_only :test_command_and_exit, :test_exits_mid_profile, :test_check_config

  # A command started by rubyprofd, and a process that exits mid-profile: no error, names kept.
  # short_lived.rb spins SECONDS of its own CPU in short_lived_work, so that method has SECONDS *
  # hz samples (samples_ok?; its share of a CPU is at least SECONDS over the run's wall time). A
  # build that drops a sample in ten: caught (898 for 998 +- 41 nearly idle; 897 for 998 +- 53 beside two CPU hogs).
  def test_command_and_exit
    script = @rt.script("short_lived.rb")
    t0 = Time.now
    path, stdout, = rubyprofd("--duration", "20", "--frequency", "499", "--", *@rt.argv(script, "2"))
    wall = Time.now - t0
    prof = PprofRaw.read(path)
    hits = prof.samples.select { |s| prof.frames(s).any? { |l| method?(l, "short_lived_work") && l.file == @rt.inside(script) } }
    n = hits.sum(&:count)
    busy = [2 / wall, 1].min
    check(samples_ok?(n, 2 * 499, busy, 499),
          format("%d samples in short_lived_work, which ran 2 s of CPU in a %.1f s run at 499 Hz: %d +- %.0f expected",
                 n, wall, 2 * 499, sample_spread(2 * 499, busy, 499)))
    check(stdout =~ /short_lived_work/, "summary does not list short_lived_work:\n#{stdout}")
    check(stdout =~ /^profile: /, "summary does not say where the profile is:\n#{stdout}")
    # every cause of a lost sample is shown, and they add up to the total
    m = stdout.match(/^dropped: (\d+) \(ring buffer (\d+), incomplete (\d+), table full (\d+), no memory (\d+), refused (\d+), unknown process (\d+)\)/)
    check(m, "the summary does not list every cause of dropped samples:\n#{stdout}")
    check(m[1].to_i == m[2..].sum(&:to_i), "dropped samples do not add up: #{m[0]}")
    "#{n} samples, the run ended with the command"
  end

  # --check-config, as ExecReload runs it before the reload: a valid file printed as it takes
  # effect (and that text a valid file again), a broken one refused with its line, exit 2.
  def test_check_config
    dir = Dir.mktmpdir("rubyprofd-check-")
    File.chmod(0o755, dir)
    good = File.join(dir, "good.conf")
    File.write(good, "frequency = 49\nrule = cmdline ~ sidekiq => service=sidekiq\nspool_dir = #{dir}/spool\n" \
                     "label = team=live\nlabel = tier=web\n")
    out, err, st = Open3.capture3(RUBYPROFD, "--check-config", "--config", good, "--interval", "30",
                                  "--label", "tier=api")
    check(st.exitstatus == 0, "a valid file: exit #{st.exitstatus}\n#{err}")
    # every value with its origin, the repeatable keys' too (a label from the file, one a flag replaced)
    check(out.include?("# #{good}:1\nfrequency = 49\n") && out.include?("# --interval\ninterval = 30\n") &&
          out.include?("# #{good}:2\nrule = cmdline ~ sidekiq => service=sidekiq\n") &&
          out.include?("# #{good}:4\nlabel = team=live\n# --label\nlabel = tier=api\n"),
          "the configuration in effect:\n#{out}")
    check(err.include?("the configuration is valid"), err)
    again = File.join(dir, "again.conf")
    File.write(again, out)
    out2, err2, st2 = Open3.capture3(RUBYPROFD, "--check-config", "--config", again)
    strip = ->(t) { t.lines.reject { |l| l.start_with?("#") }.join }
    check(st2.exitstatus == 0 && strip[out2] == strip[out], "its own output read back: exit #{st2.exitstatus}\n#{err2}")
    _, qerr, qst = Open3.capture3(RUBYPROFD, "--check-config", "--quiet", "--config", good)
    check(qst.exitstatus == 0 && qerr.empty?, "--quiet: exit #{qst.exitstatus}, said #{qerr.inspect}")
    bad = File.join(dir, "bad.conf")
    File.write(bad, "frequency = 49\nrule = cmdline ~ sidekiq => name sidekiq\n")
    out, err, st = Open3.capture3(RUBYPROFD, "--check-config", "--quiet", "--config", bad)
    check(st.exitstatus == 2 && out.empty? && err.include?("#{bad}:2: rule:"), "a broken rule: exit #{st.exitstatus}\n#{err}")
    File.chmod(0o666, good)
    _, err, st = Open3.capture3(RUBYPROFD, "--check-config", "--config", good)
    check(st.exitstatus == 2 && err.include?("refused"), "a file anyone can write: exit #{st.exitstatus}\n#{err}")
    "valid: printed, each value with its origin, read back; a broken rule and a writable file: exit 2"
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  # Runs rubyprofd system-wide (no --pid, with flags); once it samples (READY=1), yields, and ends
  # it (SIGINT) when the block returns: the run lasts what the test needs, however slow the
  # machine. Returns [profile, stderr, what the block returned].
  def while_profiling(*flags)
    value = nil
    result = rubyprofd("--duration", "300", *flags) do |daemon|
      value = yield
    ensure
      Process.kill("INT", daemon) rescue nil
    end
    [PprofRaw.read(result[0]), result[2], value]
  end

  # A Ruby started after rubyprofd is already running (system-wide mode, no --pid): sampled from
  # its first moment at the hot line, so that line has the samples of all the CPU time the
  # process used from there (its own clock at the line, exact_stack.rb's "cpu") to the profile's
  # end (this test's trace of it), at 499 Hz: samples_ok?. A build that drops a sample in ten:
  # caught (963 for 1,011 +- 28 nearly idle; 912 for 993 +- 48 beside two CPU hogs).
  def test_started_later
    trace = tracer = nil
    traced = false
    prof, stderr, facts = while_profiling("--frequency", "499") do
      f = start("exact_stack.rb")
      trace = CpuTrace.new(self, [f["pid"]])
      tracer = trace.run_until { traced }
      wait_cpu(f["pid"], 2)
      f
    end
    traced = true
    tracer.join
    samples = prof.samples_of(facts["pid"])
    n = samples.sum(&:count)
    hot = samples.select { |s| (f = prof.frames(s).first) && f.line == facts["frames"][0]["lineno"] }.sum(&:count)
    t_end = prof.time.to_f + Float(prof.duration)
    cpu = (c = trace.at(facts["pid"], t_end)) ? c - facts["cpu"] : fail!("the trace does not cover the profile's end")
    busy = [cpu / (t_end - facts["at"]), 1].min
    check(samples_ok?(hot, cpu * 499, busy, 499),
          format("%d samples at the hot line of pid %d, started after rubyprofd, which ran %.2f s of CPU there " \
                 "in the profile: %.0f +- %.0f expected\n%s", hot, facts["pid"], cpu, cpu * 499,
                 sample_spread(cpu * 499, busy, 499), stderr))
    format("%d samples, %d at the hot line for %.0f expected", n, hot, cpu * 499)
  end

  # A process that exits while a system-wide run goes on: its samples and names stay, all of
  # them: short_lived_work has its 1.5 s of CPU's samples at 499 Hz (samples_ok?). A build that
  # drops a sample in ten: caught (680 for 748 +- 27 nearly idle; 693 for 748 +- 43 beside two CPU hogs).
  def test_exits_mid_profile
    script = @rt.script("short_lived.rb")
    wall = nil
    prof, stderr, pid = while_profiling("--frequency", "499") do
      t0 = Time.now
      pid = Process.spawn(*@rt.argv(script, "1.5"))
      Process.wait(pid)
      wall = Time.now - t0
      check($?.success?, "the script failed")
      pid
    end
    samples = prof.samples_of(pid)
    n = samples.sum(&:count)
    named = samples.select { |s| prof.frames(s).any? { |l| method?(l, "short_lived_work") } }.sum(&:count)
    busy = [1.5 / wall, 1].min
    check(samples_ok?(named, 1.5 * 499, busy, 499),
          format("%d samples name short_lived_work of pid %d after it exited (%d in all), for 1.5 s of CPU in " \
                 "%.1f s at 499 Hz: %.0f +- %.0f expected\n%s", named, pid, n, wall, 1.5 * 499,
                 sample_spread(1.5 * 499, busy, 499), stderr))
    check(stderr !~ /error/, "errors:\n#{stderr}")
    "#{named}/#{n} samples named after exit"
  end

  host_only :test_no_ruby, :test_not_root

  # No Ruby: a plain message and a non-zero exit.
  def test_no_ruby
    pid = Process.spawn("sleep", "30")
    @pids << pid
    _, _, stderr, st = rubyprofd("--pid", pid.to_s, "--duration", "1", expect_success: false)
    check(!st.success?, "exit status 0 without a Ruby process")
    check(stderr =~ /no Ruby process found/, "stderr does not say it: #{stderr}")
    check(stderr =~ /pid #{pid} is not a Ruby process/, "stderr does not name the pid: #{stderr}")
    "exit #{st.exitstatus}"
  end

  # Without privileges: one line naming the missing capabilities.
  def test_not_root
    setpriv = ENV["PATH"].split(":").map { |d| File.join(d, "setpriv") }.find { |f| File.executable?(f) }
    raise Skip, "setpriv (util-linux) is missing" unless setpriv
    stdout, stderr, st = Open3.capture3(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                                        "--inh-caps=-all", RUBYPROFD, "--oneshot", "-d", "1")
    check(!st.success?, "exit status 0 without privileges")
    lines = stderr.lines
    check(lines.size == 1, "expected one line, got:\n#{stderr}")
    check(lines[0] =~ /missing capabilities: CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH/,
          "unexpected message: #{stderr}")
    lines[0].strip
  end
end

class E2E
  host_only :test_command_signals

  # The command gets the default SIGPIPE, not the ignored one rubyprofd runs with: a pipeline's
  # writer is killed by the signal when its reader is gone (status 128 + 13).
  def test_command_signals
    ign = File.join(@rt.workdir, "sigign")
    status = File.join(@rt.workdir, "yes-status")
    script = "grep SigIgn /proc/self/status > #{ign}; (yes; echo $? > #{status}) | head -1 >/dev/null"
    _, _, stderr, st = rubyprofd("--duration", "20", "--", "sh", "-c", script, expect_success: false)
    check(stderr =~ /no Ruby process found started by the command/, "unexpected stderr:\n#{stderr}")
    mask = File.read(ign)[/SigIgn:\s*(\h+)/, 1]
    check(mask, "no SigIgn line in #{File.read(ign).inspect}")
    check(mask.to_i(16)[Signal.list["PIPE"] - 1] == 0, "SIGPIPE is ignored in the command (SigIgn #{mask})")
    yes = File.read(status).strip
    check(yes == "141", "yes exited #{yes}, not killed by SIGPIPE (141)")
    "SigIgn #{mask}, yes exited #{yes}"
  end
end

class E2E
  host_only :test_output_unwritable, :test_output_disk_full

  # Mounts a tmpfs (root ignores file modes: a mount is what refuses it), yields its path,
  # unmounts it.
  def with_tmpfs(opts)
    dir = Dir.mktmpdir("rubyprof-mnt-", @rt.workdir)
    _, err, st = Open3.capture3("mount", "-t", "tmpfs", "-o", opts, "none", dir)
    raise Skip, "cannot mount a tmpfs: #{err.strip}" unless st.success?
    begin
      yield dir
    ensure
      system("umount", dir)
      Dir.rmdir(dir)
    end
  end

  # -o into a read-only filesystem: refused before sampling starts (the command never runs),
  # exit 2, the message names the path and the reason.
  def test_output_unwritable
    with_tmpfs("ro,size=64k") do |dir|
      out = File.join(dir, "p.pb.gz")
      mark = File.join(@rt.workdir, "command-ran")
      stdout, stderr, st = Open3.capture3(RUBYPROFD, "--oneshot", "-o", out, "-d", "30", "--",
                                          "touch", mark)
      check(st.exitstatus == 2, "exit #{st.exitstatus.inspect}, not 2:\n#{stderr}")
      check(stderr.include?("cannot write the profile to \"#{out}\": Read-only file system"),
            "stderr does not name the path and the reason:\n#{stderr}")
      check(!File.exist?(mark), "the command ran: the output was checked too late")
      check(stdout.empty?, "a summary was printed:\n#{stdout}")
      check(Dir.children(dir).empty?, "files left: #{Dir.children(dir)}")
      stderr.lines.first.strip
    end
  end

  # The disk fills during the run: the profile lands in $TMPDIR, the message and the summary
  # say where, the exit status is 1 (not where it was asked for).
  def test_output_disk_full
    fallback = Dir.mktmpdir("rubyprof-fallback-", @rt.workdir)
    with_tmpfs("size=64k") do |dir|
      out = File.join(dir, "p.pb.gz")
      script = @rt.script("short_lived.rb")
      # profile 1 s of Ruby, then fill the filesystem before rubyprofd writes
      cmd = "#{@rt.argv(script, "1").join(" ")}; cat /dev/zero > #{dir}/fill 2>/dev/null; true"
      stdout, stderr, st = Open3.capture3({"TMPDIR" => fallback}, RUBYPROFD, "--oneshot", "-o", out,
                                          "-d", "30", "--", "sh", "-c", cmd)
      check(st.exitstatus == 1, "exit #{st.exitstatus.inspect}, not 1:\n#{stderr}")
      saved = Dir[File.join(fallback, "rubyprofd-*-p.pb.gz")]
      check(saved.size == 1, "no profile in #{fallback}: #{Dir.children(fallback)}\n#{stderr}")
      check(stderr.include?("cannot write the profile to \"#{out}\": No space left on device"),
            "stderr does not say why:\n#{stderr}")
      check(stderr.include?("saved in \"#{saved[0]}\""), "stderr does not say where:\n#{stderr}")
      check(stdout.include?("profile: #{saved[0]}"), "the summary does not point at it:\n#{stdout}")
      check(!File.exist?(out), "a profile at #{out} after all")
      prof = PprofRaw.read(saved[0])
      n = prof.samples.select { |s| prof.frames(s).any? { |l| method?(l, "short_lived_work") } }.sum(&:count)
      # what is checked is that the profile is whole where it was saved (1 s of CPU, ~99 samples,
      # is the run's; counts against CPU time are exits_mid_profile's): 20 tells it from empty
      check(n >= 20, "only #{n} samples of short_lived_work in the saved profile")
      "#{n} samples saved in #{File.basename(saved[0])}"
    end
  end
end
