# SPDX-License-Identifier: GPL-2.0-only
# The fault matrix (issue 10, item 4): each fault as a test that checks that the target keeps running
# unharmed (it prints a checksum of its work that the test recomputes, and exits 0), that rubyprofd
# keeps running and exits cleanly, and that every loss is counted in a named counter the test reads
# (the service's /metrics, or the --oneshot summary). Covered elsewhere: the target exits mid-read,
# execs into a non-Ruby program, a pid reused (test_lifecycle.rb); the output directory unwritable
# or full for --oneshot (test_cli.rb).
require "fileutils"
require "json"
require "open3"
require "timeout"
require_relative "scripts/fault_work"

class E2E
  host_only :test_fault_corrupt_vm, :test_fault_replaced_elf, :test_fault_ring_overrun,
            :test_fault_daemon_stopped, :test_fault_spool_full, :test_fault_many_threads,
            :test_fault_many_threads_wall,
            :test_fault_many_maps, :test_fault_root_gone
  group :service, :test_fault_spool_full, :test_fault_daemon_stopped

  FAULT_ITERS = 200_000

  # A fault_work.rb target: [pid, stdout path, facts]. It works until check_unharmed stops it.
  private def fault_stop = (@fault_stop ||= {})

  private def fault_target(iters: FAULT_ITERS, workers: 1, depth: 10, sleepers: 0, maps: nil, timeout: 60)
    script = @rt.script("fault_work.rb")
    out = File.join(@rt.workdir, "facts-fault-#{rand(1 << 30)}")
    log = "#{out}.stdout"
    pid = Process.spawn(*@rt.argv(script, out, iters.to_s, workers.to_s, depth.to_s, sleepers.to_s, *maps&.to_s),
                        out: log, pgroup: true)
    @pids << pid
    deadline = Time.now + timeout
    until File.exist?(out)
      fail!("fault_work.rb exited #{Process.last_status.inspect} before it was ready") if Process.waitpid(pid, Process::WNOHANG)
      fail!("fault_work.rb not ready after #{timeout} s") if Time.now > deadline
      sleep 0.05
    end
    fault_stop[pid] = "#{out}.stop"
    [pid, log, Marshal.load(File.binread(out))]
  end

  # Waits for a target to end by itself (a fault_work.rb target is told to): exit status 0 and
  # the checksum `want`.
  private def check_unharmed(pid, log, want, what: "the target", timeout: 180)
    st = nil
    FileUtils.touch(fault_stop[pid]) if fault_stop[pid]
    Timeout.timeout(timeout) { _, st = Process.waitpid2(pid) }
    @pids.delete(pid)
    check(st.exited? && st.exitstatus == 0, "#{what} (pid #{pid}) ended #{st.inspect}")
    got = File.read(log)[/checksum (\h+)/, 1]
    check(got == want.to_s(16), "#{what}: checksum #{got.inspect}, #{want.to_s(16)} expected")
    "checksum ok"
  rescue Timeout::Error
    fail!("#{what} (pid #{pid}) still running after #{timeout} s")
  end

  @@fault_expected = {}
  private def expected_checksum(iters, workers)
    @@fault_expected[[iters, workers]] ||= fault_expected(iters, workers)
  end

  # The --oneshot summary's loss counters, by name.
  private def losses(stdout)
    m = stdout.match(/^dropped: (\d+) \(ring buffer (\d+), incomplete (\d+), table full (\d+), no memory (\d+), refused (\d+), unknown process (\d+)\), failed reads: (\d+) \(\+(\d+) frames unsymbolized\), truncated: (\d+)/)
    fail!("no loss counters in the summary:\n#{stdout}") unless m
    keys = %w[dropped ring_buffer incomplete table_full no_memory refused unknown_process failed_reads unsymbolized truncated]
    h = keys.zip(m.captures.map(&:to_i)).to_h
    check(h["dropped"] == h.values_at(*keys[1, 6]).sum, "dropped samples do not add up: #{m[0]}")
    h
  end

  private def samples_line(stdout)
    stdout[/^samples: (\d+) on all CPUs, (\d+) Ruby/] or fail!("no samples line:\n#{stdout}")
    [$1.to_i, $2.to_i]
  end

  # rubyprofd --oneshot with a deadline: a hang is a failure, not a stuck suite. The block, if
  # any, runs once it samples (READY=1).
  private def oneshot_within(limit, *args, watch: [])
    out = File.join(@rt.workdir, "profile-#{rand(1 << 30)}.pb.gz")
    res = nil
    t0 = Time.now
    sock, sock_path = notify_socket
    trace = CpuTrace.new(self, watch)
    Open3.popen3({ "NOTIFY_SOCKET" => sock_path }, RUBYPROFD, "--oneshot", "-o", out, *args) do |i, o, e, w|
      i.close
      reader = [Thread.new { o.read }, Thread.new { e.read }]
      tracer = trace.run_until { !w.alive? } unless watch.empty?
      yield if block_given? && wait_ready(sock, w, timeout: limit)
      unless w.join([limit - (Time.now - t0), 0].max)
        Process.kill("KILL", w.pid) rescue nil
        fail!("rubyprofd #{args.join(" ")} still running after #{limit} s")
      end
      tracer&.join
      res = [out, reader[0].value, reader[1].value, w.value, Time.now - t0, trace]
    end
    st = res[3]
    check(st.exited? && st.exitstatus == 0, "rubyprofd ended #{st.inspect}:\n#{res[2]}#{res[1]}")
    res
  ensure
    sock&.close
    File.unlink(sock_path) rescue nil if sock_path
  end

  # (a) A VM whose memory is scribbled over while it is sampled: the daemon neither hangs nor
  # crashes, bad reads come out as bracketed marks ("[unknown Ruby frame]", "[invalid Ruby
  # context]"...), and they are counted (failed reads, frames unsymbolized).
  def test_fault_corrupt_vm
    rounds = 12_000
    out = File.join(@rt.workdir, "fake-scribble-#{rand(1 << 30)}")
    log = "#{out}.stdout"
    # untouched until rubyprofd has found the VM and sampled it for a while (half a second of
    # its CPU at 999 Hz), so that it has cached its true frames (what it read while scribbled,
    # it would keep); then the garbage comes
    go = "#{out}.go"
    pid = Process.spawn(fixture("fakeruby-static"), out, "scribble", rounds.to_s, go, out: log, pgroup: true)
    @pids << pid
    Timeout.timeout(30) { sleep 0.05 until File.exist?(out) }
    facts = fake_facts(out)
    path, stdout, stderr, = oneshot_within(60, "-v", "--pid", pid.to_s, "--duration", "5", "--frequency", "999") do
      wait_cpu(pid, 0.5)
      FileUtils.touch(go)
    end
    # the fixture's own checksum: xorshift64, 3 steps per write, 32 writes per round
    rng = 0x9e3779b97f4a7c15
    (rounds * 32 * 3).times do
      rng ^= (rng << 13) & FAULT_MASK
      rng ^= rng >> 7
      rng ^= (rng << 17) & FAULT_MASK
    end
    check_unharmed(pid, log, rng, what: "the scribbled fake Ruby")
    check(stdout.force_encoding("UTF-8").valid_encoding?, "the summary is not valid UTF-8:\n#{stdout.scrub}")
    l = losses(stdout)
    check(l["failed_reads"] + l["unsymbolized"] > 0, "garbage read, nothing counted: #{l}")
    prof = PprofRaw.read(path)
    samples = prof.samples_of(pid)
    total = samples.sum(&:count)
    check(total >= 100, "only #{total} samples of the fake Ruby\n#{stderr}")
    good = facts["frames"].map { |f| f["label"] }
    marked = 0
    garbled = 0
    samples.each do |s|
      names = prof.frames(s).map(&:name)
      bad = names.reject { |n| n.dup.force_encoding("UTF-8").valid_encoding? && n !~ /[[:cntrl:]]/ }
      check(bad.empty?, "names that are not UTF-8 text: #{bad.map(&:inspect).join(", ")}")
      if names.any? { |n| n.start_with?("[") }
        marked += s.count
      elsif !names.all? { |n| good.include?(n) }
        garbled += s.count # a label's own bytes scribbled: nothing can tell it from a name
      end
    end
    exact = samples.select { |s| prof.frames(s).map(&:name) == good }.sum(&:count)
    check(marked > 0, "no bracketed mark for #{l["failed_reads"]} failed reads")
    best = samples.max_by(&:count)
    check(exact >= total / 4, "only #{exact}/#{total} samples with the true stack between the bursts; most frequent " \
                               "(#{best.count}): #{prof.frames(best).map { |f| fmt(f, prof) }.join(" < ")}")
    check(garbled <= total / 20, "#{garbled}/#{total} samples with garbled names")
    "#{total} samples: #{exact} exact, #{marked} marked, #{garbled} garbled; failed reads #{l["failed_reads"]}, " \
      "frames unsymbolized #{l["unsymbolized"]}, truncated #{l["truncated"]}"
  end

  # (b) The executable renamed over by another build after it started (maps says "(deleted)"), then
  # a new file at its path: rubyprofd reads the mapped file through /proc/PID/map_files, never the
  # one the path names now (a 3.9.0 build that would be refused, or give other offsets).
  def test_fault_replaced_elf
    dir = Dir.mktmpdir("rubyprof-bin-", @rt.workdir)
    exe = File.join(dir, "fakeruby")
    FileUtils.cp(fixture("fakeruby-static"), exe)
    out = File.join(@rt.workdir, "fake-replaced-#{rand(1 << 30)}")
    pid = launch([exe, out], out)
    facts = fake_facts(out)
    FileUtils.cp(fixture("fakeruby-unknown"), "#{exe}.new")
    File.rename("#{exe}.new", exe)
    check(File.read("/proc/#{pid}/maps").include?("#{exe} (deleted)"), "maps does not show the old file deleted")
    # Another copy truncated in place (the mapped inode itself; Linux 6.11+ lets a running
    # executable be written): unreadable, so refused with the reason, the other still profiled.
    exe2 = File.join(dir, "fakeruby2")
    FileUtils.cp(fixture("fakeruby-static"), exe2)
    out2 = File.join(@rt.workdir, "fake-truncated-#{rand(1 << 30)}")
    pid2 = launch([exe2, out2], out2)
    trunc = begin
      File.truncate("/proc/#{pid2}/exe", 0)
      "truncated"
    rescue Errno::ETXTBSY => e
      "refused by the kernel (#{e.message})"
    end
    path, stdout, stderr, = oneshot_within(60, "-v", "--pid", pid.to_s, "--pid", pid2.to_s, "--duration", "3")
    check(stderr =~ /pid #{pid}: Ruby 3\.1\.2 \(#{Regexp.escape(exe)}, replaced on disk since mapped: read through \/proc\/PID\/map_files\)/,
          "no line saying the replaced file was read through map_files:\n#{stderr}")
    check(stderr !~ /3\.9\.0/, "the new file at the path was read:\n#{stderr}")
    if trunc == "truncated"
      check(stderr =~ /pid #{pid2}: not profiled: .*fakeruby2/, "no refusal naming the truncated file:\n#{stderr}")
    else
      check(stderr =~ /pid #{pid2}: Ruby 3\.1\.2 \(#{Regexp.escape(exe2)}\)/, "pid #{pid2} not profiled:\n#{stderr}")
    end
    matching, total = check_exact_stack(PprofRaw.read(path), pid, facts["frames"], min_total: 20)
    check(Process.waitpid(pid, Process::WNOHANG).nil?, "the target died")
    check(losses(stdout)["dropped"].zero?, "samples dropped:\n#{stdout}")
    # Without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE, map_files is closed: the replaced one is
    # refused with the reason (the service counts it in rubyprofd_processes_refused_total), the
    # other is still profiled.
    setpriv = ENV["PATH"].split(":").map { |d| File.join(d, "setpriv") }.find { |f| File.executable?(f) }
    refusal = "no setpriv"
    if setpriv
      out3 = File.join(@rt.workdir, "profile-#{rand(1 << 30)}.pb.gz")
      o3, e3, st3 = Open3.capture3(setpriv, "--bounding-set=-sys_admin,-checkpoint_restore", RUBYPROFD,
                                   "--oneshot", "-o", out3, "--pid", pid.to_s, "--pid", pid2.to_s, "--duration", "2")
      check(st3.success?, "without map_files: exit #{st3.inspect}\n#{e3}")
      refusal = e3[/pid #{pid}: not profiled: .*/] or fail!("no refusal of pid #{pid} without map_files:\n#{e3}")
      check(refusal.include?("\"#{exe}\" is no longer the file it mapped") && refusal.include?("map_files is not readable"),
            "the refusal does not say why: #{refusal}")
      check(o3 =~ /^rubyprofd: 1 Ruby process profiled/, "the other process is not profiled:\n#{o3}#{e3}")
    end
    "#{matching}/#{total} samples exact through map_files; truncating the running file: #{trunc}; " \
      "without map_files: #{refusal.sub(/.*not profiled: /, "")}"
  ensure
    FileUtils.rm_rf(dir) if dir
  end

  # (d) 10 kHz on every CPU with deep stacks: what the ring buffer cannot hold is counted, the run
  # ends on time, the profile is written.
  def test_fault_ring_overrun
    workers = 2
    pid, log, = fault_target(workers: workers, depth: 400)
    path, stdout, stderr, _, secs = oneshot_within(60, "--pid", pid.to_s, "--duration", "4", "--frequency", "10000")
    # a liveness bound, not a speed: the run ends at its 4 s and writes its profile; a daemon
    # that falls behind at 10 kHz must still end, so six times its length (how long its last
    # records take to read at that rate is the bench's; 9.5 s from the start of rubyprofd to its
    # exit here, its programs loaded and its READY=1 included, at a load average of 10-15 on
    # two CPUs)
    check(secs < 4 + 20, "a 4 s run took #{secs.round(1)} s")
    all, ruby = samples_line(stdout)
    l = losses(stdout)
    prof = PprofRaw.read(path)
    n = prof.samples_of(pid).sum(&:count)
    check(n >= 1000, "only #{n} samples at 10 kHz\n#{stderr}")
    deep = prof.samples_of(pid).select { |s| prof.frames(s).count { |f| method?(f, "fault_down") } >= 300 }.sum(&:count)
    check(deep >= n / 2, "only #{deep}/#{n} samples with the deep stack")
    # every Ruby sample the BPF program took is in the profile, or counted as lost
    check(n <= ruby && ruby - n <= l["dropped"], "#{ruby} Ruby samples, #{n} in the profile, #{l["dropped"]} counted as lost")
    check_unharmed(pid, log, expected_checksum(FAULT_ITERS, workers))
    "#{secs.round(1)} s; #{all} samples, #{ruby} Ruby, #{n} in the profile (#{deep} deep); " \
      "ring buffer drops #{l["ring_buffer"]}, dropped #{l["dropped"]}, truncated #{l["truncated"]}"
  end
  # The service's rules for these tests: the runner and other tests' Rubies are not profiled.
  FAULT_CONF = <<~'CONF'
    rule = cmdline ~ tests/e2e/run\.rb => ignore
  CONF

  # One value of the service's /metrics (a counter or gauge, labels as in the text), or nil.
  private def metric(port, name, labels = nil)
    body = metrics(port).body
    sel = labels ? "\\{#{Regexp.escape(labels)}\\}" : ""
    body[/^#{name}#{sel} (\d+(?:\.\d+)?)$/, 1]&.to_f
  end

  # The BPF programs' own counters (include/rubyprof.h: RP_STAT_*) of the daemon pid, summed
  # over CPUs, read with bpftool through the daemon's descriptors (/proc/PID/fdinfo names each
  # map's id): readable while the daemon is stopped, since the kernel, not the daemon, counts.
  RP_STAT_RB_DROPPED = 6
  RP_STAT_EVENTS_LOST = 12
  RP_STAT_MAX = 29
  private def bpf_stats(daemon)
    ids = Dir["/proc/#{daemon}/fdinfo/*"].filter_map do |f|
      info = File.read(f) rescue next
      # the stats map: a per-CPU array (type 6) of RP_STAT_MAX u64 counters
      next unless info =~ /^map_type:\s+6$/ && info =~ /^value_size:\s+8$/ && info =~ /^max_entries:\s+#{RP_STAT_MAX}$/

      info[/^map_id:\s+(\d+)/, 1]
    end.uniq
    fail!("no stats map among the descriptors of pid #{daemon}") if ids.empty?
    sums = Array.new(RP_STAT_MAX, 0)
    ids.each do |id|
      out, err, st = Open3.capture3("bpftool", "-j", "map", "dump", "id", id)
      fail!("bpftool map dump id #{id}: #{err}") unless st.success?
      JSON.parse(out).each do |e|
        key = e["key"].is_a?(Array) ? e["key"].map { |b| Integer(b) }.pack("C*").unpack1("L<") : Integer(e["key"])
        (e["values"] || []).each do |v|
          val = v["value"].is_a?(Array) ? v["value"].map { |b| Integer(b) }.pack("C*").unpack1("Q<") : Integer(v["value"])
          sums[key] += val
        end
      end
    end
    sums
  end

  # (f) The service stopped (SIGSTOP) with deep-stacked Rubies on the CPUs until the ring buffer
  # has overflowed, then SIGCONT: the samples the ring buffer could not hold meanwhile are
  # counted, the service goes on, the next interval's profile is written, SIGTERM ends it with 0,
  # the targets finish unharmed. Three processes on two CPUs take turns, so most samples differ
  # from their CPU's previous stack and ship whole (a delta of one thread's own stack is small).
  # The overflow is the event waited for: the BPF program's own count of ring-buffer-full drops
  # (read with bpftool while the daemon is stopped), not a time computed from a rate. While the
  # ring is still full, a Ruby starts: its exec's event cannot be sent either (counted in
  # rubyprofd_process_events_lost_total), so only the /proc rescan (every 2 s here) finds it,
  # and it is profiled all the same.
  def test_fault_daemon_stopped
    targets = Array.new(3) { fault_target(workers: 1, depth: 300) }
    pid = targets[0][0]
    port = 20000 + rand(20000)
    svc = service(["--interval", "2", "--frequency", "999", "--rescan-interval", "2",
                   "--metrics-address", "127.0.0.1:#{port}"], conf: FAULT_CONF)
    begin
      check(svc.wait_note(/READY=1/, 60), "no READY=1:\n#{svc.log_text}")
      wait_for("a first profile", 20, svc) { metric(port, "rubyprofd_profiles_written_total").to_i >= 1 }
      rb = ->() { metric(port, "rubyprofd_dropped_samples_total", 'cause="ring_buffer_full"').to_i }
      lost_events = ->() { metric(port, "rubyprofd_process_events_lost_total").to_i }
      before, events_before = rb.call, lost_events.call
      Process.kill("STOP", svc.pid)
      stopped_at = Time.now
      b0 = bpf_stats(svc.pid)
      # the 8 MiB ring buffer full: the kernel counts a drop (a minute or so at most: 8 MiB at
      # the slowest rate measured here, a few hundred KiB/s)
      wait_for("a ring-buffer-full drop counted by the BPF program while the daemon is stopped", 300, svc) do
        bpf_stats(svc.pid)[RP_STAT_RB_DROPPED] > b0[RP_STAT_RB_DROPPED]
      end
      full_after = Time.now - stopped_at
      late = start("app.rb", "-", "late_work")
      wait_for("the late Ruby's process events lost while the ring buffer is full", 60, svc) do
        bpf_stats(svc.pid)[RP_STAT_EVENTS_LOST] > b0[RP_STAT_EVENTS_LOST]
      end
      b1 = bpf_stats(svc.pid)
      Process.kill("CONT", svc.pid)
      cont = Time.now
      # the target's own profile of an interval that began after SIGCONT
      mine = wait_for("a profile of the target after SIGCONT", 40, svc) do
        svc.profiles.select do |meta, path|
          meta["service"] == "fault_work" && Integer(meta["from_ns"]) >= cont.to_f * 1e9 &&
            PprofRaw.read(path).samples_of(pid).any?
        end.then { |a| a.empty? ? nil : a }
      end
      # the late Ruby, whose exec no event announced: found by the rescan, then sampled
      found = wait_for("a profile with samples of the late Ruby (pid #{late["pid"]}), found by the rescan", 60, svc) do
        svc.profiles.find do |_, path|
          prof = PprofRaw.read(path)
          prof.samples_of(late["pid"]).any? { |s| prof.frames(s).any? { |l| method?(l, "late_work") } }
        end
      end
      lost = rb.call - before
      events = lost_events.call - events_before
      # the metrics say at least what the BPF programs had counted when the daemon went on
      check(lost >= b1[RP_STAT_RB_DROPPED] - b0[RP_STAT_RB_DROPPED] && lost > 0,
            "#{lost} ring_buffer_full drops in the metrics, the BPF program counted #{b1[RP_STAT_RB_DROPPED] - b0[RP_STAT_RB_DROPPED]} while stopped")
      check(events >= b1[RP_STAT_EVENTS_LOST] - b0[RP_STAT_EVENTS_LOST] && events > 0,
            "#{events} in rubyprofd_process_events_lost_total, the BPF program counted #{b1[RP_STAT_EVENTS_LOST] - b0[RP_STAT_EVENTS_LOST]} while stopped")
      st, = svc.stop("TERM")
      check(st.exited? && st.exitstatus == 0, "SIGTERM: #{st.inspect}\n#{svc.log_text}")
      targets.each { |p, log, _| check_unharmed(p, log, expected_checksum(FAULT_ITERS, 1)) }
      format("ring buffer full %.1f s after SIGSTOP; ring_buffer_full +%d, process events lost +%d; " \
             "%d profiles of the target after SIGCONT; the late Ruby found by the rescan (%s)",
             full_after, lost, events, mine.size, File.basename(found[1]))
    ensure
      svc.kill
    end
  end

  # A tmpfs of `size`, always unmounted (lazily if still busy) before it is removed.
  private def with_small_tmpfs(size)
    dir = Dir.mktmpdir("rubyprof-spool-mnt-", @rt.workdir)
    _, err, st = Open3.capture3("mount", "-t", "tmpfs", "-o", "size=#{size}", "none", dir)
    raise Skip, "cannot mount a tmpfs: #{err.strip}" unless st.success?
    begin
      yield dir
    ensure
      system("umount", dir, err: File::NULL) or system("umount", "-l", dir)
      Dir.rmdir(dir) rescue nil
    end
  end

  # (e) The service's spool on a 1 MiB tmpfs, filled up, then made read-only: every profile that
  # cannot be written is counted (rubyprofd_profile_write_errors_total), sampling goes on, and
  # writing resumes when space (and write access) comes back.
  def test_fault_spool_full
    pid, log, = fault_target
    with_small_tmpfs("1m") do |mnt|
      port = 20000 + rand(20000)
      spool = File.join(mnt, "spool")
      dir = Dir.mktmpdir("rubyprofd-service-")
      # the later --spool-dir wins over the helper's
      svc = Service.new(dir, ["--interval", "1", "--frequency", "99", "--spool-max-bytes", "1M",
                              "--metrics-address", "127.0.0.1:#{port}", "--spool-dir", spool], conf: FAULT_CONF)
      svc.instance_variable_set(:@spool, spool)
      begin
        check(svc.wait_note(/READY=1/, 60), "no READY=1:\n#{svc.log_text}")
        m = ->(name, labels = nil) { metric(port, name, labels).to_i }
        wait_for("a first profile", 20, svc) { m.("rubyprofd_profiles_written_total") >= 1 }
        # full: what is left of the tmpfs taken by a file
        fill = File.join(mnt, "fill")
        system("dd", "if=/dev/zero", "of=#{fill}", "bs=4k", err: File::NULL, out: File::NULL)
        # each interval's profile either fails (a write error) or takes the room of the oldest
        # (an eviction, bound="bytes"): both counted
        lost = -> { m.("rubyprofd_profile_write_errors_total") + m.("rubyprofd_spool_evicted_total", 'bound="bytes"') }
        errs0 = m.("rubyprofd_profile_write_errors_total")
        evicted0 = m.("rubyprofd_spool_evicted_total", 'bound="bytes"')
        wait_for("write errors or evictions on a full spool", 30, svc) { lost.() >= errs0 + evicted0 + 3 }
        samples_full = m.("rubyprofd_samples_total", 'process="ruby"')
        wait_for("sampling while the spool is full", 20, svc) { m.("rubyprofd_samples_total", 'process="ruby"') > samples_full }
        full_errs = m.("rubyprofd_profile_write_errors_total") - errs0
        full_evicted = m.("rubyprofd_spool_evicted_total", 'bound="bytes"') - evicted0
        # space back: profiles again
        File.unlink(fill)
        written = m.("rubyprofd_profiles_written_total")
        wait_for("profiles after space came back", 20, svc) { m.("rubyprofd_profiles_written_total") >= written + 2 }
        # read-only
        _, err, st = Open3.capture3("mount", "-o", "remount,ro", mnt)
        check(st.success?, "remount,ro: #{err}")
        errs1 = m.("rubyprofd_profile_write_errors_total")
        begin
          wait_for("write errors on a read-only spool", 20, svc) { m.("rubyprofd_profile_write_errors_total") >= errs1 + 2 }
        ensure
          system("mount", "-o", "remount,rw", mnt)
        end
        ro_errs = m.("rubyprofd_profile_write_errors_total") - errs1
        written = m.("rubyprofd_profiles_written_total")
        wait_for("profiles after the spool is writable again", 20, svc) { m.("rubyprofd_profiles_written_total") >= written + 2 }
        evicted = m.("rubyprofd_spool_evicted_total", 'bound="bytes"')
        log_text = svc.log_text
        if full_errs > 0
          check(log_text =~ /cannot write the interval's profile to "#{Regexp.escape(spool)}": No space left on device/,
                "no message naming the full spool:\n#{log_text}")
        end
        check(log_text =~ /Read-only file system/, "no message naming the read-only spool:\n#{log_text}")
        st, = svc.stop("TERM")
        check(st.exited? && st.exitstatus == 0, "SIGTERM: #{st.inspect}\n#{svc.log_text}")
        mine = svc.profiles.count { |_, path| PprofRaw.read(path).samples_of(pid).any? }
        check(mine >= 2, "only #{mine} profiles of the target in the spool")
        check_unharmed(pid, log, expected_checksum(FAULT_ITERS, 1))
        "full: #{full_errs} write errors, #{full_evicted} evicted to make room; read-only: #{ro_errs} write errors; " \
          "evicted (bytes) in all #{evicted}; " \
          "#{mine} profiles of the target kept"
      ensure
        svc&.kill
      end
    end
  end
  # A 99 Hz profile of pid (oneshot_within's, with its CPU trace): every tick on a CPU of its
  # threads (the workers take turns with the GVL) within sampling's spread of its CPU time, and
  # most in fault_mix. [samples, samples in fault_mix, CPU seconds].
  private def fault_counts(path, pid, trace, what, stderr)
    prof = PprofRaw.read(path)
    n, named = fault_samples(prof, pid)
    cpu = cpu_in_window(trace, pid, prof) or fail!("the CPU trace does not cover the profile")
    busy = [cpu / Float(prof.duration), 1].min
    check(samples_ok?(n, cpu * 99, busy),
          format("%d samples of %s, for %.2f s of its CPU at 99 Hz: %.0f +- %.0f expected\n%s",
                 n, what, cpu, cpu * 99, sample_spread(cpu * 99, busy), stderr))
    check(named >= 0.8 * n, "only #{named}/#{n} samples in fault_mix")
    [n, named, cpu]
  end

  # The Ruby work of a profile of pid: [samples, samples in fault_mix].
  private def fault_samples(prof, pid)
    samples = prof.samples_of(pid)
    [samples.sum(&:count), samples.select { |s| prof.frames(s).any? { |f| method?(f, "fault_mix") } }.sum(&:count)]
  end

  # (g) Two thousand threads in one Ruby (two working, the rest waiting): profiled, the workers'
  # stacks named, nothing dropped or truncated.
  def test_fault_many_threads
    sleepers = 2000
    workers = 2
    pid, log, facts = fault_target(workers: workers, sleepers: sleepers, timeout: 120)
    tasks = Dir.children("/proc/#{pid}/task").size
    check(tasks > sleepers, "only #{tasks} native threads")
    path, stdout, stderr, _, _, trace = oneshot_within(90, "-v", "--pid", pid.to_s, "--duration", "4", watch: [pid])
    n, named, cpu = fault_counts(path, pid, trace, "a process of #{tasks} threads", stderr)
    l = losses(stdout)
    # a read that races a GVL hand-over is lost and counted (failed reads), rarely
    check(l["dropped"].zero? && l["failed_reads"] <= n / 10 + 5, "losses with many threads: #{l}")
    ruby = samples_line(stdout)[1]
    check(n == ruby, "#{ruby} Ruby samples, #{n} in the profile, none counted as lost: #{l}\n#{stdout}")
    check_unharmed(pid, log, expected_checksum(FAULT_ITERS, workers))
    "#{facts["threads"]} Ruby threads (#{tasks} native): #{n} samples for #{(cpu * 99).round} expected, #{named} in fault_mix; " \
      "losses #{l.select { |_, v| v > 0 }}"
  end

  # (g) The same in wall-clock mode: a run visits at most 1024 threads (RP_MAX_WALL_THREADS), the
  # next continues where it stopped (the cursor) and each visit weighs the runs since that
  # thread's last one, so the cost of a run is bounded and every thread still gets its wall time.
  def test_fault_many_threads_wall
    wall_supported!
    sleepers = 2000
    workers = 2
    pid, log, facts = fault_target(workers: workers, sleepers: sleepers, timeout: 120)
    path, stdout, stderr, = oneshot_within(90, "-v", "--pid", pid.to_s, "--duration", "4",
                                           "--clock", "wall", "--frequency", "19")
    wall = stdout[/^wall: .*/] or fail!("no wall: line\n#{stdout}")
    cut = wall[/(\d+) lists cut at 1024 threads/, 1].to_i
    cursor = stdout[/(\d+) runs from a cursor/, 1].to_i
    check(cut.positive? && cursor.positive?, "no run cut at 1024 threads or started at a cursor: #{wall}")
    secs = stdout[/profiled for ([\d.]+) s/, 1].to_f
    prof = PprofRaw.read(path)
    per = Hash.new(0)
    prof.samples_of(pid).each { |s| per[s.labels["ruby_thread"]] += s.nanos }
    check(per.size > sleepers, "#{per.size} threads sampled, of #{sleepers + workers + 1}\n#{stderr}")
    near = per.values.count { |ns| (ns / 1e9 - secs).abs <= 0.3 * secs }
    check(near >= 0.9 * per.size, "only #{near} of #{per.size} threads have about #{secs} s of wall time " \
                                  "(#{per.values.map { |ns| (ns / 1e9).round(1) }.tally.sort.first(8)})")
    l = losses(stdout)
    check(l["dropped"].zero?, "losses with many threads: #{l}")
    check_unharmed(pid, log, expected_checksum(FAULT_ITERS, workers))
    q = per.values.sort.map { |ns| (ns / 1e9).round(2) }
    "#{per.size} threads over #{secs} s: #{near} within 30 % of it (min #{q.first}, median #{q[q.size / 2]}, " \
      "max #{q.last} s); #{cut} runs cut at 1024, #{cursor} from a cursor"
  end

  # (g) A Ruby with 600 files mapped (mmap) besides its libraries: found, profiled, named.
  def test_fault_many_maps
    pid, log, facts = fault_target(maps: 600, timeout: 120)
    total = File.read("/proc/#{pid}/maps").lines.size
    check(facts["maps"] == 600, "the target mapped #{facts["maps"].inspect} files, not 600")
    path, stdout, stderr, _, _, trace = oneshot_within(90, "-v", "--pid", pid.to_s, "--duration", "3", watch: [pid])
    check(stderr =~ /pid #{pid}: Ruby #{Regexp.escape(@rt.version)}/, "pid #{pid} not profiled:\n#{stderr}")
    n, named, cpu = fault_counts(path, pid, trace, "a process of #{total} mappings", stderr)
    l = losses(stdout)
    check(l["dropped"].zero? && l["failed_reads"].zero?, "losses with many mappings: #{l}")
    ruby = samples_line(stdout)[1]
    check(n == ruby, "#{ruby} Ruby samples, #{n} in the profile, none counted as lost")
    check_unharmed(pid, log, expected_checksum(FAULT_ITERS, 1))
    "#{total} mappings (600 mmap'd files): #{n} samples for #{(cpu * 99).round} expected, #{named} in fault_mix"
  end
  # (c) A Ruby whose root is gone: chrooted into a directory that was then deleted, and another
  # into a tmpfs that was then unmounted (lazily: the process keeps it). Its object's path
  # leads nowhere from /proc/PID/root, so it is read through /proc/PID/map_files and profiled
  # exactly, as is a Ruby beside it. (As root, /proc/PID/root itself cannot be made unreadable
  # while the memory stays readable: both are the same ptrace access check; a daemon without
  # it refuses the process as no_access, counted in rubyprofd_processes_refused_total.)
  def test_fault_root_gone
    exe = "/opt/fake/bin/fakeruby-static"
    roots = []
    deleted = Dir.mktmpdir("rubyprof-root-")
    roots << deleted
    mini_root(deleted, fixture("fakeruby-static"), exe)
    out = "/tmp/facts-#{rand(1 << 30)}"
    pid1 = launch(["chroot", deleted, exe, out], File.join(deleted, out))
    facts1 = fake_facts(File.join(deleted, out))
    FileUtils.rm_rf(deleted)
    check(File.readlink("/proc/#{pid1}/root").end_with?("(deleted)"), "the root of pid #{pid1} is not deleted")

    mnt = Dir.mktmpdir("rubyprof-rootmnt-")
    roots << mnt
    _, err, st = Open3.capture3("mount", "-t", "tmpfs", "-o", "size=16m", "none", mnt)
    raise Skip, "cannot mount a tmpfs: #{err.strip}" unless st.success?
    mounted = true
    mini_root(mnt, fixture("fakeruby-static"), exe)
    pid2 = launch(["chroot", mnt, exe, out], File.join(mnt, out))
    facts2 = fake_facts(File.join(mnt, out))
    system("umount", "-l", mnt) or fail!("umount -l #{mnt} failed")
    mounted = false

    other = File.join(@rt.workdir, "fake-beside-#{rand(1 << 30)}")
    pid3 = launch([fixture("fakeruby-static"), other], other)
    facts3 = fake_facts(other)
    path, stdout, stderr, = oneshot_within(60, "-v", "--pid", pid1.to_s, "--pid", pid2.to_s, "--pid", pid3.to_s,
                                           "--duration", "4")
    check(stderr =~ /pid #{pid1}: Ruby 3\.1\.2 \([^)]*, (not found at its path|replaced on disk since mapped): read through \/proc\/PID\/map_files\)/,
          "the Ruby in a deleted root is not read through map_files:\n#{stderr}")
    prof = PprofRaw.read(path)
    res = [[pid1, facts1], [pid2, facts2], [pid3, facts3]].map do |pid, facts|
      check(Process.waitpid(pid, Process::WNOHANG).nil?, "pid #{pid} died")
      check_exact_stack(prof, pid, facts["frames"], min_total: 15).join("/")
    end
    check(losses(stdout)["dropped"].zero?, "samples dropped:\n#{stdout}")
    how2 = stderr[/pid #{pid2}: Ruby 3\.1\.2 \(([^)]*)\)/, 1]
    "deleted root #{res[0]}, unmounted root #{res[1]} (#{how2}), beside #{res[2]} exact samples"
  ensure
    stop_all
    system("umount", "-l", mnt, err: File::NULL) if mounted
    roots&.each { |r| FileUtils.rm_rf(r) }
  end
end
