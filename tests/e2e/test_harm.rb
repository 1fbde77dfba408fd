# SPDX-License-Identifier: GPL-2.0-only
# Never harm the target (issue 10, item 5): a Ruby computing a checksum over threads, forks and GC
# gets the same result and exits cleanly while rubyprofd is started, killed with SIGKILL in the
# middle of its work and started again, again and again; the programs and maps of every killed
# daemon are freed by the kernel once its descriptors close. Its throughput under that churn is a
# row of `make bench` (bench/run.rb), not a figure here.
require "json"

class E2E
  host_only :test_never_harm

  HARM_CYCLES = 20

  # The BPF object ids a process holds open: [prog ids, map ids] from /proc/PID/fdinfo (program
  # fds, links and perf events with a program show prog_id).
  def bpf_ids(pid)
    progs, maps = [], []
    Dir[File.join("/proc", pid.to_s, "fdinfo", "*")].each do |f|
      text = File.read(f) rescue next
      progs << Integer(Regexp.last_match(1)) if text =~ /^prog_id:\s+(\d+)/
      maps << Integer(Regexp.last_match(1)) if text =~ /^map_id:\s+(\d+)/
    end
    [progs.uniq, maps.uniq]
  end

  def bpftool_ids(kind)
    out, err, st = Open3.capture3("bpftool", "-j", kind, "show")
    fail!("bpftool #{kind} show: #{err}") unless st.success?
    JSON.parse(out).to_h { |o| [o["id"], o["name"]] }
  end

  def test_never_harm
    raise Skip, "bpftool is missing" unless system("bpftool version >/dev/null 2>&1")
    script = @rt.script("harm_work.rb")
    expected, err, st = Open3.capture3(*@rt.argv(script, "expect", "4"))
    check(st.success?, "the unprofiled run failed: #{err}")
    expected = expected.split
    ours = ->(progs) { progs.count { |_, name| name.to_s.start_with?("rp_") } }
    before = ours.call(bpftool_ids("prog"))

    facts = File.join(@rt.workdir, "harm-facts")
    stop = File.join(@rt.workdir, "harm-stop")
    log = File.join(@rt.workdir, "harm-out")
    work = Process.spawn(*@rt.argv(script, "run", facts, stop), out: log, err: [:child, :out], pgroup: true)
    @pids << work
    deadline = Time.now + 30
    sleep 0.05 until File.exist?(facts) || Time.now > deadline
    check(File.exist?(facts), "the workload did not start:\n#{File.read(log)}")

    spool = File.join(@rt.workdir, "harm-spool")
    FileUtils.mkdir_p(spool)
    rng = Random.new
    held_progs, held_maps, loaded, sampling = [], [], 0, 0
    HARM_CYCLES.times do |i|
      argv = if i.even?
               [RUBYPROFD, "--spool-dir", spool, "--interval", "1", "--frequency", "999", "--log-level", "error"]
             else
               [RUBYPROFD, "--oneshot", "--frequency", "999", "--duration", "60", "-o",
                File.join(@rt.workdir, "harm-#{i}.pb.gz"), "--quiet"]
             end
      sock, sock_path = notify_socket
      daemon = Process.spawn({ "NOTIFY_SOCKET" => sock_path }, *argv, out: File::NULL,
                             err: File.join(@rt.workdir, "harm-daemon-#{i}.err"))
      # Half of them are killed while they start (loading, attaching, the first scan), half at
      # a random moment of their sampling (after READY=1, however long a loaded machine took).
      if i % 4 < 2
        sleep(rng.rand(0.0..0.3))
      else
        deadline = Time.now + 60
        ready = false
        until ready || Time.now > deadline || Process.waitpid(daemon, Process::WNOHANG)
          ready = IO.select([sock], nil, nil, 0.1) && sock.recv(4096).include?("READY=1")
        end
        check(ready, "daemon #{i} sent no READY=1 within 60 s:\n" + File.read(File.join(@rt.workdir, "harm-daemon-#{i}.err")))
        sampling += 1
        sleep(rng.rand(0.0..1.0))
      end
      sock.close
      File.unlink(sock_path)
      progs, maps = bpf_ids(daemon)
      loaded += 1 if progs.any?
      held_progs.concat(progs)
      held_maps.concat(maps)
      Process.kill("KILL", daemon)
      _, dst = Process.wait2(daemon)
      check(dst.signaled? && dst.termsig == 9, "daemon #{i} ended before it was killed: #{dst.inspect}\n" +
            File.read(File.join(@rt.workdir, "harm-daemon-#{i}.err")))
      check(Process.waitpid(work, Process::WNOHANG).nil?, "the workload ended during cycle #{i}:\n#{File.read(log)}")
    end
    # The daemons sampled it: those killed after READY=1 had their programs attached.
    check(loaded >= sampling, "only #{loaded} of #{HARM_CYCLES} daemons had loaded their programs when killed, " \
                              "#{sampling} of them after READY=1")

    FileUtils.touch(stop)
    _, wst = Timeout.timeout(300) { Process.wait2(work) }
    @pids.delete(work)
    out = File.read(log)
    check(wst.success?, "the workload exited with #{wst.inspect}:\n#{out}")
    rounds = out.scan(/^round (\d+) (\h+) /).map { |i, sum| [Integer(i), sum] }
    check(out =~ /^rounds #{rounds.size}$/ && rounds.size >= 2, "the workload's output is not whole:\n#{out}")
    bad = rounds.reject { |i, sum| sum == expected[i % 4] }
    check(bad.empty?, "rounds with another checksum than unprofiled: #{bad.inspect}, expected #{expected.inspect}")

    # The kernel frees a killed daemon's programs and maps once its descriptors are closed (maps
    # and programs go after an RCU grace period: wait for it).
    left = nil
    deadline = Time.now + 60
    loop do
      progs, maps = bpftool_ids("prog"), bpftool_ids("map")
      left = held_progs.select { |id| progs.key?(id) }.map { |id| "prog #{id} #{progs[id]}" } +
             held_maps.select { |id| maps.key?(id) }.map { |id| "map #{id} #{maps[id]}" }
      break if left.empty? || Time.now > deadline

      sleep 0.5
    end
    check(left.empty?, "BPF objects of killed daemons still loaded: #{left.uniq.first(10).join(", ")}")
    after = ours.call(bpftool_ids("prog"))
    format("%d rounds under %d SIGKILLed daemons (%d with programs attached, %d killed while sampling) all equal to the unprofiled " \
           "checksums; their %d programs and %d maps freed; rp_* programs loaded before %d, after %d " \
           "(other rubyprofd instances on the host)", rounds.size, HARM_CYCLES, loaded, sampling, held_progs.uniq.size,
           held_maps.uniq.size, before, after)
  end
end
