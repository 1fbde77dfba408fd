# SPDX-License-Identifier: GPL-2.0-only
# Rubies where fleets run them: a static Ruby (TLS in the executable), a Ruby version rubyprofd does
# not know, libruby dlopen'ed by a host program that is not ruby, a stripped Ruby whose symbols are
# in a separate debug file inside a chroot, a Ruby in its own pid namespace, and M:N threads.
require "fileutils"
require "tmpdir"

class E2E
  host_only :test_static_ruby, :test_unknown_minor_version, :test_dlopen_host, :test_debug_file, :test_musl_ruby
  smoke :test_mn_threads, :test_discovery_paths

  # A fixture executable built by make (the FIXTURES list of the Makefile).
  private def fixture(name)
    path = File.join(BUILD, "fixtures", name)
    fail!("fixture #{path} is missing: run make #{path}") unless File.file?(path)
    path
  end

  private def which(tool)
    ENV["PATH"].split(":").map { |d| File.join(d, tool) }.find { |f| File.executable?(f) }
  end

  # Spawns argv in its own process group (killed after the test) and waits until it writes `out`.
  private def launch(argv, out, env: {}, timeout: 30)
    pid = Process.spawn(env, *argv, pgroup: true)
    @pids << pid
    deadline = Time.now + timeout
    until File.exist?(out)
      if Process.waitpid(pid, Process::WNOHANG)
        @pids.delete(pid)
        fail!("#{argv.join(" ")} exited with #{$?.exitstatus} before it was ready")
      end
      fail!("#{argv.join(" ")} not ready after #{timeout} s") if Time.now > deadline
      sleep 0.05
    end
    pid
  end

  # What tests/fixtures/fakeruby.c says Ruby would report for its fake VM.
  private def fake_facts(path)
    facts = { "frames" => [] }
    File.readlines(path, chomp: true).each do |line|
      case line
      when /\Apid (\d+)\z/ then facts["pid"] = Integer($1)
      when /\Aversion (\S+)\z/ then facts["version"] = $1
      when /\Aframe ([^\t]*)\t([^\t]*)\t(\d+)\t(ruby|cfunc)\z/
        facts["frames"] << { "label" => $1, "path" => $2, "lineno" => Integer($3), "cfunc" => $4 == "cfunc" }
      else fail!("#{path}: unexpected line #{line.inspect}")
      end
    end
    fail!("#{path}: no pid or no frames") unless facts["pid"] && !facts["frames"].empty?
    facts
  end

  # Frame by frame as same? (run.rb) compares them, and C or Ruby where the facts say.
  private def same_stack?(prof, frames, want)
    frames.size == want.size && frames.zip(want).all? do |f, w|
      same?(f, w) && (!w.key?("cfunc") || prof.cfunc?(f) == w["cfunc"])
    end
  end

  # Every one of pid's samples (at least min_total) holds exactly the stack `want`, leaf first:
  # each target spins on one line that allocates nothing, after it recorded its stack, so no
  # sample is excused (GC, another thread, a torn read would each be a bug here). Returns
  # [matching, total].
  private def check_exact_stack(prof, pid, want, min_total:)
    samples = prof.samples_of(pid)
    total = samples.sum(&:count)
    check(total >= min_total, "only #{total} samples of pid #{pid}")
    matching = samples.select { |s| same_stack?(prof, prof.frames(s), want) }.sum(&:count)
    best = samples.max_by(&:count)
    check(matching == total,
          "#{matching}/#{total} samples hold the expected stack:\n  #{show(want)}" \
          "\nmost frequent stack:\n  " + prof.frames(best).map { |l| fmt(l, prof) }.join("\n  "))
    [matching, total]
  end

  # rubyprofd's -v line saying how it found the execution context, symbols and rb_vm_exec.
  private def how_line(stderr, pid)
    stderr[/pid #{pid}: execution context: .*/] or fail!("no discovery line for pid #{pid} in:\n#{stderr}")
  end

  # A static Ruby: the VM and ruby_current_ec in the executable itself (TLS module 1, reached at a
  # constant offset from the thread pointer), no libruby. The fake VM has the exact 3.1 layout.
  def test_static_ruby
    out = File.join(@rt.workdir, "fake-static-#{rand(1 << 30)}")
    pid = launch([fixture("fakeruby-static"), out], out)
    facts = fake_facts(out)
    check(facts["pid"] == pid, "fixture says pid #{facts["pid"]}, spawned #{pid}")
    maps = File.read("/proc/#{pid}/maps")
    check(maps !~ /libruby/, "the static fixture maps a libruby")
    path, _, stderr, = rubyprofd("-v", "--pid", pid.to_s, "--duration", "3")
    how = how_line(stderr, pid)
    check(how =~ /ruby_current_ec \(\.dynsym, TLS module 1, offset 0\), static TLS at fsbase-\d+/,
          "unexpected discovery path: #{how}")
    check(how =~ /ruby_global_symbols \(\.dynsym\)/ && how =~ /rb_vm_exec \(\.dynsym\)/, "unexpected symbols: #{how}")
    matching, total = check_exact_stack(PprofRaw.read(path), pid, facts["frames"], min_total: 20)
    "#{matching}/#{total} samples, #{facts["frames"].size} frames; #{how[/static TLS at fsbase-\d+/]}"
  end

  # The static fake Ruby run by musl libc (Alpine's layout): musl's thread descriptor also keeps
  # the DTV at fsbase+8, but with 8-byte entries and the module count in dtv[0]; the EC is read
  # through it (musl does not say whether a module's block lies in the static area).
  def test_musl_ruby
    bin = File.join(BUILD, "fixtures", "fakeruby-musl")
    raise Skip, "musl-gcc is not installed (Debian's musl-tools): #{bin} not built" unless File.file?(bin)
    out = File.join(@rt.workdir, "fake-musl-#{rand(1 << 30)}")
    pid = launch([bin, out], out)
    facts = fake_facts(out)
    check(File.read("/proc/#{pid}/maps") =~ %r{-linux-musl/libc\.so|/ld-musl-}, "musl is not mapped in the fixture")
    path, _, stderr, = rubyprofd("-v", "--pid", pid.to_s, "--duration", "3")
    how = how_line(stderr, pid)
    check(how =~ /ruby_current_ec \(\.dynsym, TLS module 1, offset 0\), through musl's DTV/,
          "unexpected discovery path: #{how}")
    matching, total = check_exact_stack(PprofRaw.read(path), pid, facts["frames"], min_total: 10)
    "#{matching}/#{total} samples, #{facts["frames"].size} frames; through musl's DTV"
  end

  # A Ruby version rubyprofd does not know: one line naming pid, version and reason, no profile,
  # a non-zero exit.
  def test_unknown_minor_version
    out = File.join(@rt.workdir, "fake-unknown-#{rand(1 << 30)}")
    pid = launch([fixture("fakeruby-unknown"), out], out)
    check(fake_facts(out)["version"] == "3.9.0", "the fixture does not claim 3.9.0")
    path, stdout, stderr, st = rubyprofd("--pid", pid.to_s, "--duration", "1", expect_success: false)
    check(!st.success?, "exit status 0 for a Ruby it cannot profile:\n#{stderr}#{stdout}")
    lines = stderr.lines.grep(/\bpid #{pid}\b/)
    check(lines.size == 1, "expected one line about pid #{pid}, got:\n#{stderr}")
    check(lines[0] =~ /Ruby 3\.9\.0 is not supported/, "the line does not give version and reason: #{lines[0]}")
    check(stderr =~ /no Ruby process found/, "stderr does not say that nothing was profiled:\n#{stderr}")
    check(!File.exist?(path), "a profile was written anyway")
    "exit #{st.exitstatus}: #{lines[0].strip}"
  end

  # libruby loaded with dlopen by a program that is neither named ruby nor linked with libruby: its
  # TLS block is allocated on first use, so the EC is reached through the DTV.
  def test_dlopen_host
    host = fixture("dlhost")
    script = @rt.script("exact_stack.rb")
    out = File.join(@rt.workdir, "facts-dlhost-#{rand(1 << 30)}")
    pid = launch([host, script, out], out)
    facts = Marshal.load(File.binread(out))
    check(facts["pid"] == pid, "Ruby says pid #{facts["pid"]}, spawned #{pid}")
    exe = File.readlink("/proc/#{pid}/exe")
    check(File.basename(exe) !~ /ruby/, "the host is named like ruby: #{exe}")
    check(`ldd #{host}` !~ /libruby/, "#{host} is linked with libruby")
    check(File.read("/proc/#{pid}/maps") =~ /libruby/, "libruby is not mapped in the host")
    path, _, stderr, = rubyprofd("-v", "--pid", pid.to_s, "--duration", "4")
    how = how_line(stderr, pid)
    check(how =~ /ruby_current_ec \(\.dynsym, TLS module (\d+), offset 0x8\), through the DTV/,
          "the EC is not reached through the DTV: #{how}")
    modid = $1
    matching, total = check_exact_stack(PprofRaw.read(path), pid, facts["frames"], min_total: 20)
    "#{matching}/#{total} samples, #{facts["frames"].size} frames; TLS module #{modid}, through the DTV"
  end

  # Copies an executable and the libraries it needs (ldd) into root, at the same paths.
  private def mini_root(root, exe, dst)
    FileUtils.mkdir_p([File.join(root, "tmp"), File.join(root, File.dirname(dst))])
    FileUtils.cp(exe, File.join(root, dst))
    `ldd #{exe}`.scan(%r{(/\S+) \(0x\h+\)}).flatten.each do |lib|
      FileUtils.mkdir_p(File.join(root, File.dirname(lib)))
      FileUtils.cp(File.realpath(lib), File.join(root, lib))
    end
  end

  # A stripped Ruby whose VM globals are hidden (as in 3.3+): recognized in code alone, then with
  # its separate debug file, inside the process's root (a chroot here), found by build id, then by
  # .gnu_debuglink.
  def test_debug_file
    root = Dir.mktmpdir("rubyprof-root-")
    bin = fixture("fakeruby-stripped")
    debug = fixture("fakeruby-hidden.debug")
    build_id = `readelf -n #{bin}`[/Build ID: (\h+)/, 1] or fail!("#{bin} has no build id")
    exe = "/opt/fake/bin/fakeruby-stripped"
    mini_root(root, bin, exe)
    out = "/tmp/facts-#{rand(1 << 30)}"
    pid = launch(["chroot", root, exe, out], File.join(root, out))
    facts = fake_facts(File.join(root, out))
    results = []

    # Nothing but the stripped file (a static Ruby 3.3+ as built): the EC from rb_thread_current's
    # local-exec TLS access (mov %fs:DISP), validated on the live threads; the stack still exact.
    path, _, stderr, = rubyprofd("-v", "--pid", pid.to_s, "--duration", "3")
    how = how_line(stderr, pid)
    check(how =~ /execution context: rb_thread_current code \(local-exec TLS, fsbase-\d+\), static TLS at fsbase-\d+/,
          "without its debug file: #{how}")
    # without ruby_global_symbols, C functions are named as such, but not by their names
    check(how =~ /symbols: not found: C functions stay unnamed/, "symbols found in a stripped file: #{how}")
    want = facts["frames"].map { |f| f["cfunc"] ? f.merge("label" => "[unknown C function]") : f }
    matching, total = check_exact_stack(PprofRaw.read(path), pid, want, min_total: 20)
    results << "stripped, local-exec: #{matching}/#{total}"

    # Under the root's /usr/lib/debug/.build-id, then in the object's .debug/ directory.
    by_id = "/usr/lib/debug/.build-id/#{build_id[0, 2]}/#{build_id[2..]}.debug"
    [[by_id, "build id"], ["/opt/fake/bin/.debug/fakeruby-hidden.debug", ".gnu_debuglink"]].each do |where, how_found|
      FileUtils.rm_rf(File.join(root, "usr/lib/debug"))
      FileUtils.mkdir_p(File.join(root, File.dirname(where)))
      FileUtils.cp(debug, File.join(root, where))
      path, _, stderr, = rubyprofd("-v", "--pid", pid.to_s, "--duration", "3")
      how = how_line(stderr, pid)
      from = %(.symtab of debug file "#{where}", found by #{how_found})
      ["ruby_current_ec (#{from}, TLS module 1", "ruby_global_symbols (#{from})", "rb_vm_exec (#{from})"].each do |want|
        check(how.include?(want), "expected #{want.inspect} in: #{how}")
      end
      matching, total = check_exact_stack(PprofRaw.read(path), pid, facts["frames"], min_total: 20)
      FileUtils.rm_f(File.join(root, where))
      results << "#{how_found}: #{matching}/#{total}"
    end
    results.join(", ")
  ensure
    stop_all
    FileUtils.rm_rf(root) if root
  end

  # The host pid of pid `nspid` of the namespace that unshare (host pid `upid`) created.
  private def host_pid_in_namespace(upid, nspid)
    Dir["/proc/[0-9]*/status"].each do |f|
      status = File.read(f) rescue next
      next unless status[/^PPid:\s+(\d+)/, 1].to_i == upid
      ids = status[/^NSpid:\s+(.*)$/, 1].to_s.split.map(&:to_i)
      return ids.first if ids.size >= 2 && ids.last == nspid
    end
    fail!("no child of #{upid} is pid #{nspid} in a pid namespace")
  end

  # A Ruby in its own pid namespace (and, for Debian's other Rubies, in their chroot): samples carry
  # the host pid and the namespaced pid, and the stack is still exact.
  def test_pid_namespace
    unshare = which("unshare") or raise Skip, "unshare (util-linux) is missing"
    script = @rt.script("exact_stack.rb")
    out = File.join(@rt.workdir, "facts-ns-#{rand(1 << 30)}")
    ruby = [@rt.bin, @rt.inside(script), @rt.inside(out)]
    # --mount-proc mounts the namespace's /proc in a private mount namespace; a chrooted Ruby looks
    # for it under its root, hence --mount-proc=ROOT/proc (a bare --mount-proc before chroot leaves
    # the root's /proc empty).
    argv = if @rt.root
             [unshare, "--pid", "--fork", "--mount-proc=#{File.join(@rt.root, "proc")}", "chroot", @rt.root, *ruby]
           else
             [unshare, "--pid", "--fork", "--mount-proc", *ruby]
           end
    upid = launch(argv, out)
    facts = Marshal.load(File.binread(out))
    pid = host_pid_in_namespace(upid, facts["pid"])
    check(pid != facts["pid"], "Ruby's pid #{pid} is the same in its namespace")
    path, = rubyprofd("--pid", pid.to_s, "--duration", "4")
    prof = PprofRaw.read(path)
    samples = prof.samples_of(pid)
    ns = samples.map { |s| s.labels["ns_pid"] }.uniq
    check(ns == [facts["pid"].to_s], "ns_pid labels #{ns.inspect}, Ruby says its pid is #{facts["pid"]}")
    matching, total = check_exact_stack(prof, pid, facts["frames"], min_total: 20)
    "pid #{pid}, ns_pid #{facts["pid"]}: #{matching}/#{total} samples, #{facts["frames"].size} frames"
  end

  # M:N threads (Ruby 3.3+, RUBY_MN_THREADS=1): Ruby threads run on shared native threads, so a tid
  # says nothing about the Ruby thread. Each sample must still hold one Ruby thread's own frames.
  def test_mn_threads
    version = @rt.version
    raise Skip, "M:N threads exist from Ruby 3.3 (this is #{version})" if Gem::Version.new(version) < Gem::Version.new("3.3")
    facts = start("threads.rb", env: { "RUBY_MN_THREADS" => "1" })
    pid = facts["pid"]
    natives = Dir["/proc/#{pid}/task/*"].size
    path, = rubyprofd("--pid", pid.to_s, "--duration", "6")
    prof = PprofRaw.read(path)
    samples = prof.samples_of(pid)
    total = samples.sum(&:count)
    check(total >= 20, "only #{total} samples")
    names = %w[alpha beta gamma]
    spinning = samples.select { |s| prof.frames(s).any? { |l| l.name =~ /\bspin_(#{names.join("|")})\b/ } }
    spin_total = spinning.sum(&:count)
    # every sample but those of a native thread inside M:N's scheduler, between two Ruby threads:
    # it has no execution context then ("[no Ruby context]"; 1-2 in 240-290 samples, counted)
    between = samples.select { |s| prof.frames(s).map(&:name) == ["[no Ruby context]"] }.sum(&:count)
    odd = samples.find { |s| prof.frames(s).none? { |l| l.name =~ /\bspin_(#{names.join("|")})\b/ || l.name == "[no Ruby context]" } }
    check(spin_total + between == total, "only #{spin_total}/#{total} samples in a spin_* method, #{between} with no Ruby context; " \
                                         "first other:\n  " + (odd ? prof.frames(odd).map { |l| fmt(l, prof) }.join("\n  ") : ""))
    shares = names.map do |name|
      mine = spinning.select { |s| prof.frames(s).any? { |l| l.name =~ /\bspin_#{name}\b/ } }
      mine.each do |s|
        others = prof.frames(s).map { |l| l.name[/\bspin_(\w+)\b/, 1] }.compact.uniq - [name]
        check(others.empty?, "a sample of spin_#{name} also holds spin_#{others.join(", spin_")}: " +
              prof.frames(s).map { |l| fmt(l, prof) }.join(" < "))
      end
      share = 100.0 * mine.sum(&:count) / spin_total
      check((share - 100.0 / 3).abs <= 10, "spin_#{name} has #{share.round(1)} % of the samples")
      tids = mine.group_by { |s| s.labels["tid"] }.transform_values { |v| v.sum(&:count) }
      [name, share.round(1), tids]
    end
    all_tids = shares.flat_map { |_, _, t| t.keys }
    shared = all_tids.size != all_tids.uniq.size
    "#{natives} native threads; " + shares.map { |n, s, t| "#{n} #{s}% on tids #{t.map { |k, v| "#{k}(#{v})" }.join(" ")}" }.join(", ") +
      (shared ? "; Ruby threads share tids" : "; no tid shared") + "; #{between} with no Ruby context"
  end
end

class E2E
  # What discovery found in this Ruby, and by which path (-v): the execution context, the global
  # symbol table (C function names), rb_vm_exec and the GC flags, on stripped builds too.
  def test_discovery_paths
    facts = start("exact_stack.rb")
    pid = facts["pid"]
    _, _, stderr, = rubyprofd("--pid", pid.to_s, "--duration", "1", "-v")
    line = how_line(stderr, pid)
    check(line !~ /not found|not validated/, "something was not found: #{line}")
    check(line =~ /symbols: (ruby_global_symbols|global_symbols|rb_sym_all_symbols)/, "symbols: #{line}")
    check(line =~ /rb_vm_exec \(/, "rb_vm_exec: #{line}")
    check(line =~ /GC flags at objspace\+\d+/, "GC flags: #{line}")
    line.sub(/.*execution context: /, "")
  end
end
