# SPDX-License-Identifier: GPL-2.0-only
# Least privilege (issue 10, item 6): rubyprofd as an unprivileged user (nobody) with exactly the
# capabilities the README lists profiles a Ruby of another unprivileged user (daemon); without
# each of them it stops with a message naming it. CAP_CHECKPOINT_RESTORE is needed only to read a
# libruby that was deleted or replaced on disk (through /proc/PID/map_files).
require "etc"

class E2E
  host_only :test_least_privilege

  PRIVS_REQUIRED = %w[bpf perfmon sys_ptrace dac_read_search].freeze

  def setpriv_bin
    ENV["PATH"].split(":").map { |d| File.join(d, "setpriv") }.find { |f| File.executable?(f) } or
      raise(Skip, "setpriv (util-linux) is missing")
  end

  # argv running cmd as uid/gid with exactly caps (names as setpriv takes them, "bpf") in every set
  def as_user(uid, caps, *cmd)
    set = (["-all"] + caps.map { |c| "+#{c}" }).join(",")
    [setpriv_bin, "--reuid=#{uid}", "--regid=#{uid}", "--clear-groups", "--inh-caps=#{set}",
     "--ambient-caps=#{set}", "--bounding-set=#{set}", *cmd]
  end

  # Starts a spinning Ruby as user `daemon`, with libruby from libdir when given; returns its pid.
  def other_users_ruby(libdir = nil)
    env = libdir ? { "LD_LIBRARY_PATH" => libdir } : {}
    pid = Process.spawn(env, *as_user(Etc.getpwnam("daemon").uid, [], "ruby", "-e",
                                      "def privs_spin = loop { 1 + 1 }; privs_spin"), pgroup: true)
    @pids << pid
    deadline = Time.now + 30
    until (File.read("/proc/#{pid}/maps") rescue "").include?("libruby")
      fail!("the Ruby of user daemon did not start") if Time.now > deadline
      sleep 0.05
    end
    sleep 0.5 # past its boot
    pid
  end

  # rubyprofd --oneshot as nobody with caps, profiling pid; [status, stderr, profile or nil]
  def profile_as_nobody(dir, caps, pid)
    out = File.join(dir, "privs-#{rand(1 << 30)}.pb.gz")
    _, stderr, st = Open3.capture3(*as_user(Etc.getpwnam("nobody").uid, caps, RUBYPROFD, "--oneshot",
                                            "--pid", pid.to_s, "--duration", "3", "-o", out))
    [st, stderr, File.exist?(out) ? PprofRaw.read(out) : nil]
  end

  def spin_samples(prof, pid)
    prof ? prof.samples_of(pid).select { |s| prof.frames(s).any? { |l| method?(l, "privs_spin") } }.sum(&:count) : 0
  end

  def test_least_privilege
    dir = Dir.mktmpdir("rubyprof-privs-")
    File.chmod(01777, dir) # nobody writes its profile here
    pid = other_users_ruby

    # exactly the README's capabilities: another user's Ruby profiled
    st, stderr, prof = profile_as_nobody(dir, PRIVS_REQUIRED, pid)
    check(st.success?, "with #{PRIVS_REQUIRED.join(", ")}: exit #{st.inspect}\n#{stderr}")
    n = spin_samples(prof, pid)
    check(n >= 10, "only #{n} samples in privs_spin of user daemon's Ruby:\n#{stderr}")

    # without each one: a message naming it, a non-zero exit, no crash
    PRIVS_REQUIRED.each do |cap|
      st, stderr, = profile_as_nobody(dir, PRIVS_REQUIRED - [cap], pid)
      name = "CAP_#{cap.upcase}"
      check(!st.success? && st.exited?, "without #{name}: #{st.inspect}\n#{stderr}")
      check(stderr =~ /missing capabilities: #{name} \(/, "without #{name}, the message does not name it:\n#{stderr}")
    end

    # CAP_CHECKPOINT_RESTORE: a Ruby whose libruby was deleted after it started is read through
    # /proc/PID/map_files, which the kernel opens only with this capability (or CAP_SYS_ADMIN)
    lib = File.read("/proc/self/maps")[%r{ (/\S*/libruby[^/\s]*)$}, 1] or raise(Skip, "no shared libruby")
    libdir = File.join(dir, "lib")
    Dir.mkdir(libdir)
    File.chmod(0755, libdir)
    FileUtils.cp(lib, File.join(libdir, RbConfig::CONFIG["LIBRUBY_SONAME"]))
    pid2 = other_users_ruby(libdir)
    FileUtils.rm_rf(libdir)
    st, stderr, prof = profile_as_nobody(dir, PRIVS_REQUIRED, pid2)
    without = spin_samples(prof, pid2)
    check(!st.success? && without.zero?,
          "a deleted libruby was read without CAP_CHECKPOINT_RESTORE (#{without} samples): the README " \
          "should not ask for it\n#{stderr}")
    st, stderr, prof = profile_as_nobody(dir, PRIVS_REQUIRED + ["checkpoint_restore"], pid2)
    with = spin_samples(prof, pid2)
    check(st.success? && with >= 10, "a deleted libruby with CAP_CHECKPOINT_RESTORE: #{with} samples, " \
          "#{st.inspect}\n#{stderr}")
    "nobody with #{PRIVS_REQUIRED.map { |c| "CAP_#{c.upcase}" }.join(", ")}: #{n} samples of user " \
      "daemon's Ruby; each one missing is named; a deleted libruby: 0 samples without " \
      "CAP_CHECKPOINT_RESTORE, #{with} with it"
  ensure
    FileUtils.rm_rf(dir) if dir
  end
end
