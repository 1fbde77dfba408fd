# SPDX-License-Identifier: GPL-2.0-only
# Hostile input from an unprivileged tenant, against the system-wide service started by root in
# the default configuration: objects that claim huge sections or name a huge debug file, a
# version string with a terminal escape and a newline, thread names with escapes, and slow
# clients holding every slot of the metrics endpoint; and what root keeps of its privileges. While and after they run, a victim Ruby
# of the same unprivileged user keeps getting its profile every interval, the endpoint answers,
# the daemon stays small and alive, and each refusal is counted and logged once.
require "etc"
require "fileutils"
require "socket"
require "timeout"

class E2E
  host_only :test_hostile_tenant
  group :service, :test_hostile_tenant

  LIBRUBY_HOST = "/usr/lib/x86_64-linux-gnu/libruby-#{RbConfig::CONFIG["ruby_version"][/\A\d+\.\d+/]}.so.#{RUBY_VERSION}".freeze

  # The ELF64 section headers of path: [{type:, offset:, size:, at: (where the header is)}].
  def elf_sections(path)
    File.open(path, "rb") do |f|
      eh = f.read(64)
      shoff = eh[0x28, 8].unpack1("Q<")
      shentsize, shnum = eh[0x3a, 4].unpack("S<S<")
      (0...shnum).map do |i|
        at = shoff + i * shentsize
        f.seek(at)
        sh = f.read(64)
        { type: sh[4, 4].unpack1("L<"), offset: sh[0x18, 8].unpack1("Q<"), size: sh[0x20, 8].unpack1("Q<"), at: at }
      end
    end
  end

  # The file offset of virtual address v (its PT_LOAD segment).
  def elf_file_offset(path, v)
    File.open(path, "rb") do |f|
      eh = f.read(64)
      phoff = eh[0x20, 8].unpack1("Q<")
      phentsize, phnum = eh[0x36, 4].unpack("S<S<")
      (0...phnum).each do |i|
        f.seek(phoff + i * phentsize)
        type, _, off, vaddr, _, filesz = f.read(56).unpack("L<L<Q<Q<Q<Q<")
        return v - vaddr + off if type == 1 && v >= vaddr && v < vaddr + filesz
      end
    end
    raise "#{path}: #{v.to_s(16)} is in no segment"
  end

  # A copy of the host's libruby whose .dynsym claims `size` bytes, sparse up to its end.
  def hostile_sparse_dynsym(to, size)
    FileUtils.cp(LIBRUBY_HOST, to)
    sh = elf_sections(to).find { |s| s[:type] == 11 } # SHT_DYNSYM
    File.open(to, "r+b") do |f|
      f.seek(sh[:at] + 0x20)
      f.write([size].pack("Q<"))
      f.truncate(sh[:offset] + size)
    end
  end

  # A copy of the host's libruby whose ruby_version says "3.1\e[2J\nforged" instead.
  def hostile_version(to)
    FileUtils.cp(LIBRUBY_HOST, to)
    sym = `nm -D --defined-only #{to}`.lines.find { |l| l.split[2] == "ruby_version" }
    check(sym, "no ruby_version in #{to}")
    off = elf_file_offset(to, Integer(sym.split[0], 16))
    File.open(to, "r+b") do |f|
      f.seek(off)
      f.write("3\e[2J\nx\0")
    end
  end

  def as_nobody(*cmd, **opts)
    Process.spawn("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *cmd, **opts)
  end

  # A process of the tenant that maps `path` (its first page) and sleeps: what rubyprofd finds
  # at its next look at the host's processes.
  def map_as_nobody(path, ready)
    as_nobody("/usr/bin/python3", "-c", <<~PY, path, ready)
      import mmap, sys, time
      f = open(sys.argv[1], "rb")
      m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
      open(sys.argv[2], "w").close()
      time.sleep(3600)
    PY
  end

  def scrape_within(port, seconds)
    t0 = Time.now
    body = Timeout.timeout(seconds) { metrics(port).body }
    [body, Time.now - t0]
  rescue Timeout::Error, SystemCallError => e
    fail!("the metrics endpoint did not answer within #{seconds} s: #{e.class}")
  end

  def metric_value(body, name, labels = nil)
    pat = labels ? /^#{name}\{#{Regexp.escape(labels)}\} (\S+)$/ : /^#{name} (\S+)$/
    body[pat, 1]&.to_f
  end

  def test_hostile_tenant
    nobody = Etc.getpwnam("nobody")
    dir = Dir.mktmpdir("rubyprofd-hostile-")
    FileUtils.chmod(0o755, dir)
    tenant = File.join(dir, "tenant")
    FileUtils.mkdir_p(File.join(tenant, "bin"))
    FileUtils.chown_R(nobody.uid, nil, tenant)
    pids = []
    # the tenant's victim: a Ruby spinning in its own script, under its own user
    victim = File.join(tenant, "victim.rb")
    File.write(victim, "Thread.current.name = \"v\\e[31mred\\nline\"\nloop { }\n")
    # 1: a libruby whose .dynsym claims 1 GiB (a few KiB on disk)
    sparse = File.join(tenant, "libruby-sparse.so")
    hostile_sparse_dynsym(sparse, (1 << 30) - (1 << 30) % 24)
    # 2: a stripped Ruby whose .gnu_debuglink names a sparse 200 GB file beside it
    stripped = File.join(tenant, "bin", "fakeruby-stripped")
    FileUtils.cp(fixture("fakeruby-stripped"), stripped)
    File.open(File.join(tenant, "bin", "fakeruby-hidden.debug"), "w") { |f| f.truncate(200 << 30) }
    # 3: within the bound, a 250 MiB debug file: checksummed by the worker, never by the main loop
    stripped2 = File.join(tenant, "bin2", "fakeruby-stripped")
    FileUtils.mkdir_p(File.dirname(stripped2))
    FileUtils.cp(fixture("fakeruby-stripped"), stripped2)
    File.open(File.join(tenant, "bin2", "fakeruby-hidden.debug"), "w") { |f| f.truncate(250 << 20) }
    # 11: a version string with a terminal escape and a newline
    forged = File.join(tenant, "libruby-forged.so")
    hostile_version(forged)
    FileUtils.chown_R(nobody.uid, nil, tenant)
    port = 20000 + rand(20000)
    conf = "rule = cmdline ~ tests/e2e/run\\.rb => ignore\n"
    svc = service(["--interval", "1", "--metrics-address", "127.0.0.1:#{port}", "--rescan-interval", "2"], conf: conf)
    begin
      check(svc.wait_note(/READY=1/, 60), "the service never got ready:\n#{svc.log_text}")
      # 12: started by root by hand, it keeps only what it uses (capability(7) numbers:
      # DAC_READ_SEARCH 2, SYS_PTRACE 19, PERFMON 38, BPF 39, CHECKPOINT_RESTORE 40), for good
      status = File.read("/proc/#{svc.pid}/status")
      want = [2, 19, 38, 39, 40].sum { |b| 1 << b }
      caps = %w[CapEff CapPrm CapBnd CapInh CapAmb].to_h { |k| [k, Integer(status[/^#{k}:\s+(\h+)/, 1], 16)] }
      check(caps.values_at("CapEff", "CapPrm", "CapBnd") == [want] * 3 && caps["CapInh"].zero? && caps["CapAmb"].zero?,
            "the service's capabilities: #{caps.transform_values { |v| v.to_s(16) }.inspect}, want #{want.to_s(16)}")
      check(status[/^NoNewPrivs:\s+(\d)/, 1] == "1", "no_new_privs not set")
      pids << as_nobody(@rt.bin, victim, chdir: tenant)
      svc_wait(svc, "the victim's first profile", 60) { by_service(svc)["victim"] }
      # the inputs, all at once
      ready = (1..2).map { |i| File.join(tenant, "mapped-#{i}") }
      pids << map_as_nobody(sparse, ready[0])
      pids << map_as_nobody(forged, ready[1])
      pids << as_nobody(stripped, File.join(tenant, "fake.out"), chdir: tenant)
      pids << as_nobody(stripped2, File.join(tenant, "fake2.out"), chdir: tenant)
      svc_wait(svc, "the tenant's processes", 30) { ready.all? { |r| File.exist?(r) } }
      # 6: every slot of the endpoint held by a client that sends one byte every 0.5 s
      tricklers = as_nobody(@rt.bin, "-rsocket", "-e", <<~RB, port.to_s)
        socks = Array.new(16) { TCPSocket.new("127.0.0.1", Integer(ARGV[0])) rescue nil }.compact
        loop do
          socks.map! do |s|
            s.write("G"); s
          rescue SystemCallError
            TCPSocket.new("127.0.0.1", Integer(ARGV[0])) rescue nil
          end
          socks.compact!
          sleep 0.5
        end
      RB
      pids << tricklers
      # while it all goes on: every interval a profile of the victim, and scrapes answered
      t_attack = Time.now
      first_seen = svc.profiles.size
      scrapes = []
      until Time.now - t_attack > 12
        _, took = scrape_within(port, 1)
        scrapes << took
        fail!("the service died:\n#{svc.log_text}") if Process.waitpid(svc.pid, Process::WNOHANG)
        sleep 0.5
      end
      body, = scrape_within(port, 1)
      during = svc.profiles.drop(first_seen).count { |meta, _| meta["service"] == "victim" }
      check(during >= 8, "#{during} profiles of the victim in the 12 s of the attack (1 s intervals)")
      hwm = svc.status_of("VmHWM")
      check(hwm < 64 * 1024, "the daemon's peak RSS #{hwm} KiB")
      log = svc.log_text
      # each refusal counted and logged once
      section = metric_value(body, "rubyprofd_refused_objects_total", 'bound="section"').to_i
      file = metric_value(body, "rubyprofd_refused_objects_total", 'bound="file"').to_i
      check(section >= 1 && file >= 1, "refusals counted: section #{section}, file #{file}\n#{log}")
      lines = log.lines.grep(/past the bound/)
      check(lines.grep(/libruby-sparse\.so/).size == 1, "log lines for the sparse .dynsym:\n#{lines.join}")
      check(lines.grep(/fakeruby-hidden\.debug/).size == 1, "log lines for the debug file:\n#{lines.join}")
      # 11: the forged version is named, but with no escape or newline of its own
      forged_lines = log.lines.grep(/libruby-forged|Ruby 3\?/)
      check(log !~ /\e/ && log.lines.none? { |l| l.start_with?("x") }, "raw target bytes in the log:\n#{forged_lines.join}")
      # 10: the victim's thread name reaches the profile cleaned
      _, path = by_service(svc)["victim"].last
      prof = PprofRaw.read(path)
      names = prof.samples.map { |s| s.labels["ruby_thread_name"] }.compact.uniq
      check(names.include?("v?[31mred?line"), "the victim's thread name in #{File.basename(path)}: #{names.inspect}")
      crcs = metric_value(body, "rubyprofd_debug_checksums_total", 'outcome="computed"').to_i
      crc_bytes = metric_value(body, "rubyprofd_debug_checksum_read_bytes_total").to_i
      check(crcs >= 1 && crc_bytes >= 250 << 20, "the 250 MiB debug file's checksum: #{crcs} computed, #{crc_bytes} bytes\n#{log}")
      slowest = metric_value(body, "rubyprofd_discovery_max_seconds").to_f
      timed_out = metric_value(body, "rubyprofd_metrics_clients_timed_out_total").to_i
      evicted = metric_value(body, "rubyprofd_metrics_clients_evicted_total").to_i
      check(Process.kill(0, svc.pid) == 1, "the service is gone")
      format("capabilities %x, no_new_privs; victim: %d profiles in 12 s of attack; %d scrapes, slowest %.2f s; peak RSS %d KiB; " \
             "refused: %d sections, %d files; %d MiB checksummed off the loop, longest discovery %.0f ms; " \
             "slow clients timed out %d, evicted %d; thread name %s",
             want, during, scrapes.size, scrapes.max, hwm, section, file, crc_bytes >> 20, slowest * 1000,
             timed_out, evicted, names.first.inspect)
    ensure
      pids.each { |p| Process.kill("KILL", p) rescue nil }
      pids.each { |p| Process.waitpid(p) rescue nil }
      svc.kill
      FileUtils.rm_rf(dir)
    end
  end
end
