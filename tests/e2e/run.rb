# SPDX-License-Identifier: GPL-2.0-only
# End-to-end tests: real Ruby processes profiled by rubyprofd, profiles read back with
# `go tool pprof -raw`, frames compared with what Ruby says of itself in the same process.
#
#   ruby tests/e2e/run.rb BUILD_DIR [TEST_NAME_PATTERN]
#
# Needs root (BPF). Prints PASS/FAIL/SKIP per test with its duration as each ends (several run
# at once: RP_E2E_JOBS, at the end of this file), the total and the slowest 10 tests, and ends
# with "e2e: N passed, N failed, N skipped". RP_E2E_SET chooses the tests (quick: `make test`).
# RP_SUITE names the suite in that line instead of "e2e" (tests/run-all.sh: "asan-e2e").
#
# RP_SANITIZED=1 (a rubyprofd built with SANITIZE=...): every rubyprofd a test starts writes its
# sanitizer reports into a directory of that test's (log_path), and a test during which a report
# appeared fails with it, whatever the test itself checked of that process's exit status and
# stderr.
require "etc"
require "fileutils"
require "socket"
require "tmpdir"
require "timeout"
require_relative "pprof_raw"

BUILD = File.expand_path(ARGV.fetch(0, "build"))
FILTER = ARGV[1] ? Regexp.new(ARGV[1]) : nil
RUBYPROFD = File.join(BUILD, "rubyprofd")
SCRIPTS = File.expand_path("scripts", __dir__)

CLK_TCK = Etc.sysconf(Etc::SC_CLK_TCK)

class Skip < StandardError; end
class Failure < StandardError; end

# Where the sanitizers write their reports, named <dir>/report.<pid>; nil when not sanitized. The
# directory is world-writable: test_not_root runs rubyprofd as nobody.
SAN_DIR = if ENV["RP_SANITIZED"] == "1"
  Dir.mktmpdir("rubyprof-san-").tap do |dir|
    File.chmod(01777, dir)
    %w[ASAN_OPTIONS UBSAN_OPTIONS].each do |var|
      ENV[var] = [ENV[var], "log_path=#{dir}/report"].compact.reject(&:empty?).join(":")
    end
    at_exit { FileUtils.rm_rf(dir) }
  end
end

# A Ruby to run the test scripts with: the host's, or one in a debootstrap root (tests/e2e/mkroot.sh).
class RubyRuntime
  attr_reader :name, :root, :bin

  def initialize(name, root: nil, bin: "ruby")
    @name, @root, @bin = name, root, bin
  end

  def version = name.delete_prefix("ruby-")

  # Directory for scripts and outputs, and the same directory as the Ruby process sees it.
  def workdir
    @workdir ||= begin
      base = root ? File.join(root, "tmp") : Dir.tmpdir
      Dir.mktmpdir("rubyprof-e2e-", base)
    end
  end

  def inside(path)
    root ? path.delete_prefix(root) : path
  end

  # Copies the test scripts into workdir (once); returns the path of `name` there.
  def script(name)
    @copied ||= Dir[File.join(SCRIPTS, "*.rb")].each { |f| FileUtils.cp(f, workdir) }
    File.join(workdir, name)
  end

  # argv that runs a script (a path in workdir) with this Ruby
  def argv(script, *args, env: {}, ruby_opts: [])
    cmd = [bin, *ruby_opts, inside(script), *args.map { |a| a.start_with?(workdir) ? inside(a) : a }]
    cmd = ["chroot", root, *cmd] if root
    env.empty? ? cmd : ["env", *env.map { |k, v| "#{k}=#{v}" }, *cmd]
  end

  def cleanup
    FileUtils.rm_rf(@workdir) if @workdir
  end
end

class E2E
  # Tests that do not depend on the Ruby version run once, with the host's Ruby.
  HOST_ONLY = []
  def self.host_only(*names) = HOST_ONLY.concat(names)

  # The smoke set: what `make test` runs on each Debian root (the host's Ruby runs every test).
  # The whole matrix, every test on every root, is the full suite's.
  SMOKE = []
  def self.smoke(*names) = SMOKE.concat(names)

  # Tests that only the full suite runs (`make test-rest` too), even on the host's Ruby: the
  # `stacks = mixed` and `clock = wall` variants of a test that `make test` runs in the default
  # mode.
  FULL_ONLY = []
  def self.full_only(*names) = FULL_ONLY.concat(names)

  # Tests that run alone, no other test beside them: they load both CPUs on purpose (10 kHz,
  # thousands of threads or processes) or change what the whole host sees (ns_last_pid).
  EXCLUSIVE = []
  def self.exclusive(*names) = EXCLUSIVE.concat(names)

  # Tests of one group run one at a time (beside tests of other groups). :service: a
  # system-wide service, which profiles every Ruby on the host and names each by its app; two
  # of them would each see the other's apps under the same names.
  GROUPS = {}
  def self.group(name, *names) = names.each { |n| GROUPS[n] = name }

  def initialize(runtime)
    @rt = runtime
    @pids = []
  end

  def fail!(msg) = raise(Failure, msg)
  def check(cond, msg) = (cond or fail!(msg))

  # Starts a script that writes its facts (Marshal) to a file, and waits for them.
  def start(script, *args, env: {}, ruby_opts: [], timeout: 30)
    out = File.join(@rt.workdir, "facts-#{script}-#{rand(1 << 30)}")
    pid = Process.spawn(*@rt.argv(@rt.script(script), out, *args, env: env, ruby_opts: ruby_opts),
                        pgroup: true)
    @pids << pid
    deadline = Time.now + timeout
    until File.exist?(out)
      if Process.waitpid(pid, Process::WNOHANG)
        @pids.delete(pid)
        fail!("#{script} exited with #{$?.exitstatus} before it was ready")
      end
      fail!("#{script} not ready after #{timeout} s") if Time.now > deadline
      sleep 0.05
    end
    # where the script waits for its go (wait_for_go in scripts/common.rb)
    Marshal.load(File.binread(out)).merge("go" => "#{out}.go")
  end

  # Tells a script started by `start` to go on (see wait_for_go).
  def go(facts) = FileUtils.touch(facts.fetch("go"))

  # Kills what the test started: the process group of each (most are spawned with pgroup: true),
  # and the process itself where it has no group of its own.
  def stop_all
    @pids.each do |pid|
      Process.kill("KILL", -pid) rescue nil
      Process.kill("KILL", pid) rescue nil
      Process.waitpid(pid) rescue nil
    end
    @pids.clear
  end

  # The CPU seconds a process has used (user + system, every thread, those that ended too: its
  # /proc/PID/stat), or one thread of it (pid: [PID, TID]); nil once it is gone.
  def cpu_seconds(pid)
    stat = pid.is_a?(Array) ? "/proc/#{pid[0]}/task/#{pid[1]}/stat" : "/proc/#{pid}/stat"
    fields = File.read(stat).split(") ", 2)[1].split
    (Integer(fields[11]) + Integer(fields[12])).fdiv(CLK_TCK)
  rescue SystemCallError, NoMethodError
    nil
  end

  # The threads of pid by their kernel names (/proc/PID/task/TID/comm, which Ruby sets from
  # Thread#name): name => [pid, tid], for cpu_seconds.
  def threads_by_name(pid)
    Dir["/proc/#{pid}/task/*"].to_h { |t| [(File.read("#{t}/comm").strip rescue ""), [pid, Integer(File.basename(t))]] }
  end

  # scripts/NAME profiled by --oneshot from start to end, its facts written to NAME's "-facts"
  # file: the facts, the profile read back, the daemon's stderr.
  def oneshot_facts(name)
    facts_path = File.join(@rt.workdir, name.sub(/\.rb\z/, "-facts"))
    path, _, stderr, = rubyprofd("--", *@rt.argv(@rt.script(name), facts_path))
    [Marshal.load(File.binread(facts_path)), PprofRaw.read(path), stderr]
  end

  # The block's value once truthy, polled until a generous deadline; past it the test fails,
  # with the service's log when svc is given.
  def wait_for(what, timeout = 60, svc = nil)
    deadline = Time.now + timeout
    until (v = yield)
      fail!("#{what}: not after #{timeout} s\n#{svc&.log_text}") if Time.now > deadline
      sleep 0.2
    end
    v
  end

  # Waits until pid has used `secs` seconds of CPU more than now: the target's own progress, not
  # the clock's (on a busy machine a second of the clock may be a tenth of one on a CPU).
  def wait_cpu(pid, secs, timeout: 60)
    c0 = cpu_seconds(pid) or fail!("pid #{pid} is gone")
    deadline = Time.now + timeout
    until (c = cpu_seconds(pid).tap { |x| x or fail!("pid #{pid} is gone") }) - c0 >= secs
      fail!("pid #{pid} used only #{(c - c0).round(2)} s of CPU in #{timeout} s") if Time.now > deadline
      sleep 0.02
    end
    c - c0
  end

  # A notify socket (sd_notify(3)) on the host's /tmp: a socket path may be 107 bytes at most,
  # and a root's workdir is long.
  def notify_socket
    path = File.join(Dir.tmpdir, "rp-notify-#{Process.pid}-#{rand(1 << 30)}.sock")
    sock = Socket.new(:UNIX, :DGRAM)
    sock.bind(Socket.sockaddr_un(path))
    [sock, path]
  end

  # Waits for READY=1 on sock while thread w (a process's waiter) lives; the time it came, or
  # nil when the process ended first.
  def wait_ready(sock, w, timeout: 60)
    deadline = Time.now + timeout
    while w.alive? && Time.now < deadline
      next unless IO.select([sock], nil, nil, 0.05)

      msg, = sock.recvfrom(4096)
      return Time.now if msg.split("\n").include?("READY=1")
    end
    nil
  end

  # The CPU time of some processes (or threads: [pid, tid]) by this test's clock: read every
  # 10 ms while a profiler runs, so that what they used in the profile's own window (its Time
  # and Duration) can be told afterwards, however late this process was woken to read it.
  class CpuTrace
    def initialize(e2e, watch)
      @e2e, @watch, @points = e2e, watch, []
    end

    def sample = @points << [Time.now.to_f, @watch.to_h { |w| [w, @e2e.cpu_seconds(w)] }]

    # Reads until the block says stop (a thread of its own).
    def run_until
      Thread.new do
        until yield
          sample
          sleep 0.01
        end
        sample
      end
    end

    # CPU seconds `w` used from t0 to t1 (floats, seconds since the epoch), interpolated between
    # the readings around each end; nil if the readings do not cover the window.
    def used(w, t0, t1)
      a, b = at(w, t0), at(w, t1)
      a && b && b - a
    end

    # CPU seconds of `w` at t, interpolated; nil if the readings do not cover it.
    def at(w, t)
      pts = @points.select { |_, c| c[w] }
      after = pts.index { |pt, _| pt >= t } or return nil
      return pts[0][1][w] if after.zero? && pts[0][0] - t < 0.05 # read within 50 ms of it

      return nil if after.zero?

      (t0, c0), (t1, c1) = pts[after - 1], pts[after]
      c0[w] + (c1[w] - c0[w]) * (t - t0) / (t1 - t0)
    end
  end

  # Runs rubyprofd --oneshot; returns [profile path, stdout, stderr, status, cpu]. The daemon says
  # READY=1 once it samples and knows the processes there: the block, if any, runs then, with the
  # daemon's pid (a Ruby started after that is seen from its start). cpu: a CpuTrace of the pids (or [pid, tid]) of
  # `watch`, read from before READY=1 until rubyprofd ended, for expected_samples.
  def rubyprofd(*args, expect_success: true, daemon_env: {}, watch: [])
    out = File.join(@rt.workdir, "profile-#{rand(1 << 30)}.pb.gz")
    sock, sock_path = notify_socket
    cpu = CpuTrace.new(self, watch)
    stdout = stderr = st = nil
    begin
      Open3.popen3(daemon_env.merge("NOTIFY_SOCKET" => sock_path), RUBYPROFD, "--oneshot", "-o", out, *args) do |si, so, se, w|
        si.close
        @daemon_log = +""
        readers = [Thread.new { so.read }, Thread.new { se.each_line { |l| @daemon_log << l }; @daemon_log }]
        tracer = cpu.run_until { !w.alive? } unless watch.empty?
        if block_given?
          unless wait_ready(sock, w)
            Process.kill("KILL", w.pid) rescue nil
            fail!("rubyprofd sent no READY=1 within 60 s (or exited first):\n#{@daemon_log}")
          end
          yield w.pid
        end
        stdout, stderr = readers.map(&:value)
        st = w.value
        tracer&.join
      end
    ensure
      sock.close
      File.unlink(sock_path) rescue nil
    end
    if expect_success && !st.success?
      fail!("rubyprofd exited #{st.exitstatus}:\n#{stderr}#{stdout}")
    end
    [out, stdout, stderr, st, cpu]
  end

  # Inside the block of `rubyprofd`: waits until the daemon's log (its stderr so far) matches re.
  def wait_log(re, timeout: 60)
    deadline = Time.now + timeout
    until @daemon_log.match?(re)
      fail!("rubyprofd did not log #{re.inspect} within #{timeout} s:\n#{@daemon_log}") if Time.now > deadline
      sleep 0.02
    end
  end

  # The samples a process should get at hz in a profile's window, from a CpuTrace: a cpu-clock
  # event on every CPU fires every 1/hz s and samples whatever runs there, so what ran t seconds
  # on a CPU gets t * hz. nil if the trace does not cover the window.
  def expected_samples(trace, w, prof, hz)
    t0 = prof.time.to_f
    cpu = trace.used(w, t0, t0 + Float(prof.duration))
    cpu && cpu * hz
  end

  # Whether `got` samples are what `expected` (expected_samples) allows, for a target that was on
  # a CPU a share `busy` of the window (its CPU seconds over the window's; at most 1 for a Ruby,
  # whose threads take turns), sampled at hz. Alone on a CPU, every tick of that CPU samples it:
  # the count is exact (495 of 495 in 5 s at 99 Hz, idle). Sharing a CPU, it is on the CPU at a
  # tick or not as the scheduler's slices fall: each slice holds its length's ticks, give or
  # take one at its ends, so the count spreads about the expected one by what the slices' ends
  # give, not by the count: a variance of about cpu * min(hz, 99) * (1 - busy) (measured here
  # beside two CPU-bound processes: 0.90 to 1.10 of the count at 99 Hz and busy 0.4; at 499 Hz
  # the same spread in samples, a fifth of it in share, |z| <= 2 in the runs of
  # docs/testing.md). So: within 4 of those standard deviations (1 in 16,000 outside by chance),
  # plus 2 samples and 20 ms of the target's ticks (the window's ends: the CPU trace is read
  # every 10 ms). At 499 Hz a build that drops one sample in ten fails it beside two CPU hogs
  # (5 s at busy 0.5: 1,250 +- 57); at 99 Hz only on an idle machine (0.9 * 495 < 483).
  def samples_ok?(got, expected, busy, hz = 99) = (got - expected).abs <= sample_spread(expected, busy, hz)

  # samples_ok?'s allowance, in samples: what perf's samples of a target spread by.
  def sample_spread(expected, busy, hz = 99)
    4 * Math.sqrt(expected * [hz, 99].min.fdiv(hz) * [1 - busy, 0.02].max) + 2 + 0.02 * hz * [busy, 1].min
  end

  # The CPU seconds of w (a pid, or [pid, tid]) in the profile's window, from a CpuTrace.
  def cpu_in_window(trace, w, prof)
    t0 = prof.time.to_f
    trace.used(w, t0, t0 + Float(prof.duration))
  end

  # watch: more to measure (threads: [pid, tid]), a block of the facts; Run#cpu has them all.
  Run = Struct.new(:facts, :prof, :samples, :total, :stdout, :expected, :cpu)
  def profile_script(script, *args, duration: 5, flags: [], env: {}, ruby_opts: [], timeout: 30,
                     daemon_env: {}, watch: nil)
    facts = start(script, *args, env: env, ruby_opts: ruby_opts, timeout: timeout)
    yield facts if block_given?
    pid = facts["pid"]
    path, stdout, _, _, cpu = rubyprofd("--pid", pid.to_s, "--duration", duration.to_s, *flags,
                                        daemon_env: daemon_env, watch: [pid, *watch&.call(facts)])
    prof = PprofRaw.read(path)
    samples = prof.samples_of(pid)
    total = samples.sum(&:count)
    expected = nil
    if (i = flags.index("--clock")).nil? || flags[i + 1] == "cpu"
      hz = (j = flags.index("--frequency")) ? Integer(flags[j + 1]) : 99
      expected = expected_samples(cpu, pid, prof, hz) or fail!("pid #{pid} ended while it was profiled")
      busy = expected / hz / Float(prof.duration)
      File.write(ENV["RP_E2E_RATIOS"], format("%s %s %d %.1f %.3f %.2f\n", @rt.name, script, total, expected, total / expected, busy), mode: "a") if ENV["RP_E2E_RATIOS"]
      # a shortfall shows the daemon's own count of what it saw and dropped, so that a failure
      # tells a loss the daemon counted from ticks that never reached it
      check(samples_ok?(total, expected, busy, hz),
            format("%d samples of pid %d, which ran %.2f s on a CPU in the profile's %s s at %d Hz: %.0f +- %.0f expected\n%s",
                   total, pid, expected / hz, prof.duration, hz, expected, sample_spread(expected, busy, hz),
                   stdout.lines.grep(/\A(samples|dropped): /).join.chomp))
    end
    Run.new(facts, prof, samples, total, stdout, expected, cpu)
  end

  # Whether a frame is method `name`: Ruby 3.4+ labels carry the owner ("Object#name").
  # A C extension of tests/e2e/cext/ compiled into so with this runtime's Ruby's own headers (a
  # root's come from its rubyX.Y-dev, added on demand by mkroot.sh --dev). No -lruby: the symbols
  # resolve from the libruby that loads it. what: said of the build in a failure.
  def build_cext(name, so, flags, what = "")
    mm = @rt.version[/\A\d+\.\d+/]
    if @rt.root
      _, err, st = Open3.capture3(File.join(__dir__, "mkroot.sh"), "--dev", mm)
      raise Skip, "ruby#{mm}-dev: #{err.strip}" if st.exitstatus == 77
      check(st.success?, "mkroot.sh --dev #{mm} failed: #{err.strip}")
      hdr = File.join(@rt.root, "usr/include/ruby-#{mm}.0")
      arch = Dir[File.join(@rt.root, "usr/include/*/ruby-#{mm}.0")].first
    else
      hdr, arch = RbConfig::CONFIG.values_at("rubyhdrdir", "rubyarchhdrdir")
    end
    check(arch && File.exist?(File.join(hdr, "ruby.h")), "no ruby.h for Ruby #{mm} in #{hdr.inspect}")
    FileUtils.mkdir_p(File.dirname(so))
    src = File.expand_path("cext/#{name}", __dir__)
    # Built beside its name and renamed: a test running at once with this one finds the object
    # whole or not at all (a load of a half-written one fails "file too short").
    tmp = "#{so}.#{Process.pid}.#{Thread.current.object_id}.tmp"
    out, st = Open3.capture2e("gcc", "-O2", "-shared", "-fPIC", "-w", *flags, "-I", hdr, "-I", arch, "-o", tmp, src)
    check(st.success?, "gcc #{src}#{what} for Ruby #{mm} failed:\n#{out}")
    File.rename(tmp, so)
    so
  end

  def method?(loc, name) = loc.name == name || loc.name.end_with?("##{name}", ".#{name}")

  # Whether a profile frame is the frame Ruby described (label, path, line). rubyprofd names the
  # owner on every version ("block in Foo#bar"); Ruby before 3.4 prints the bare method name,
  # so there the comparison is on the method part (the owner is checked where the script knows it).
  def same?(loc, want)
    ruby_label(loc) == want["label"] && loc.file == want["path"] && loc.line == want["lineno"]
  end

  # A profile frame's label as this Ruby's own backtrace prints it.
  def ruby_label(loc) = qualified_ruby? ? loc.name : unqualify(loc.name)

  def qualified_ruby? = Gem::Version.new(@rt.version) >= Gem::Version.new("3.4")

  # "block (2 levels) in Foo::Bar#baz" -> "block (2 levels) in baz"
  def unqualify(label) = label.sub(/(\A|in )(?:[A-Z]\w*(?:::[A-Z]\w*)*)[#.](?=[^#.]+\z)/, '\1')

  def show(frames) = frames.map { |w| "#{w["label"]} #{w["path"]}:#{w["lineno"]}" }.join("\n  ")

  def fmt(loc, prof) = "#{loc.name} #{loc.file}:#{loc.line}#{prof.cfunc?(loc) ? " [c]" : ""}"

  # Runs one test method; returns [status, name, detail, seconds]. The processes it started are
  # stopped whatever happened.
  def run_one(t)
    name = "#{@rt.name}/#{t.to_s.delete_prefix("test_")}"
    t0 = Time.now
    r = begin
      [:pass, name, send(t)]
    rescue Skip => e
      [:skip, name, e.message]
    rescue Failure => e
      [:fail, name, e.message]
    rescue StandardError => e
      [:fail, name, "#{e.class}: #{e.message}\n#{e.backtrace.first(5).join("\n")}"]
    ensure
      stop_all
    end
    r << Time.now - t0
  end
end

# Tests live in tests/e2e/test_*.rb, each reopening class E2E with test_* methods.
Dir[File.join(__dir__, "test_*.rb")].sort.each { |f| require f }

# Which tests run, and how many at once.
#
# RP_E2E_SET: "quick" (`make test`): every test on the host's Ruby (but E2E.full_only's) and the
# smoke set on each Debian root; "full": every test on every Ruby; "rest": what "full" runs beyond "quick" (the
# roots' other tests), for `make test-rest` after `make test`.
# RP_E2E_JOBS: tests run at once (default: the number of CPUs). Each runs in a process of its
# own, forked from this one; its result is printed whole when it ends. Exclusive tests run
# alone; tests of one group one at a time (E2E.exclusive, E2E.group).
# RP_E2E_TIMEOUT: seconds a test may take before it is killed and failed (default 600).
SET = ENV.fetch("RP_E2E_SET", "full")
abort "RP_E2E_SET=#{SET}: quick, full or rest" unless %w[quick full rest].include?(SET)
JOBS = Integer(ENV.fetch("RP_E2E_JOBS", Etc.nprocessors.to_s)).clamp(1, 16)
TEST_TIMEOUT = Integer(ENV.fetch("RP_E2E_TIMEOUT", "600"))
# Each test's seconds in the last run (a cache: the longest start first, so that the run ends
# sooner; without it, the declared order).
TIMES_FILE = File.join(BUILD, "e2e-times")

def selected?(rt, t)
  name = "#{rt.name}/#{t.to_s.delete_prefix("test_")}"
  return false if FILTER && name !~ FILTER
  return false if rt.root && E2E::HOST_ONLY.include?(t)

  smoke = (!rt.root || E2E::SMOKE.include?(t)) && !E2E::FULL_ONLY.include?(t)
  case SET
  when "quick" then smoke
  when "rest" then !smoke
  else true
  end
end

# The version matrix: the host's Ruby, and Debian's other Rubies in cached debootstrap roots
# (tests/e2e/mkroot.sh). RP_E2E_RUBIES selects ("host,2.7,3.3,3.4" by default). The roots are
# made (or found in the cache) all at once in the background while the host's Ruby runs its
# tests; each root's tests join the queue once its root is ready. mkroot.sh locks each root, so
# a root tests/run-all.sh is already making is waited for, not made twice.
class Matrix
  def initialize(results)
    @results = results
    wanted = ENV.fetch("RP_E2E_RUBIES", "host,2.7,3.3,3.4").split(",").map(&:strip)
    @t0 = Time.now
    @host = wanted.include?("host")
    # a root whose Ruby would run no test is not even asked for
    @builds = (wanted - ["host"]).select { |v| E2E.tests.any? { |t| selected?(RubyRuntime.new("ruby-#{v}", root: "?"), t) } }
                                 .to_h { |v| [v, Thread.new { [*Open3.capture3(File.join(__dir__, "mkroot.sh"), v), Time.now - @t0] }] }
  end

  def pending? = !@builds.empty?

  # The runtimes ready since the last call (the host's first).
  def ready
    out = []
    if @host
      out << RubyRuntime.new("ruby-#{RUBY_VERSION}")
      @host = false
    end
    @builds.select { |_, th| !th.alive? }.each do |v, th|
      @builds.delete(v)
      stdout, err, st, took = th.value
      if st.exitstatus == 77
        @results << [:skip, "ruby-#{v}", "Debian's archive cannot serve it: #{err.strip}"]
        puts "SKIP ruby-#{v}: #{err.strip}"
        next
      elsif !st.success?
        @results << [:fail, "ruby-#{v}/root", err.strip]
        puts "FAIL ruby-#{v}/root: #{err.strip}"
        next
      end
      root = stdout.strip
      bin = File.read(File.join(root, ".rubybin")).strip
      full = Open3.capture2("chroot", root, bin, "-e", "print RUBY_VERSION")[0]
      puts format("root ruby-%s (%s) ready in %.0f s: %s", v, full, took, root)
      out << RubyRuntime.new("ruby-#{full}", root: root, bin: bin)
    end
    out
  end
end

class E2E
  def self.tests = instance_methods(false).grep(/^test_/).sort
end

# One test in a process of its own: the child's output goes to a file the parent prints with the
# result, the result comes back as Marshal through a pipe. Sanitizer reports of the child's
# processes go to a directory of its own (SAN_DIR/NNN), so they are the test's and no other's.
class Job
  attr_reader :rt, :test, :pid, :io, :started

  def initialize(rt, test, seq)
    @rt, @test, @seq = rt, test, seq
  end

  def name = "#{@rt.name}/#{@test.to_s.delete_prefix("test_")}"
  def exclusive? = E2E::EXCLUSIVE.include?(@test)
  def group = E2E::GROUPS[@test]

  def start
    @out = File.join(@rt.workdir, "job-#{@seq}.out")
    @io, w = IO.pipe
    @started = Time.now
    @pid = fork do
      @io.close
      $stdout.reopen(@out, "w")
      $stderr.reopen($stdout)
      $stdout.sync = true
      Process.setpgrp
      if SAN_DIR
        dir = File.join(SAN_DIR, @seq.to_s)
        Dir.mkdir(dir)
        File.chmod(01777, dir)
        %w[ASAN_OPTIONS UBSAN_OPTIONS].each { |var| ENV[var] = ENV[var].sub(%r{log_path=[^:]*}, "log_path=#{dir}/report") }
      end
      begin
        r = E2E.new(@rt).run_one(@test)
        # The processes of the test are gone: any report they had is written.
        if SAN_DIR && (reports = sanitizer_reports(File.join(SAN_DIR, @seq.to_s)))
          r = [:fail, r[1], "sanitizer report (#{r[0]}: #{r[2]})\n#{reports}", r[3]]
        end
      rescue Exception => e # rubocop:disable Lint/RescueException -- the child must answer
        r = [:fail, name, "#{e.class}: #{e.message}", Time.now - @started]
      ensure
        w.write(Marshal.dump(r)) rescue nil
        w.close
        # not exit: the parent's at_exit handlers (the sanitizer directory's removal) are its own
        exit!(0)
      end
    end
    w.close
  end

  # The result, once the child has written it or ended; nil while it runs.
  def result(timeout_at)
    data = @io.read_nonblock(1 << 20, exception: false)
    @buf = (@buf || +"") << data if data.is_a?(String)
    if data.nil?
      before = children_cpu
      _, st = Process.waitpid2(@pid)
      # the CPU time of the test's process and of every process it waited for (its Rubies, its
      # rubyprofd): a test that mostly sleeps shows it here
      @cpu = children_cpu - before
      @io.close
      r = begin
        Marshal.load(@buf.to_s)
      rescue ArgumentError, TypeError
        [:fail, name, "the test's process ended #{st.inspect} without a result", Time.now - @started]
      end
      return r
    end
    return nil unless Time.now > timeout_at

    Process.kill("KILL", -@pid) rescue nil
    Process.waitpid(@pid) rescue nil
    @io.close
    [:fail, name, "still running after #{TEST_TIMEOUT} s: killed", Time.now - @started]
  end

  attr_reader :cpu

  # Stopped from outside: the test is asked to end (SIGTERM to its process group raises in it,
  # so its ensure blocks kill the Rubies and the daemons it started), and killed at deadline.
  def terminate = (Process.kill("TERM", -@pid) rescue nil)

  def reap(deadline)
    sleep 0.1 until Process.waitpid(@pid, Process::WNOHANG) || Time.now > deadline
    Process.kill("KILL", -@pid) rescue nil
    Process.waitpid(@pid) rescue nil
  rescue Errno::ECHILD
    nil
  end

  def children_cpu = Process.times.then { |t| t.cutime + t.cstime }

  def output
    text = File.exist?(@out) ? File.read(@out) : ""
    File.unlink(@out) if File.exist?(@out)
    text
  end
end

def sanitizer_reports(dir)
  files = Dir[File.join(dir, "report.*")].sort
  return nil if files.empty?

  text = files.map { |f| "#{File.basename(f)}:\n#{File.read(f).lines.first(40).join}" }.join("\n")
  FileUtils.rm_f(files)
  text
end

def print_result(r, output)
  puts format("%-4s %-40s %5.1fs  %s", r[0].to_s.upcase, r[1], r[3], r[2].to_s.gsub("\n", "\n      "))
  puts output.gsub(/^/, "      | ") unless output.empty?
  $stdout.flush
end

results = []
wall0 = Time.now
if Process.uid != 0
  results << [:skip, "e2e", "needs root (BPF, perf events, process memory)"]
  puts "SKIP e2e: needs root"
elsif !File.executable?(RUBYPROFD)
  abort "#{RUBYPROFD} is missing: run make first"
else
  # name \t seconds \t CPU seconds (its processes')
  cpu = (File.readlines(TIMES_FILE).to_h { |l| n, _, c = l.split("\t"); [n, c.to_f] } rescue {})
  last = (File.readlines(TIMES_FILE).to_h { |l| n, s = l.split("\t"); [n, s.to_f] } rescue {})
  matrix = Matrix.new(results)
  queue, running, runtimes, seq = [], [], [], 0
  begin
    loop do
      matrix.ready.each do |rt|
        runtimes << rt
        rt.script("common.rb") # the scripts are copied once, before any test forks
        E2E.tests.select { |t| selected?(rt, t) }.each { |t| queue << Job.new(rt, t, seq += 1) }
        # exclusive tests first (each alone, while nothing else runs yet), then the longest
        queue.sort_by!.with_index { |j, i| [j.exclusive? ? 0 : 1, -(last[j.name] || 0), i] }
      end
      # start what may start: an exclusive test only when nothing runs; nothing beside one. A
      # group's tests run one after the other, so the group is one long chain: it is weighed by
      # the time of all its tests still queued, and starts before a single test shorter than that
      # chain (else the chain is left for the end, one slot working while the other waits).
      chain = Hash.new(0)
      queue.each { |j| chain[j.group] += last[j.name] || 0 if j.group }
      until queue.empty? || running.size >= JOBS || running.any?(&:exclusive?)
        job = queue.select do |j|
          (j.exclusive? ? running.empty? : true) && (j.group.nil? || running.none? { |r| r.group == j.group })
        end.min_by.with_index { |j, i| [j.exclusive? ? 0 : 1, -(j.group ? chain[j.group] : last[j.name] || 0), i] }
        break unless job
        break if job.exclusive? && !running.empty?

        queue.delete(job)
        chain[job.group] -= last[job.name] || 0 if job.group
        job.start
        running << job
      end
      break if running.empty? && queue.empty? && !matrix.pending?

      ready = IO.select(running.map(&:io), nil, nil, 0.5)
      running.dup.each do |job|
        next unless ready&.first&.include?(job.io) || Time.now > job.started + TEST_TIMEOUT

        r = job.result(job.started + TEST_TIMEOUT)
        next unless r

        running.delete(job)
        cpu[r[1]] = job.cpu.round(1) if job.cpu
        results << r
        print_result(r, job.output)
      end
    end
  rescue SignalException => e
    # stopped from outside (timeout(1), ^C): a daemon left running would keep sampling and hold
    # /tmp/rp-e2e.lock for whoever runs the suite next
    running.each(&:terminate)
    deadline = Time.now + 15
    running.each { |j| j.reap(deadline) }
    runtimes.each(&:cleanup)
    puts "#{ENV.fetch("RP_SUITE", "e2e")}: stopped by SIG#{Signal.signame(e.signo)} with #{running.size} tests running " \
         "(#{running.map(&:name).join(", ")}); #{results.size} ended before"
    raise
  end
  runtimes.each(&:cleanup)
  results.each { |r| last[r[1]] = r[3].round(1) if r[3] }
  File.write(TIMES_FILE, last.map { |n, secs| "#{n}\t#{secs}\t#{cpu[n] || 0}\n" }.join) rescue nil
end
pass = results.count { |r| r[0] == :pass }
fail = results.count { |r| r[0] == :fail }
skip = results.count { |r| r[0] == :skip }
results.select { |r| r[0] == :skip }.each { |r| puts "skipped: #{r[1]}: #{r[2]}" }
results.select { |r| r[0] == :fail }.each { |r| puts "failed: #{r[1]}" }
# Where the suite's time goes (CI has a budget for the whole of `make test`).
timed = results.select { |r| r[3] }
unless timed.empty?
  puts format("%s time: %.0f s in %d tests (%.0f s of wall-clock time, %d at once); slowest 10:",
              ENV.fetch("RP_SUITE", "e2e"), timed.sum { |r| r[3] }, timed.size, Time.now - wall0, JOBS)
  timed.max_by(10) { |r| r[3] }.each { |r| puts format("  %6.1fs  %s (%.1f s of CPU)", r[3], r[1], cpu&.fetch(r[1], nil) || 0) }
end
puts "#{ENV.fetch("RP_SUITE", "e2e")}: #{pass} passed, #{fail} failed, #{skip} skipped"
exit(fail.zero? ? 0 : 1)
