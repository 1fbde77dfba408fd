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
  host_only :test_hostile_tenant, :test_hostile_tenant_mixed, :test_hostile_tenant_wall
  group :service, :test_hostile_tenant, :test_hostile_tenant_mixed, :test_hostile_tenant_wall
  full_only :test_hostile_tenant_mixed, :test_hostile_tenant_wall

  # The daemon's own memory under the inputs (RssAnon + RssShmem, sampled: Service#watch_own_memory)
  # at its peak, at most: the issue's bound. Measured 3.5-6.4 MiB here; VmHWM, 20-60 MiB, also
  # counts the pages of its libraries and of the BPF ring buffer that the kernel has filled.
  PEAK_ANON_KIB = 64 * 1024

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

  # A copy of the host's libruby with n more section headers, relocation tables of 8 MiB that
  # all claim one sparse region behind it: each within the section bound, together n * 8 MiB
  # for libelf to hold (the search for the TLS module id's relocation read every one), the
  # real ones typed otherwise.
  def hostile_relocations(to, n)
    FileUtils.cp(LIBRUBY_HOST, to)
    File.open(to, "r+b") do |f|
      eh = f.read(64)
      shoff = eh[0x28, 8].unpack1("Q<")
      shnum = eh[0x3c, 2].unpack1("S<")
      f.seek(shoff)
      table = f.read(64 * shnum)
      rela = (0...shnum).map { |i| table[64 * i, 64] }.find { |h| h[4, 4].unpack1("L<") == 4 } # SHT_RELA
      size = (8 << 20) - (8 << 20) % 24
      at = (File.size(to) + 63) & ~63
      region = at + 64 * (shnum + n)
      extra = rela.dup
      extra[0x08, 8] = [0].pack("Q<") # flags: not SHF_ALLOC
      extra[0x18, 16] = [region, size].pack("Q<Q<")
      # the real relocation tables no longer say so: the search does not stop at the module
      # id's relocation in them, and reads every one of the tenant's
      (0...shnum).each { |i| table[64 * i + 4, 4] = [1].pack("L<") if table[64 * i + 4, 4].unpack1("L<") == 4 }
      f.seek(at)
      f.write(table + extra * n)
      f.seek(0x28)
      f.write([at].pack("Q<"))
      f.seek(0x3c)
      f.write([shnum + n].pack("S<"))
      f.truncate(region + size)
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

  # The tenant's processes killed, the service ended, the tenant's files gone (a FUSE server's
  # mount first: with its server gone, what waited on it ends, and nothing walks into it).
  def end_tenant(pids, svc, dir, fuse: nil)
    fuse, mnt = fuse
    Process.kill("KILL", fuse) rescue nil if fuse
    pids.each { |p| Process.kill("KILL", p) rescue nil }
    pids.each { |p| Process.waitpid(p) rescue nil }
    svc&.kill
    if fuse
      Process.waitpid(fuse) rescue nil
      system("umount", "-l", mnt, err: File::NULL)
    end
    FileUtils.rm_rf(dir)
  end

  # A FUSE filesystem of the tenant's at mnt (any user can mount one in a user namespace of
  # its own; root mounts it here, with allow_other, for a tenant's process to map): one file,
  # name, with the bytes of backing, which it never serves to root (tests/fixtures/stallfs.c).
  def stallfs(backing, name, mnt)
    FileUtils.mkdir_p(mnt)
    pid = Process.spawn(fixture("stallfs"), backing, name, mnt, out: File::NULL, err: File::NULL)
    deadline = Time.now + 10
    until File.read("/proc/self/mountinfo").include?(" #{mnt} ")
      fail!("stallfs did not mount #{mnt}") if Time.now > deadline || Process.waitpid(pid, Process::WNOHANG)
      sleep 0.05
    end
    pid
  end

  def as_nobody(*cmd, **opts)
    Process.spawn("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *cmd, **opts)
  end

  # A process of the tenant that maps `path` (its first page) and sleeps: what rubyprofd finds
  # at its next look at the host's processes.
  def map_as_nobody(path, ready, times: 1)
    as_nobody("/usr/bin/python3", "-c", <<~PY, path, ready, times.to_s)
      import mmap, sys, time
      f = open(sys.argv[1], "rb")
      # offsets 0 and 8192 in turn: the mappings are never merged into one
      ms = [mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ, offset=(i % 2) * 8192) for i in range(int(sys.argv[3]))]
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
    hostile_tenant([])
  end

  # The same inputs against the wall-clock service: its thread walk reads the same objects and
  # names, and its BPF iterator runs beside them.
  def test_hostile_tenant_wall
    "wall clock: " + hostile_tenant(["--clock", "wall"])
  end

  def hostile_tenant(flags)
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
    # a list of mappings past its bound: 2,000 mappings of a 3 KB path (6 MB of /proc/PID/maps)
    long = File.join(tenant, *Array.new(12) { "d" * 250 })
    FileUtils.mkdir_p(long)
    File.open(File.join(long, "f"), "w") { |f| f.truncate(16384) }
    # 200 relocation tables of 8 MiB in one sparse region (1.6 GB for libelf to hold)
    relocs = File.join(tenant, "libruby-relocs.so")
    hostile_relocations(relocs, 200)
    # 11: a version string with a terminal escape and a newline
    forged = File.join(tenant, "libruby-forged.so")
    hostile_version(forged)
    FileUtils.chown_R(nobody.uid, nil, tenant)
    # a libruby on the tenant's FUSE filesystem, whose server never answers root: an open or a
    # read of rubyprofd's would wait for ever (the kernel ends it for no signal but SIGKILL)
    fuse_mnt = File.join(tenant, "fuse-mnt")
    fuse = stallfs(LIBRUBY_HOST, File.basename(LIBRUBY_HOST), fuse_mnt)
    fuse_lib = File.join(fuse_mnt, File.basename(LIBRUBY_HOST))
    port = 20000 + rand(20000)
    conf = "rule = cmdline ~ tests/e2e/run\\.rb => ignore\n"
    svc = service(["--interval", "1", "--metrics-address", "127.0.0.1:#{port}", "--rescan-interval", "2", *flags], conf: conf)
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
      # the inputs, all at once; from now on the daemon's own memory is sampled for its peak
      svc.watch_own_memory
      ready = (1..5).map { |i| File.join(tenant, "mapped-#{i}") }
      pids << map_as_nobody(relocs, ready[4])
      pids << map_as_nobody(fuse_lib, ready[3])
      pids << map_as_nobody(sparse, ready[0])
      pids << map_as_nobody(forged, ready[1])
      pids << map_as_nobody(File.join(long, "f"), ready[2], times: 2000)
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
      peak = svc.own_memory_peak
      check(peak < PEAK_ANON_KIB, "the daemon's own memory (RssAnon + RssShmem) peaked at #{peak} KiB (VmHWM #{svc.status_of("VmHWM")} KiB)")
      log = svc.log_text
      # each refusal counted and logged once
      section = metric_value(body, "rubyprofd_refused_objects_total", 'bound="section"').to_i
      file = metric_value(body, "rubyprofd_refused_objects_total", 'bound="file"').to_i
      maps = metric_value(body, "rubyprofd_refused_objects_total", 'bound="maps"').to_i
      served = metric_value(body, "rubyprofd_refused_objects_total", 'bound="served_fs"').to_i
      held = metric_value(body, "rubyprofd_refused_objects_total", 'bound="relocations"').to_i
      check(section >= 1 && file >= 1 && maps >= 1 && served >= 1 && held >= 1,
            "refusals counted: section #{section}, file #{file}, maps #{maps}, served_fs #{served}, relocations #{held}\n#{log}")
      # one line for the file (and the process's own "not profiled" line)
      fuse_lines = log.lines.grep(/fuse-mnt/)
      check(fuse_lines.grep(/on a fuse filesystem, which a process serves/).size == 1,
            "log lines for the FUSE file:\n#{fuse_lines.join}")
      lines = log.lines.grep(/past the bound/)
      check(lines.grep(/libruby-sparse\.so/).size == 1, "log lines for the sparse .dynsym:\n#{lines.join}")
      check(lines.grep(/fakeruby-hidden\.debug/).size == 1, "log lines for the debug file:\n#{lines.join}")
      check(lines.grep(/libruby-relocs\.so.*relocation tables/).size == 1, "log lines for the relocation tables:\n#{lines.join}")
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
      format("capabilities %x, no_new_privs; victim: %d profiles in 12 s of attack; %d scrapes, slowest %.2f s; peak own memory %d KiB; " \
             "refused: %d sections, %d files, %d lists of mappings, %d files on FUSE, %d relocation tables; %d MiB checksummed off the loop, longest discovery %.0f ms; " \
             "slow clients timed out %d, evicted %d; thread name %s",
             want, during, scrapes.size, scrapes.max, peak, section, file, maps, served, held, crc_bytes >> 20, slowest * 1000,
             timed_out, evicted, names.first.inspect)
    ensure
      end_tenant(pids, svc, dir, fuse: [fuse, fuse_mnt])
    end
  end

  # The C++ name of the issue's row 5: "_Z1fI1A", then n types B<X, X> whose X is the type before
  # (a back-reference), then "Evv": 286 bytes at n = 26 demangle to 872 MB.
  def demangler_bomb(n)
    ref = ->(id) { id.zero? ? "S_" : "S#{(id - 1).to_s(36).upcase}_" }
    prev = 1
    nxt = 2
    name = +"_Z1fI1A"
    n.times do
      name << "1BI#{ref[prev]}#{ref[prev]}E"
      nxt += 1 # the name B
      prev = nxt
      nxt += 1
    end
    name << "Evv"
  end

  # The tenant's Ruby for the mixed-mode rows, in phases that the test waits for by files:
  # ready) every library mapped, calls into all but libz-a: rubyprofd reports the modules (libz-a
  # by its path) and reads libz-b (whose .gnu_debuglink names a FIFO beside it, row 3), libz-c,
  # libz-d, -e and -f (sparse files of 120 MiB: read in part, never whole) and the bomb's library
  # (row 5), but not libz-a;
  # fifo) libz-a's path is a FIFO now (row 3), and it calls into libz-a too;
  # truncated) from inside libz-c (deflateInit_, whose zalloc calls back into Ruby) libz-c is
  # truncated to 0 bytes (row 4), and the callback spins in Ruby for good, libz-c's frames under it.
  TENANT_MIXED = <<~'RB'
    require "fiddle"
    dir, bomb = ARGV
    lib = ->(n) { File.join(dir, "libz-#{n}.so") }
    # RTLD_DEEPBIND (8): each copy's own calls stay in the copy (crc32 -> crc32_z), not in the
    # host's libz that Ruby may have loaded already
    h = %w[a b c d e f].to_h { |n| [n, Fiddle::Handle.new(lib[n], Fiddle::RTLD_NOW | 8)] }
    crc = ->(n) { Fiddle::Function.new(h[n]["crc32"], [Fiddle::TYPE_LONG, Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT], Fiddle::TYPE_LONG) }
    spin = Fiddle::Function.new(Fiddle.dlopen(File.join(dir, "libbomb.so"))[bomb], [Fiddle::TYPE_LONG], Fiddle::TYPE_LONG)
    buf = "x" * (1 << 20)
    def busy(secs)
      t = Time.now
      yield while Time.now - t < secs
    end
    File.write(File.join(dir, "ready"), "")
    busy(4) { %w[b c d e f].each { |n| crc[n].call(0, buf, buf.bytesize) }; spin.call(3_000_000) }
    File.rename(lib["a"], lib["a"] + ".old")
    File.mkfifo(lib["a"])
    File.write(File.join(dir, "fifo"), "")
    busy(5) { crc["a"].call(0, buf, buf.bytesize); crc["b"].call(0, buf, buf.bytesize); crc["c"].call(0, buf, buf.bytesize); spin.call(3_000_000) }
    class Zalloc < Fiddle::Closure
      def initialize(path, done)
        @path, @done = path, done
        super(Fiddle::TYPE_VOIDP, [Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT, Fiddle::TYPE_INT])
      end

      def call(*)
        File.truncate(@path, 0)
        File.write(@done, "")
        loop { } # never back into the truncated library
      end
    end
    zalloc = Zalloc.new(lib["c"], File.join(dir, "truncated"))
    strm = Fiddle::Pointer.malloc(112)
    strm[0, 112] = "\0" * 112
    strm[64, 8] = [zalloc.to_i].pack("Q<")
    version = Fiddle::Function.new(h["c"]["zlibVersion"], [], Fiddle::TYPE_VOIDP).call.to_s
    init = Fiddle::Function.new(h["c"]["deflateInit_"], [Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT], Fiddle::TYPE_INT)
    init.call(strm, 6, version, 112)
  RB

  # Rows 3-5 with stacks = mixed: as the default-mode test, against a service that unwinds native
  # stacks. The tenant maps copies of libz and a library of its own with the bomb's name, then
  # turns one copy's path into a FIFO, names a FIFO as another's debug file, and truncates a
  # third while its frames are on the stack that is being unwound.
  def test_hostile_tenant_mixed
    nobody = Etc.getpwnam("nobody")
    dir = Dir.mktmpdir("rubyprofd-hostile-mixed-")
    FileUtils.chmod(0o755, dir)
    tenant = File.join(dir, "tenant")
    FileUtils.mkdir_p(tenant)
    pids = []
    victim = File.join(tenant, "victim.rb")
    File.write(victim, "loop { }\n")
    libz = File.realpath("/lib/x86_64-linux-gnu/libz.so.1")
    %w[a b c d e f].each { |n| FileUtils.cp(libz, File.join(tenant, "libz-#{n}.so")) }
    # three copies grown to 120 MiB by a hole: read whole they would take 360 MiB
    %w[d e f].each { |n| File.truncate(File.join(tenant, "libz-#{n}.so"), 120 << 20) }
    debuglink = `readelf -p .gnu_debuglink #{libz}`.b[/\]\s+(\S+\.debug)/n, 1]
    check(debuglink, "#{libz} has no .gnu_debuglink")
    File.mkfifo(File.join(tenant, debuglink))
    bomb = demangler_bomb(26)
    check(bomb.size >= 280, "the bomb is #{bomb.size} bytes")
    File.write(File.join(tenant, "bomb.c"), <<~C)
      long spin(long n) __asm__("#{bomb}");
      long spin(long n) { volatile long x = 0; for (long i = 0; i < n; i++) x += i; return x; }
    C
    out, st = Open3.capture2e("gcc", "-O1", "-shared", "-fPIC", "-o", File.join(tenant, "libbomb.so"), File.join(tenant, "bomb.c"))
    check(st.success?, "gcc: #{out}")
    script = File.join(tenant, "tenant.rb")
    File.write(script, TENANT_MIXED)
    FileUtils.chown_R(nobody.uid, nil, tenant)
    port = 20000 + rand(20000)
    conf = "rule = cmdline ~ tests/e2e/run\\.rb => ignore\n"
    svc = service(["--interval", "1", "--metrics-address", "127.0.0.1:#{port}", "--rescan-interval", "1",
                   "--stacks", "mixed", "--frequency", "97"], conf: conf)
    begin
      check(svc.wait_note(/READY=1/, 60), "the service never got ready:\n#{svc.log_text}")
      pids << as_nobody(@rt.bin, victim, chdir: tenant)
      svc_wait(svc, "the victim's first profile", 60) { by_service(svc)["victim"] }
      t_attack = Time.now
      first_seen = svc.profiles.size
      svc.watch_own_memory
      pids << as_nobody(@rt.bin, script, tenant, bomb, chdir: tenant)
      phases = {}
      scrapes = []
      until Time.now - t_attack > 20
        _, took = scrape_within(port, 1)
        scrapes << took
        fail!("the service died:\n#{svc.log_text}") if Process.waitpid(svc.pid, Process::WNOHANG)
        %w[ready fifo truncated].each { |ph| phases[ph] ||= Time.now - t_attack if File.exist?(File.join(tenant, ph)) }
        sleep 0.5
      end
      check(phases.size == 3, "the tenant's phases reached: #{phases.inspect}")
      body, = scrape_within(port, 1)
      during = svc.profiles.drop(first_seen).count { |meta, _| meta["service"] == "victim" }
      check(during >= 15, "#{during} profiles of the victim in the 20 s of the attack (1 s intervals)")
      check(by_service(svc)["tenant"], "the tenant itself was profiled")
      peak = svc.own_memory_peak
      check(peak < PEAK_ANON_KIB, "the daemon's own memory (RssAnon + RssShmem) peaked at #{peak} KiB (VmHWM #{svc.status_of("VmHWM")} KiB)")
      log = svc.log_text
      counts = %w[not_regular name].to_h { |b| [b, metric_value(body, "rubyprofd_refused_objects_total", "bound=\"#{b}\"").to_i] }
      unwound = metric_value(body, "rubyprofd_native_unwound_total").to_i
      check(counts["not_regular"] >= 2 && counts["name"] >= 1, "refusals counted: #{counts.inspect}\n#{log}")
      lines = log.lines.grep(/not a regular file|past the bound/)
      check(lines.grep(%r{/libz-a\.so"}).size == 1, "log lines for the FIFO at libz-a.so:\n#{lines.join}")
      check(lines.grep(/#{Regexp.escape(debuglink)}/).size == 1, "log lines for the FIFO debug file:\n#{lines.join}")
      check(lines.grep(/libbomb\.so.*C\+\+ name/).size == 1, "log lines for the bomb:\n#{lines.join}")
      # the tenant's own frames: the bomb's kept under its mangled name; libz-a's (its path a
      # FIFO) as offsets in it; libz-c's named after its truncation (the copy read before it)
      frames = by_service(svc)["tenant"].map do |_, path|
        prof = PprofRaw.read(path)
        prof.samples.flat_map { |s| prof.frames(s).map { |l| [l.name, File.basename(l.file.to_s)] } }.uniq
      end
      check(frames.flatten(1).include?([bomb, "libbomb.so"]), "no frame named by the bomb's mangled name")
      check(frames.flatten(1).none? { |n, f| f == "libz-a.so" && !n.start_with?("libz-a.so+0x") },
            "a libz-a.so frame was named: #{frames.flatten(1).select { |_, f| f == "libz-a.so" }.inspect}")
      check(frames.flatten(1).any? { |n, f| f =~ /\Alibz-[def]\.so\z/ && n.start_with?("crc32") },
            "no crc32 frame named in the sparse copies: #{frames.flatten(1).select { |_, f| f =~ /libz-[def]/ }.uniq.inspect}")
      check(frames.last.include?(["deflateInit_", "libz-c.so"]),
            "the last profile has no deflateInit_ of the truncated libz-c.so: #{frames.last.inspect}")
      check(Process.kill(0, svc.pid) == 1, "the service is gone")
      format("victim: %d profiles in 20 s of attack; phases %s; %d scrapes, slowest %.2f s; peak own memory %d KiB; " \
             "refused: %s; %d stacks unwound; ELF bytes held %d",
             during, phases.transform_values { |v| v.round(1) }.inspect, scrapes.size, scrapes.max, peak, counts.inspect,
             unwound, metric_value(body, "rubyprofd_native_elf_bytes").to_i)
    ensure
      end_tenant(pids, svc, dir)
    end
  end
end
