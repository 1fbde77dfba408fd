# SPDX-License-Identifier: GPL-2.0-only
# End-to-end tests: real Ruby processes profiled by rubyprofd, profiles read back with
# `go tool pprof -raw`, frames compared with what Ruby says of itself in the same process.
#
#   ruby tests/e2e/run.rb BUILD_DIR [TEST_NAME_PATTERN]
#
# Needs root (BPF). Prints PASS/FAIL/SKIP per test and ends with "e2e: N passed, N failed, N skipped".
require "fileutils"
require "tmpdir"
require "timeout"
require_relative "pprof_raw"

BUILD = File.expand_path(ARGV.fetch(0, "build"))
FILTER = ARGV[1] ? Regexp.new(ARGV[1]) : nil
RUBYPROFD = File.join(BUILD, "rubyprofd")
SCRIPTS = File.expand_path("scripts", __dir__)

class Skip < StandardError; end
class Failure < StandardError; end

# A Ruby to run the test scripts with: the host's, or one in a debootstrap root (tests/e2e/mkroot.sh).
class RubyRuntime
  attr_reader :name, :root, :bin

  def initialize(name, root: nil, bin: "ruby")
    @name, @root, @bin = name, root, bin
  end

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

  def script(name)
    dst = File.join(workdir, name)
    FileUtils.cp(File.join(SCRIPTS, name), dst)
    dst
  end

  # argv that runs a script (a path in workdir) with this Ruby
  def argv(script, *args, env: {})
    cmd = [bin, inside(script), *args.map { |a| a.start_with?(workdir) ? inside(a) : a }]
    cmd = ["chroot", root, *cmd] if root
    env.empty? ? cmd : ["env", *env.map { |k, v| "#{k}=#{v}" }, *cmd]
  end

  def cleanup
    FileUtils.rm_rf(@workdir) if @workdir
  end
end

class E2E
  def initialize(runtime)
    @rt = runtime
    @pids = []
  end

  def fail!(msg) = raise(Failure, msg)
  def check(cond, msg) = (cond or fail!(msg))

  # Starts a script that writes its facts (Marshal) to a file, and waits for them.
  def start(script, *args, env: {}, timeout: 30)
    out = File.join(@rt.workdir, "facts-#{script}-#{rand(1 << 30)}")
    pid = Process.spawn(*@rt.argv(@rt.script(script), out, *args, env: env), pgroup: true)
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
    Marshal.load(File.binread(out))
  end

  def stop_all
    @pids.each do |pid|
      Process.kill("KILL", -pid) rescue nil
      Process.waitpid(pid) rescue nil
    end
    @pids.clear
  end

  # Runs rubyprofd --oneshot; returns [profile path, stdout, stderr, status].
  def rubyprofd(*args, expect_success: true)
    out = File.join(@rt.workdir, "profile-#{rand(1 << 30)}.pb.gz")
    stdout, stderr, st = Open3.capture3(RUBYPROFD, "--oneshot", "-o", out, *args)
    if expect_success && !st.success?
      fail!("rubyprofd exited #{st.exitstatus}:\n#{stderr}#{stdout}")
    end
    [out, stdout, stderr, st]
  end

  def fmt(loc, prof) = "#{loc.name} #{loc.file}:#{loc.line}#{prof.cfunc?(loc) ? " [c]" : ""}"

  # (a) every frame equals Ruby's own caller_locations, C functions marked, >= 90 % of samples
  def test_exact_stack
    facts = start("exact_stack.rb")
    path, = rubyprofd("--pid", facts["pid"].to_s, "--duration", "5")
    prof = PprofRaw.read(path)
    samples = prof.samples_of(facts["pid"])
    total = samples.sum(&:count)
    check(total >= 100, "only #{total} samples of pid #{facts["pid"]} in 5 s at 99 Hz")
    want = facts["frames"]
    matching = samples.select do |s|
      frames = prof.frames(s)
      frames.size == want.size && frames.zip(want).all? do |f, w|
        f.name == w["label"] && f.file == w["path"] && f.line == w["lineno"]
      end
    end.sum(&:count)
    best = samples.max_by(&:count)
    check(matching >= 0.9 * total,
          "#{matching}/#{total} samples hold Ruby's stack; Ruby says:\n  " +
          want.map { |w| "#{w["label"]} #{w["path"]}:#{w["lineno"]}" }.join("\n  ") +
          "\nmost frequent stack:\n  " + prof.frames(best).map { |l| fmt(l, prof) }.join("\n  "))
    frames = prof.frames(best)
    facts["c_functions"].each do |name, is_c|
      idx = want.index { |w| w["label"] == name || w["label"].end_with?("##{name}") }
      check(idx, "#{name} is not in Ruby's backtrace")
      check(prof.cfunc?(frames[idx]) == is_c,
            "#{frames[idx].name}: marked #{prof.cfunc?(frames[idx]) ? "C" : "Ruby"}, but Ruby says it is #{is_c ? "C" : "Ruby"}")
    end
    "#{matching}/#{total} samples, #{want.size} frames"
  end

  # (b) three spinning threads: a third of the samples each, each under its own tid and name
  def test_three_threads
    facts = start("threads.rb")
    path, = rubyprofd("--pid", facts["pid"].to_s, "--duration", "6")
    prof = PprofRaw.read(path)
    samples = prof.samples_of(facts["pid"])
    total = samples.sum(&:count)
    check(total >= 100, "only #{total} samples")
    shares = %w[alpha beta gamma].map do |name|
      mine = samples.select { |s| prof.frames(s).any? { |l| l.name == "spin_#{name}" } }
      tids = mine.map { |s| s.labels["tid"] }.uniq
      names = mine.map { |s| s.labels["thread_name"] }.uniq
      check(tids.size == 1, "spin_#{name} sampled under tids #{tids.inspect}")
      check(names == ["rp-#{name}"], "spin_#{name} sampled under thread names #{names.inspect}")
      check(tids.first != facts["pid"].to_s, "spin_#{name} sampled under the main thread")
      share = 100.0 * mine.sum(&:count) / total
      check((share - 100.0 / 3).abs <= 10, "spin_#{name} has #{share.round(1)} % of the samples")
      [name, tids.first, share.round(1)]
    end
    check(shares.map { |s| s[1] }.uniq.size == 3, "threads share a tid: #{shares.inspect}")
    shares.map { |n, _, s| "#{n} #{s}%" }.join(", ")
  end

  # A command started by rubyprofd, and a process that exits mid-profile: no error, names kept.
  def test_command_and_exit
    script = @rt.script("short_lived.rb")
    path, stdout, = rubyprofd("--duration", "20", "--", *@rt.argv(script, "2"))
    prof = PprofRaw.read(path)
    hits = prof.samples.select { |s| prof.frames(s).any? { |l| l.name == "short_lived_work" && l.file == @rt.inside(script) } }
    n = hits.sum(&:count)
    total = prof.samples.sum(&:count)
    # The script spins for 2 s after Ruby boots: most of the process's CPU is in it.
    check(n >= 20 && n >= 0.5 * total, "only #{n} of #{total} samples in short_lived_work")
    check(stdout =~ /short_lived_work/, "summary does not list short_lived_work:\n#{stdout}")
    check(stdout =~ /^profile: /, "summary does not say where the profile is:\n#{stdout}")
    "#{n} samples, the run ended with the command"
  end

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

  def run(filter)
    results = []
    tests = self.class.instance_methods(false).grep(/^test_/).sort
    tests.each do |t|
      name = "#{@rt.name}/#{t.to_s.delete_prefix("test_")}"
      next if filter && name !~ filter
      t0 = Time.now
      begin
        detail = send(t)
        results << [:pass, name, detail, Time.now - t0]
      rescue Skip => e
        results << [:skip, name, e.message, Time.now - t0]
      rescue Failure => e
        results << [:fail, name, e.message, Time.now - t0]
      rescue StandardError => e
        results << [:fail, name, "#{e.class}: #{e.message}\n#{e.backtrace.first(5).join("\n")}", Time.now - t0]
      ensure
        stop_all
      end
      r = results.last
      puts format("%-4s %-40s %5.1fs  %s", r[0].to_s.upcase, r[1], r[3], r[2].to_s.gsub("\n", "\n      "))
      $stdout.flush
    end
    results
  end
end

runtimes = [RubyRuntime.new("ruby-#{RUBY_VERSION}")]
results = []
if Process.uid != 0
  results << [:skip, "e2e", "needs root (BPF, perf events, process memory)"]
  puts "SKIP e2e: needs root"
elsif !File.executable?(RUBYPROFD)
  abort "#{RUBYPROFD} is missing: run make first"
else
  runtimes.each do |rt|
    results.concat(E2E.new(rt).run(FILTER))
    rt.cleanup
  end
end
pass = results.count { |r| r[0] == :pass }
fail = results.count { |r| r[0] == :fail }
skip = results.count { |r| r[0] == :skip }
results.select { |r| r[0] == :skip }.each { |r| puts "skipped: #{r[1]}: #{r[2]}" }
puts "e2e: #{pass} passed, #{fail} failed, #{skip} skipped"
exit(fail.zero? ? 0 : 1)
