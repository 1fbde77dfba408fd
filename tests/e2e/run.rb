# SPDX-License-Identifier: GPL-2.0-only
# End-to-end tests: real Ruby processes profiled by rubyprofd, profiles read back with
# `go tool pprof -raw`, frames compared with what Ruby says of itself in the same process.
#
#   ruby tests/e2e/run.rb BUILD_DIR [TEST_NAME_PATTERN]
#
# Needs root (BPF). Prints PASS/FAIL/SKIP per test with its duration, the total and the slowest 10
# tests, and ends with "e2e: N passed, N failed, N skipped".
# RP_SUITE names the suite in that line instead of "e2e" (tests/run-all.sh: "asan-e2e").
#
# RP_SANITIZED=1 (a rubyprofd built with SANITIZE=...): every rubyprofd the tests start writes its
# sanitizer reports into one directory (log_path), and a test during which a report appeared fails
# with it, whatever the test itself checked of that process's exit status and stderr.
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

# The sanitizer reports written since the last call (and removed), as one text; nil if none.
def sanitizer_reports
  return nil unless SAN_DIR

  files = Dir[File.join(SAN_DIR, "report.*")].sort
  return nil if files.empty?

  text = files.map { |f| "#{File.basename(f)}:\n#{File.read(f).lines.first(40).join}" }.join("\n")
  FileUtils.rm_f(files)
  text
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
  def rubyprofd(*args, expect_success: true, daemon_env: {})
    out = File.join(@rt.workdir, "profile-#{rand(1 << 30)}.pb.gz")
    stdout, stderr, st = Open3.capture3(daemon_env, RUBYPROFD, "--oneshot", "-o", out, *args)
    if expect_success && !st.success?
      fail!("rubyprofd exited #{st.exitstatus}:\n#{stderr}#{stdout}")
    end
    [out, stdout, stderr, st]
  end

  # Starts a script, profiles it with --pid for `duration` seconds, and reads the profile back.
  Run = Struct.new(:facts, :prof, :samples, :total, :stdout)
  def profile_script(script, *args, duration: 5, flags: [], env: {}, ruby_opts: [], timeout: 30,
                     daemon_env: {})
    facts = start(script, *args, env: env, ruby_opts: ruby_opts, timeout: timeout)
    yield facts if block_given?
    path, stdout, = rubyprofd("--pid", facts["pid"].to_s, "--duration", duration.to_s, *flags,
                              daemon_env: daemon_env)
    prof = PprofRaw.read(path)
    samples = prof.samples_of(facts["pid"])
    total = samples.sum(&:count)
    check(total >= 20, "only #{total} samples of pid #{facts["pid"]} in #{duration} s at 99 Hz")
    Run.new(facts, prof, samples, total, stdout)
  end

  # Whether a frame is method `name`: Ruby 3.4+ labels carry the owner ("Object#name").
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

  def run(filter)
    results = []
    tests = self.class.instance_methods(false).grep(/^test_/).sort
    tests.each do |t|
      name = "#{@rt.name}/#{t.to_s.delete_prefix("test_")}"
      next if filter && name !~ filter
      next if @rt.root && HOST_ONLY.include?(t)
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
      # The processes of the test are gone: any report they had is written.
      if (reports = sanitizer_reports)
        r = results.pop
        results << [:fail, name, "sanitizer report (#{r[0]}: #{r[2]})\n#{reports}", r[3]]
      end
      r = results.last
      puts format("%-4s %-40s %5.1fs  %s", r[0].to_s.upcase, r[1], r[3], r[2].to_s.gsub("\n", "\n      "))
      $stdout.flush
    end
    results
  end
end

# Tests live in tests/e2e/test_*.rb, each reopening class E2E with test_* methods.
Dir[File.join(__dir__, "test_*.rb")].sort.each { |f| require f }

# The version matrix: the host's Ruby, and Debian's other Rubies in cached debootstrap roots
# (tests/e2e/mkroot.sh). RP_E2E_RUBIES selects ("host,2.7,3.3,3.4" by default). The roots are
# made (or found in the cache) all at once in the background while the host's Ruby runs its
# tests; each root's Ruby runs its tests once its root is ready. mkroot.sh locks each root, so a
# root tests/run-all.sh is already making is waited for, not made twice.
def runtimes(results)
  wanted = ENV.fetch("RP_E2E_RUBIES", "host,2.7,3.3,3.4").split(",").map(&:strip)
  t0 = Time.now
  builds = wanted.to_h do |v|
    next [v, nil] if v == "host"

    [v, Thread.new { [*Open3.capture3(File.join(__dir__, "mkroot.sh"), v), Time.now - t0] }]
  end
  Enumerator.new do |y|
    builds.each do |v, build|
      next y << RubyRuntime.new("ruby-#{RUBY_VERSION}") if v == "host"

      w0 = Time.now
      out, err, st, took = build.value
      waited = Time.now - w0
      if st.exitstatus == 77
        results << [:skip, "ruby-#{v}", "Debian's archive cannot serve it: #{err.strip}"]
        puts "SKIP ruby-#{v}: #{err.strip}"
        next
      elsif !st.success?
        results << [:fail, "ruby-#{v}/root", err.strip]
        puts "FAIL ruby-#{v}/root: #{err.strip}"
        next
      end
      root = out.strip
      bin = File.read(File.join(root, ".rubybin")).strip
      full = Open3.capture2("chroot", root, bin, "-e", "print RUBY_VERSION")[0]
      puts format("root ruby-%s (%s) ready in %.0f s (waited %.0f s for it): %s", v, full, took, waited, root)
      y << RubyRuntime.new("ruby-#{full}", root: root, bin: bin)
    end
  end
end

results = []
if Process.uid != 0
  results << [:skip, "e2e", "needs root (BPF, perf events, process memory)"]
  puts "SKIP e2e: needs root"
elsif !File.executable?(RUBYPROFD)
  abort "#{RUBYPROFD} is missing: run make first"
else
  runtimes(results).each do |rt|
    results.concat(E2E.new(rt).run(FILTER))
    rt.cleanup
  end
end
pass = results.count { |r| r[0] == :pass }
fail = results.count { |r| r[0] == :fail }
skip = results.count { |r| r[0] == :skip }
results.select { |r| r[0] == :skip }.each { |r| puts "skipped: #{r[1]}: #{r[2]}" }
# Where the suite's time goes (CI has a budget for the whole of `make test`).
timed = results.select { |r| r[3] }
unless timed.empty?
  puts format("%s time: %.0f s in %d tests; slowest 10:", ENV.fetch("RP_SUITE", "e2e"), timed.sum { |r| r[3] }, timed.size)
  timed.max_by(10) { |r| r[3] }.each { |r| puts format("  %6.1fs  %s", r[3], r[1]) }
end
puts "#{ENV.fetch("RP_SUITE", "e2e")}: #{pass} passed, #{fail} failed, #{skip} skipped"
exit(fail.zero? ? 0 : 1)
