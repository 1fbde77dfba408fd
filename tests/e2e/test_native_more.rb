# SPDX-License-Identifier: GPL-2.0-only
# Mixed stacks' options (docs/native-stacks.md): kernel frames (--kernel-stacks) and native
# stacks of processes that are no Ruby (--native-processes).
require "open3"
require "tmpdir"
require "etc"
require "fileutils"

class E2E
  host_only :test_native_processes, :test_native_kernel_syslog

  KERNEL_FILE = "[kernel.kallsyms]"

  # A script in read(2) and write(2) on a pipe: its samples in the kernel show the kernel's
  # frames (vfs_read under the system call's entry) as the leaves, libc's read under them (with
  # the static helpers it calls, on newer glibc), and IO#sysread under those.
  def test_native_kernel_stacks
    r = profile_script("pipe_syscalls.rb", duration: 6,
                       flags: ["--stacks", "mixed", "--kernel-stacks"])
    prof = r.prof
    kernel = ->(l) { l.file == KERNEL_FILE }
    in_read = r.samples.filter_map do |s|
      frames = prof.frames(s)
      [s, frames] if frames.any? { |l| kernel.(l) && l.name == "vfs_read" }
    end
    got = in_read.sum { |s, _| s.count }
    check(got >= 5, "only #{got}/#{r.total} samples in vfs_read; summary: #{r.stdout[/^kernel:.*/]}")
    good = in_read.select do |_, frames|
      nk = frames.index { |l| !kernel.(l) }
      next false unless nk && frames[nk..].none?(&kernel)
      sysread = frames.index { |l| method?(l, "sysread") && prof.cfunc?(l) }
      # glibc 2.36+ makes the call in a static helper (__internal_syscall_cancel) of read
      libc_read = sysread && frames[nk...sysread].index { |l| l.file =~ %r{/libc[.-]} && l.name =~ /\A(__libc_|__)?read\b/ }
      frames[nk].file =~ %r{/libc[.-]} && libc_read &&
        frames[nk...nk + libc_read].all? { |l| l.file =~ %r{/libc[.-]} } &&
        frames[0...nk].any? { |l| l.name =~ /\Aentry_SYSCALL_64/ }
    end
    n = good.sum { |s, _| s.count }
    best = in_read.max_by { |s, _| s.count }
    check(n >= 0.8 * got,
          "#{n}/#{got} samples in vfs_read show kernel frames over libc's read over IO#sysread; " \
          "most frequent:\n  " + best[1].map { |l| "#{fmt(l, prof)} (#{prof.mappings[l.mapping]})" }.join("\n  "))
    unnamed = r.stdout[/^kernel: .*?(\d+) unnamed/, 1]
    check(unnamed == "0", "kernel frames without a name: #{r.stdout[/^kernel:.*/].inspect}")
    # without the flag, no kernel frame
    path, = rubyprofd("--pid", r.facts["pid"].to_s, "--duration", "2", "--stacks", "mixed")
    plain = PprofRaw.read(path)
    leaked = plain.samples.count { |s| plain.frames(s).any?(&kernel) }
    check(leaked.zero?, "#{leaked} samples with kernel frames without --kernel-stacks")
    "#{n}/#{got} samples in vfs_read under libc's read and IO#sysread; #{r.stdout[/^kernel:.*/]}"
  end

  # A C program built here (CFI only: -fomit-frame-pointer), busy in functions of its own: its
  # native stacks are in the profile with --native-processes all or its pid, never without.
  def test_native_processes
    raise Skip, "no gcc" unless system("command -v gcc >/dev/null 2>&1")
    exe = File.join(@rt.workdir, "rp_spin")
    src = File.join(@rt.workdir, "rp_spin.c")
    File.write(src, <<~C)
      #include <stdint.h>
      volatile uint64_t sink;
      __attribute__((noinline)) void rp_spin_leaf(void)
      {
      	for (int i = 0; i < 1000000; i++)
      		sink += (uint64_t)i * 7;
      }
      __attribute__((noinline)) void rp_spin_middle(void)
      {
      	rp_spin_leaf();
      	sink++;
      }
      int main(void)
      {
      	for (;;)
      		rp_spin_middle();
      }
    C
    out, st = Open3.capture2e("gcc", "-O2", "-fomit-frame-pointer", "-o", exe, src)
    check(st.success?, "gcc failed: #{out}")
    a = Process.spawn(exe, pgroup: true)
    @pids << a
    b = Process.spawn(exe, pgroup: true)
    @pids << b
    spin = ->(prof, pid) do
      prof.samples_of(pid).select do |s|
        names = prof.frames(s).map(&:name)
        names.first(3) == %w[rp_spin_leaf rp_spin_middle main]
      end.sum(&:count)
    end
    # listed: a only
    path, stdout, = rubyprofd("--duration", "4", "--stacks", "mixed", "--native-processes", a.to_s)
    prof = PprofRaw.read(path)
    la, lb = spin.(prof, a), spin.(prof, b)
    all_a = prof.samples_of(a).sum(&:count)
    check(la >= 10 && la >= 0.8 * all_a,
          "listed pid #{a}: #{la}/#{all_a} samples rp_spin_leaf < rp_spin_middle < main; " \
          "#{stdout[/^other processes:.*/]}")
    check(prof.samples_of(b).empty?, "pid #{b} is not listed, yet has #{prof.samples_of(b).size} samples")
    # all: both
    path, stdout, = rubyprofd("--duration", "5", "--stacks", "mixed", "--native-processes", "all")
    prof = PprofRaw.read(path)
    aa, ab = spin.(prof, a), spin.(prof, b)
    check(aa >= 5 && ab >= 5, "--native-processes all: #{aa} and #{ab} samples of the two programs; " \
                              "#{stdout[/^other processes:.*/]}")
    # neither without the flag
    path, = rubyprofd("--duration", "2", "--stacks", "mixed")
    prof = PprofRaw.read(path)
    n = prof.samples_of(a).size + prof.samples_of(b).size
    check(n.zero?, "#{n} samples of programs that are no Ruby without --native-processes")
    "listed: #{la} samples (the other: #{lb}); all: #{aa} and #{ab}; without: none"
  end

  # Kernel frames need CAP_SYSLOG for their names (kernel.kptr_restrict, or perf_event_paranoid
  # above 1, hides /proc/kallsyms's addresses from others): run as nobody with the required
  # capabilities, without it the daemon names the capability and keeps the frames unnamed,
  # counted; with it they have names.
  def test_native_kernel_syslog
    facts = start("pipe_syscalls.rb")
    dir = Dir.mktmpdir("rubyprof-syslog-")
    File.chmod(01777, dir)
    run = lambda do |caps|
      out = File.join(dir, "k-#{rand(1 << 30)}.pb.gz")
      stdout, stderr, st = Open3.capture3(*as_user(Etc.getpwnam("nobody").uid, caps, RUBYPROFD, "--oneshot",
                                                   "--pid", facts["pid"].to_s, "--duration", "3", "--stacks",
                                                   "mixed", "--kernel-stacks", "-o", out))
      check(st.success?, "with #{caps.join(", ")}: exit #{st.inspect}\n#{stderr}")
      [stdout, stderr, PprofRaw.read(out)]
    end
    stdout, stderr, prof = run.(PRIVS_REQUIRED)
    unnamed = stdout[/^kernel: .*?(\d+) unnamed/, 1].to_i
    if File.read("/proc/sys/kernel/kptr_restrict").to_i.positive? ||
       File.read("/proc/sys/kernel/perf_event_paranoid").to_i > 1
      check(stderr =~ /lacks CAP_SYSLOG/, "without CAP_SYSLOG, the warning does not name it:\n#{stderr}")
      check(unnamed.positive?, "without CAP_SYSLOG: #{stdout[/^kernel:.*/].inspect}")
      check(prof.samples.any? { |s| prof.frames(s).any? { |l| l.name == "[unknown kernel function]" } },
            "no [unknown kernel function] frame without CAP_SYSLOG")
    else
      raise Skip, "this kernel shows /proc/kallsyms's addresses to every user"
    end
    stdout, stderr, prof = run.(PRIVS_REQUIRED + ["syslog"])
    check(stderr !~ /CAP_SYSLOG/, "with CAP_SYSLOG, still a warning:\n#{stderr}")
    named = prof.samples.count { |s| prof.frames(s).any? { |l| l.name == "vfs_read" } }
    check(named.positive? && stdout[/^kernel: .*?(\d+) unnamed/, 1] == "0",
          "with CAP_SYSLOG: #{named} samples in vfs_read; #{stdout[/^kernel:.*/].inspect}")
    "without CAP_SYSLOG: #{unnamed} unnamed frames and the warning; with it: #{named} samples in vfs_read"
  ensure
    FileUtils.rm_rf(dir) if dir
  end
end
