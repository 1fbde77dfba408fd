# SPDX-License-Identifier: GPL-2.0-only
# `make bench`: what rubyprofd costs the host it runs on, measured beside a floor and peers.
#
#   ruby bench/run.rb BUILD_DIR
#
# Needs root. Writes BUILD_DIR/bench/results.md (the table, also printed) and results.json (every
# raw figure); the full run also writes docs/performance.md (bench/method.md and the table), the
# README's headline rows between its bench markers and bench/results/DATE-COMMIT.json. Every number is measured in this run; nothing is carried over. Because this kind of
# machine is noisy (2 shared vCPUs), every figure is a ratio or a difference between phases with
# and without the thing measured, alternated (A/B/A/B), and comes with the spread of its
# repetitions; throughput phases alternate every TOGGLE_PHASE seconds, with the profiler's
# sampling switched off and on under it (bpfbench toggle), so that slow drifts cancel.
#
# The driver runs on CPU 0, the workload under test alone on the last CPU, so that a profiler's
# userspace work lands on CPU 0 and what the workload loses is the sampling itself.
# BENCH_QUICK=1 halves the phases (for trying the bench out; figures get noisier).
# BENCH_ONLY=bpf runs only the BPF rows (the cost of another process's sample and the BPF time per
# sample by stack depth, beside the floor, with the daemon's CPU per sample):
# about two minutes, for comparing BPF-side changes. BENCH_ONLY=idle runs only the service's idle
# rows (no Ruby, one Ruby; a minute each). BENCH_ONLY=mixed runs only the mixed-stacks rows
# (--stacks mixed beside --stacks ruby, alternated, by depth and with a zlib workload; a few
# minutes). BENCH_ONLY=tctx runs only the thread-context row (a spinner without and with an
# OpenTelemetry thread context, alternated; about a minute).
require "json"
require "fileutils"
require "zlib"
require "etc"
require "tmpdir"
require "rbconfig"

BUILD = File.expand_path(ARGV.fetch(0, "build"))
SRC = File.expand_path("..", __dir__)
RUBYPROFD = File.join(BUILD, "rubyprofd")
BPFBENCH = File.join(BUILD, "bench", "bpfbench")
OUT = File.join(BUILD, "bench")
TARGET = File.join(__dir__, "target.rb")
QUICK = ENV["BENCH_QUICK"] == "1"
SCALE = QUICK ? 0.5 : 1.0
ONLY_BPF = ENV["BENCH_ONLY"] == "bpf"

# Phase lengths (seconds) and repetitions; the whole run stays under 15 minutes.
IRQ_HZ = 999
IRQ_PAIRS = 12
IRQ_PHASE = 0.4 * SCALE
DEPTHS = [10, 100, 1000, 4000].freeze
# The thread-context row's depth (a Rails request's stack is about this deep).
TCTX_DEPTH = 100
DEPTH_HZ = 99
DEPTH_PAIRS = 3
DEPTH_PHASE = 1.5 * SCALE
SLOW_HZ = [19, 99, 999].freeze
TOGGLE_PHASE = 0.2           # seconds with, then without sampling
SLOW_MAIN_S = 80 * SCALE     # rubyprofd at 99 Hz, the budgeted figure: 200 phases with sampling
SLOW_S = 12 * SCALE          # every other profiler setting
DAEMON_HZ = 19
DAEMON_NPROCS = [1, 10, 50].freeze
DAEMON_WINDOWS = 3
DAEMON_WINDOW = 3.0 * SCALE
LATENCY_RUNS = 3
LATENCY_RUBIES = 2
LATENCY_HZ = 99

HARM_WORK = File.join(SRC, "tests", "e2e", "scripts", "harm_work.rb")
HARM_PHASE = 15 * SCALE      # seconds per phase, without and with the daemon churn, ×2 each
HARM_HZ = 999
# BENCH_ONLY=harm runs only the churn row (its table has that row alone).
ONLY = ENV["BENCH_ONLY"]
# BENCH_ONLY=wall runs only the wall-clock rows (issue 13, item 4; about four minutes): beside CPU
# mode, for 1 and 50 threads (one busy, the rest parked in Queue#pop PARK_DEPTH frames deep) at 19
# and 99 Hz, the workload's slowdown, the iterator's time per thread-sample and the daemon's CPU,
# with stack reuse and without it (RP_WALL_REUSE=0), all measured in this run.
# The full run takes the README's row alone: 50 threads at 19 Hz, wall mode beside CPU mode.
WALL_NTHREADS = ONLY == "wall" ? [1, 50].freeze : [50].freeze
WALL_HZS = ONLY == "wall" ? [19, 99].freeze : [19].freeze
WALL_MODES = if ONLY == "wall"
               [[:wall, "1"], [:wall_nosleep, "1"], [:wall_noskip, "1"], [:wall_iter, "1"], [:wall_noreuse, "0"], [:cpu, nil]]
             else
               [[:wall, "1"], [:cpu, nil]]
             end.freeze
WALL_WINDOWS = 3             # the steady window in parts: the spread of the per-thread-sample figure
BUDGET_WALL_THREAD_US = 2.0  # µs per thread-sample all-in, 50 threads at 19 Hz (issue 13)
WALL_PARK_DEPTH = 30         # bench/target.rb PARK_DEPTH
WALL_STEADY_S = 5 * SCALE    # the daemon's and the iterator's CPU: a window with sampling on
WALL_TOGGLE_S = 8 * SCALE    # the slowdown: sampling switched off and on every TOGGLE_PHASE s
BPF_PROG_TYPE_TRACING = 26
BPF_PROG_TYPE_SYSCALL = 31
# BENCH_ONLY=mixed: Ruby frames of the mixed rows' workloads ("deep" spins in Ruby, "zlib" in libz).
# The full run takes three of them.
MIXED_CASES = if ONLY == "mixed"
                [["deep", 10], ["deep", 100], ["deep", 1000], ["zlib", 10], ["zlib", 100]]
              else
                [["deep", 100], ["deep", 1000], ["zlib", 100]]
              end.freeze
MIXED_PAIRS = 3
MIXED_PHASE = 3.0 * SCALE
# BENCH_ONLY=idle runs only the service's idle rows (two minutes; no bpfbench needed).
IDLE_HZ = 19
IDLE_S = 60 * SCALE
IDLE_WINDOWS = 3

# BENCH_ONLY=many runs only the many-methods rows (about two minutes): a Ruby with more methods
# than the symbolizer's caches hold (tests/e2e/scripts/many_methods.rb, as test_many_methods runs
# it: 100 owners of 500 methods, each calling two blocks through its own copies of Kernel#catch,
# so 150,000 iseqs and 100,000 C method entries, chains of 10), at 99 and 999 Hz: the daemon's
# CPU per second and the samples it had to drop (ring buffer full, counted by BPF), beside the
# same script with 10 owners (15,000 iseqs: within the caches) at 999 Hz.
MANY_METHODS = File.join(SRC, "tests", "e2e", "scripts", "many_methods.rb")
MANY_CASES = [[100, 99], [100, 999], [10, 999]].freeze # [owners of 500 methods, Hz]
MANY_WINDOWS = 3
MANY_WINDOW = 4.0 * SCALE

README_BEGIN = "<!-- bench:begin (make bench rewrites this table) -->"
README_END = "<!-- bench:end -->"

# The one verdict rule, printed with every table.
VERDICT_RULE = "**Verdicts.** A row with a budget is judged on its interval in this run: min … max of its " \
               "repetitions (one figure of the run, such as a peak RSS, is its own interval), or for a " \
               "slowdown the 95 % interval of its mean. **PASS**: the whole interval is within the budget. " \
               "**MISS**: the whole interval is beyond it. **not resolvable here**: the interval holds the " \
               "budget (the noise of this machine is larger than the distance to it). A figure not " \
               "measured is a MISS. A row with several budgets takes the worst. Rows without a budget " \
               "are context."

# Budgets of issue 5.
BUDGET_SLOWDOWN_99 = 0.5     # % at 99 Hz
BUDGET_BPF_100 = 5.0         # µs per sample at 100 frames
BUDGET_BPF_4000 = 120.0      # µs per sample at 4000 frames
BUDGET_FLOOR_RATIO = 2.0     # x the floor
BUDGET_DAEMON_CPU = 0.2      # % of a core with 50 Ruby processes at 19 Hz (issue 8: the service)
BUDGET_DAEMON_RSS = 32.0     # MiB

# Constants shared with the BPF side, read from the header rather than copied.
HEADER = File.read(File.join(SRC, "include", "rubyprof.h"))
def header_const(name)
  Integer(HEADER[/^#define #{name}\s+(\d+)/, 1] || raise("#{name} not in include/rubyprof.h"))
end
RP_STAT = %w[SAMPLES RUBY_SAMPLES RUBY_STACKS FRAMES RB_DROPPED PROC_EVENTS USTACKS USTACK_LOST NATIVE_ALONE TCTX].to_h { |n| [n, header_const("RP_STAT_#{n}")] }
RP_WSTAT = %w[RUNS THREADS CUT RUN_NS REUSED CACHE_MISS CURSOR].to_h { |n| [n, header_const("RP_WSTAT_#{n}")] }
RP_EC_TLS_STATIC = header_const("RP_EC_TLS_STATIC")
BPF_PROG_TYPE_PERF_EVENT = 7

def mono
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
end

def log(msg)
  warn format("bench [%5.1fs] %s", (mono - START) / 1e9, msg)
end

def median(xs)
  s = xs.sort
  s.empty? ? nil : (s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0)
end

# ---- child processes ---------------------------------------------------------------------------

# A child whose output lines (stdout and stderr) are collected with their arrival time.
class Child
  ALL = []
  attr_reader :pid, :argv

  def initialize(argv, env: {})
    @argv = argv
    @lines = []
    @mutex = Mutex.new
    @cond = ConditionVariable.new
    r, w = IO.pipe
    @pid = Process.spawn(env, *argv, in: File::NULL, out: w, err: w)
    w.close
    @status = nil
    @reader = Thread.new do
      r.each_line do |l|
        t = mono
        @mutex.synchronize do
          @lines << [t, l.chomp]
          @cond.broadcast
        end
      end
      r.close
      @mutex.synchronize { @cond.broadcast }
    end
    ALL << self
  end

  def lines
    @mutex.synchronize { @lines.dup }
  end

  def text
    lines.map(&:last).join("\n")
  end

  # Waits for `count` lines matching re; returns them as [time, line].
  def wait_for(re, timeout: 30, count: 1)
    deadline = mono + timeout * 1e9
    @mutex.synchronize do
      loop do
        found = @lines.select { |_, l| l =~ re }
        return found if found.size >= count

        left = (deadline - mono) / 1e9
        raise "#{@argv.first(4).join(' ')}: no line matching #{re.inspect} in #{timeout} s:\n#{text_unlocked}" if left <= 0
        if exited? && !@reader.alive?
          raise "#{@argv.first(4).join(' ')} exited (#{@status}) before #{re.inspect}:\n#{text_unlocked}"
        end

        @cond.wait(@mutex, [left, 0.05].min)
      end
    end
  end

  def exited?
    return true if @status

    pid, st = Process.waitpid2(@pid, Process::WNOHANG)
    @status = st if pid
    !@status.nil?
  end

  def signal(sig)
    Process.kill(sig, @pid) unless exited?
  rescue Errno::ESRCH
    nil
  end

  # Sends sig, waits up to timeout seconds, then kills. Returns the exit status.
  def stop(sig = :INT, timeout: 60)
    signal(sig)
    deadline = mono + timeout * 1e9
    sleep 0.01 until exited? || mono > deadline
    unless exited?
      signal(:KILL)
      _, @status = Process.waitpid2(@pid)
    end
    @reader.join(5)
    @status
  end

  private

  def text_unlocked
    @lines.last(20).map(&:last).join("\n")
  end
end

at_exit do
  Child::ALL.each { |c| c.signal(:KILL) unless c.exited? }
end

# ---- BPF statistics from outside -----------------------------------------------------------------

# The perf_event BPF programs a process holds, from /proc/PID/fdinfo: {prog_id => {run_time_ns:, run_cnt:}}.
def perf_progs(pid)
  progs = {}
  Dir.glob("/proc/#{pid}/fdinfo/*").each do |f|
    info = begin
      File.read(f)
    rescue StandardError
      next
    end
    next unless info =~ /^prog_type:\s+#{BPF_PROG_TYPE_PERF_EVENT}$/ && info =~ /^prog_id:\s+(\d+)/

    id = Integer(Regexp.last_match(1))
    progs[id] = { run_time_ns: Integer(info[/^run_time_ns:\s+(\d+)/, 1] || 0),
                  run_cnt: Integer(info[/^run_cnt:\s+(\d+)/, 1] || 0) }
  end
  progs
end

def bpftool_json(*args)
  out = IO.popen(["bpftool", "-j", *args], err: File::NULL, &:read)
  raise "bpftool #{args.join(' ')} failed" unless $?.success?

  JSON.parse(out)
end

# Waits until pid has a perf_event program that has run, i.e. sampling has started.
def wait_sampling(child, timeout: 30)
  deadline = mono + timeout * 1e9
  loop do
    progs = perf_progs(child.pid)
    return progs.keys.first if progs.values.any? { |p| p[:run_cnt].positive? }
    raise "#{child.argv.first(3).join(' ')} exited before sampling:\n#{child.text}" if child.exited?
    raise "#{child.argv.first(3).join(' ')}: no perf_event program running after #{timeout} s" if mono > deadline

    sleep 0.02
  end
end

# A running rubyprofd and what the bench reads of it: its program's run time, its stats map.
class Rubyprofd
  attr_reader :child, :prog_id, :output

  # service: run the always-on service (output is its spool directory) instead of --oneshot.
  def initialize(args, output:, register: [], cpus: nil, wrap: nil, service: false)
    @output = output
    argv = if service
             conf = File.join(OUT, "empty.conf")
             File.write(conf, "")
             [RUBYPROFD, "--config", conf, "--spool-dir", output, "--log-level", "info", *args]
           else
             [RUBYPROFD, "--oneshot", "-v", "--duration", "3600", "-o", output, *args]
           end
    @wrapped = !wrap.nil?
    argv = [*wrap, *argv] if wrap
    argv = ["taskset", "-c", cpus, *argv] if cpus
    @child = Child.new(argv)
    # The service limits its lines about processes on a busy host: it is asked through its procs
    # map instead, and measured all the same when a Ruby is not in it within 30 s (the service
    # rows say how many processes were profiled).
    register.each { |pid| @child.wait_for(/pid #{pid}: Ruby /, timeout: 60) } unless service
    @prog_id = wait_sampling(self)
    return unless service

    deadline = mono + 30e9
    sleep 0.2 until mono > deadline || (register - procs.keys).empty?
    missing = register - procs.keys
    log "  #{missing.size} of #{register.size} Rubies not in the service's procs map after 30 s" unless missing.empty?
  end

  # With a wrapper (bpfbench rusage), rubyprofd is the wrapper's child.
  def pid
    return @pid if @pid
    return @pid = @child.pid unless @wrapped

    kids = File.read("/proc/#{@child.pid}/task/#{@child.pid}/children").split.map(&:to_i)
    kids.empty? ? @child.pid : (@pid = kids.first)
  end

  def text
    @child.text
  end

  def exited?
    @child.exited?
  end

  def argv
    @child.argv
  end

  def maps
    @maps ||= begin
      ids = bpftool_json("prog", "show", "id", @prog_id.to_s).fetch("map_ids")
      ids.to_h { |id| [bpftool_json("map", "show", "id", id.to_s).fetch("name"), id] }
    end
  end

  # Sums of the per-CPU stats counters, by RP_STAT index.
  def counters
    dump = bpftool_json("map", "dump", "id", maps.fetch("stats").to_s)
    dump.to_h do |e|
      f = e.fetch("formatted")
      [f.fetch("key"), f.fetch("values").sum { |v| v.fetch("value") }]
    end
  end

  def procs
    bpftool_json("map", "dump", "id", maps.fetch("procs").to_s).to_h do |e|
      f = e.fetch("formatted")
      [f.fetch("key"), f.fetch("value")]
    end
  end

  def snapshot
    p = perf_progs(pid).fetch(@prog_id)
    { t: mono, run_time_ns: p[:run_time_ns], run_cnt: p[:run_cnt], counters: counters }
  end

  def stop
    @child.stop(:INT)
  end
end

def delta(a, b)
  c = ->(k) { b[:counters].fetch(RP_STAT.fetch(k), 0) - a[:counters].fetch(RP_STAT.fetch(k), 0) }
  { seconds: (b[:t] - a[:t]) / 1e9, run_time_ns: b[:run_time_ns] - a[:run_time_ns],
    run_cnt: b[:run_cnt] - a[:run_cnt], ruby_samples: c["RUBY_SAMPLES"],
    ruby_stacks: c["RUBY_STACKS"], frames: c["FRAMES"], dropped: c["RB_DROPPED"], tctx: c["TCTX"] }
end

# BPF time per sample of a registered Ruby process, in ns: the run time of the samples that hit
# other processes (c0 ns each, measured alone) is taken out.
def per_ruby_sample(d, c0)
  return nil if d[:ruby_samples].zero?

  (d[:run_time_ns] - c0 * (d[:run_cnt] - d[:ruby_samples])) / d[:ruby_samples].to_f
end

def cpu_ns(pid)
  Dir.glob("/proc/#{pid}/task/*/schedstat").sum { |f| Integer(File.read(f).split.first) }
rescue Errno::ENOENT, Errno::ESRCH
  0
end

def proc_status(pid)
  File.read("/proc/#{pid}/status").scan(/^(\w+):\s+(\d+) kB/).to_h { |k, v| [k, Integer(v)] }
end

# ---- the bench -----------------------------------------------------------------------------------

class Bench
  def initialize
    @ncpus = Etc.nprocessors
    @wcpu = @ncpus - 1
    @all_cpus = "0-#{@ncpus - 1}"
    @r = {}
  end

  def ruby(*args, cpus: @all_cpus, nice: nil)
    argv = ["taskset", "-c", cpus.to_s]
    argv += ["nice", "-n", nice.to_s] if nice
    Child.new(argv + ["ruby", TARGET, *args])
  end

  def run
    return render(ENV["BENCH_RENDER"]) if ENV["BENCH_RENDER"]

    check_environment
    # The commit measured: the tree as the run starts.
    @r[:commit] = git("rev-parse", "--short=12", "HEAD")
    @r[:dirty] = !git("status", "--porcelain", "--untracked-files=no").empty?
    @r[:date] = Time.now.utc.strftime("%Y-%m-%d %H:%M UTC")
    old_stats = File.read("/proc/sys/kernel/bpf_stats_enabled").strip
    File.write("/proc/sys/kernel/bpf_stats_enabled", "1")
    begin
      if ONLY == "mixed"
        measure_c0
        measure_mixed
        measure_other_processes
      elsif ONLY == "tctx"
        measure_c0
        measure_tctx
      elsif ONLY != "harm" && ONLY != "idle" && ONLY != "wall" && ONLY != "many"
        measure_interrupt unless ONLY_BPF
        measure_c0
        measure_depths
        measure_tctx unless ONLY_BPF
      end
      unless ONLY
        measure_slowdown
        measure_daemon
        measure_latency
        measure_mixed
        measure_other_processes
      end
      measure_wall if ONLY == "wall" || ONLY.nil?
      measure_many if ONLY == "many" || ONLY.nil?
      measure_idle unless ONLY && ONLY != "idle"
      measure_harm unless ONLY_BPF || %w[idle wall mixed many tctx].include?(ONLY)
    ensure
      File.write("/proc/sys/kernel/bpf_stats_enabled", old_stats)
    end
    @r[:runtime_s] = (mono - START) / 1e9
    machine_during_run
    @r[:verdict_rule] = VERDICT_RULE
    json = JSON.pretty_generate(@r)
    File.write(File.join(OUT, "results.json"), json)
    write_tables(json)
  end

  # BENCH_RENDER=FILE: the tables and documents again from a run's results.json, without measuring.
  def render(file)
    json = File.read(file)
    FileUtils.mkdir_p(OUT)
    @r = keys_back(JSON.parse(json)).transform_keys(&:to_sym) # the top level is always symbols
    write_tables(json.chomp)
  end

  # JSON turned every key into a string: depths and thread counts back to integers, the names of
  # configurations, modes and counters stay strings, the rest become symbols again.
  def keys_back(v)
    case v
    when Hash
      v.to_h do |k, x|
        key = if k.match?(/\A\d+\z/) then Integer(k)
              elsif k.match?(/[@-]|\A[A-Z_]+\z|\A(ruby|mixed|methods|blocks)\z/) then k
              else k.to_sym
              end
        [key, keys_back(x)]
      end
    when Array then v.map { |x| keys_back(x) }
    else v
    end
  end

  def write_tables(json)
    @rows = table_rows
    md = table_of(@rows)
    File.write(File.join(OUT, "results.md"), md)
    puts md
    publish(json, md) if ONLY.nil? && !QUICK
  end

  def git(*args)
    IO.popen(["git", "-C", SRC, *args], &:read).strip
  end

  # The full run is the record: docs/performance.md (method and every row), the README's headline
  # rows between its markers, and this run's raw figures in bench/results/.
  def publish(json, md)
    name = "#{@r[:date][0, 10]}-#{@r[:commit]}#{@r[:dirty] ? '-dirty' : ''}.json"
    FileUtils.mkdir_p(File.join(SRC, "bench", "results"))
    File.write(File.join(SRC, "bench", "results", name), json + "\n")
    method = File.read(File.join(__dir__, "method.md"))
    doc = "<!-- Generated by `make bench` (bench/run.rb, the method from bench/method.md): do not edit. -->\n" \
          "# Performance\n\n" \
          "Generated by `make bench` on #{@r[:date]} at commit #{@r[:commit]}#{@r[:dirty] ? ' (with local changes)' : ''}, " \
          "in #{format('%.0f', @r[:runtime_s])} s; its raw figures: [bench/results/#{name}](../bench/results/#{name}). " \
          "Earlier runs and the comparisons of single changes: [internals/bench-history.md](internals/bench-history.md).\n\n" \
          "#{method}\n## Results\n\n#{md}"
    File.write(File.join(SRC, "docs", "performance.md"), doc)
    readme = File.join(SRC, "README.md")
    text = File.read(readme)
    b = text.index(README_BEGIN)
    e = text.index(README_END)
    if b && e && b < e
      File.write(readme, text[0, b] + README_BEGIN + "\n" + headline + text[e..])
    else
      log "README.md: no #{README_BEGIN} … #{README_END} markers: its table is not rewritten"
    end
  end

  # The README's rows: measure, result, budget, verdict (its first words), each from the full table.
  def headline
    pick = ->(measure, setting = nil) { @rows.find { |m, st| m == measure && (setting.nil? || st.start_with?(setting)) } }
    rows = [["Slowdown, 99 Hz, Ruby methods", pick.("Slowdown, methods workload", "rubyprofd 99 Hz")],
            ["Slowdown, 99 Hz, blocks and C functions", pick.("Slowdown, blocks workload", "rubyprofd 99 Hz")],
            ["BPF time per sample, 100 frames", pick.("BPF time per sample, 100 frames")],
            ["BPF time per sample, 4000 frames", pick.("BPF time per sample, 4000 frames")],
            ["Daemon CPU per sample, 100 frames", pick.("Daemon CPU per sample, 100 frames")],
            ["Service, 1 busy Ruby, 19 Hz", pick.("Service, 1 busy Ruby process")],
            ["Service, #{DAEMON_NPROCS.last} busy Rubies, 19 Hz",
             pick.("Service, #{DAEMON_NPROCS.last} busy Ruby processes", "#{DAEMON_HZ} Hz, 10 s intervals, whole host")],
            ["A new Ruby's VM → first sample", pick.("Latency: a new Ruby's VM → its first sample")],
            ["Wall clock, 50 threads, 19 Hz", pick.("Wall clock: wall, reuse, still ticks skipped and slept through, 50 threads")]]
            .select(&:last).map { |name, row| [name, *row] }
    short = ->(v) { v[/\A(PASS|MISS|not resolvable here|no budget)/] || v }
    "`make bench` of #{@r[:date][0, 10]} at #{@r[:commit]} (#{@r[:machine][:summary][/\A\d+ CPUs/] || "this machine"}); " \
      "the verdict rule, the method and every row: [docs/performance.md](docs/performance.md).\n\n" \
      "| Measure | Result | Budget | Verdict |\n|---|---|---|---|\n" +
      rows.map { |name, m, _, res, _, bud, v| "| #{name} | #{brief(m, res)} | #{bud} | #{short.(v)} |" }.join("\n") + "\n"
  end

  # The part of a row's result that its budget is on.
  def brief(measure, res)
    parts = res.split("; ")
    if measure.start_with?("Wall clock") then parts.last.sub(/ \(\d+ windows\)\z/, "")
    elsif measure.start_with?("Mixed stacks") then parts.first
    elsif measure.start_with?("Service idle") then parts.first.sub(/ \(\d+ windows\)\z/, "")
    else res.sub(/ \(\d+ phases\)\z/, "")
    end
  end

  def check_environment
    abort "bench: needs root (BPF, perf events, other processes' memory): run 'sudo make bench'" unless Process.uid.zero?
    [RUBYPROFD, BPFBENCH].each do |f|
      abort "bench: #{f} missing: run 'make bench'" unless File.executable?(f) || (%w[harm idle many].include?(ONLY) && f == BPFBENCH)
    end
    (ONLY ? %w[bpftool taskset] : %w[bpftool bpftrace taskset]).each do |t|
      abort "bench: #{t} not found: run 'sudo scripts/deps.sh bench'" unless system("which #{t} >/dev/null 2>&1")
    end
    abort "bench: stackprof not installed: run 'sudo scripts/deps.sh bench'" unless ONLY || system("ruby", "-rstackprof", "-e", "")
    abort "bench: needs at least 2 CPUs (workload and profiler apart)" if @ncpus < 2
    FileUtils.mkdir_p(OUT)
    # The driver (and what it starts without another CPU list) stays on CPU 0.
    system("taskset", "-a", "-p", "-c", "0", Process.pid.to_s, out: File::NULL) or abort "bench: taskset failed"
    @r[:machine] = machine
    log "machine: #{@r[:machine][:summary]}"
  end

  def machine
    cpu = File.read("/proc/cpuinfo")[/^model name\s*:\s*(.+)$/, 1]
    vm = File.read("/proc/cpuinfo")[/^flags\s*:.*\bhypervisor\b/] ? "virtual machine" : nil
    container = IO.popen(%w[systemd-detect-virt --container], err: File::NULL, &:read).to_s.strip
    container = nil if container.empty? || container == "none"
    os = File.read("/etc/os-release")[/^PRETTY_NAME="?([^"\n]+)/, 1]
    kernel = `uname -r`.strip
    mem = File.read("/proc/meminfo")[/MemTotal:\s+(\d+)/, 1].to_i / 1024 / 1024.0
    ruby = `ruby -e 'print RUBY_VERSION'`
    where = [vm, container && "#{container} container"].compact.join(", ")
    { cpu: cpu, ncpus: @ncpus, vm: vm, container: container, os: os, kernel: kernel, mem_gib: mem.round(1),
      ruby: ruby, load_at_start: File.read("/proc/loadavg").split.first(3).join(" "), cpu_ticks_at_start: cpu_ticks,
      summary: "#{@ncpus} CPUs #{cpu}#{where.empty? ? '' : " (#{where})"}, #{mem.round(1)} GiB, #{os}, " \
               "Linux #{kernel}, Ruby #{ruby}" }
  end

  # /proc/stat's aggregate line: user nice system idle iowait irq softirq steal.
  def cpu_ticks
    File.read("/proc/stat")[/^cpu\s+(.+)$/, 1].split.map(&:to_i)
  end

  # How busy the machine was with other work during the run, and how much the hypervisor took.
  def machine_during_run
    a = @r[:machine][:cpu_ticks_at_start]
    b = cpu_ticks
    d = b.zip(a).map { |x, y| x - y }
    total = d.first(8).sum.to_f
    @r[:machine][:steal_pct] = 100 * d[7] / total
    @r[:machine][:load_at_end] = File.read("/proc/loadavg").split.first(3).join(" ")
  end

  # -- 1. the sampling interrupt itself ----------------------------------------------------------

  # Gaps up to 256 µs are interrupts; longer ones are another task's or the hypervisor's time slice.
  IRQ_GAP_BUCKETS = 18

  def measure_interrupt
    log "sampling interrupt: empty perf_event program at #{IRQ_HZ} Hz on CPU #{@wcpu}, #{IRQ_PAIRS} off/on pairs"
    out = IO.popen(["taskset", "-c", @wcpu.to_s, BPFBENCH, "irq", "-c", @wcpu.to_s, "-F", IRQ_HZ.to_s,
                    "-n", IRQ_PAIRS.to_s, "-p", IRQ_PHASE.to_s], &:read)
    raise "bpfbench irq failed" unless $?.success?

    j = JSON.parse(out)
    pairs = j.fetch("pairs").map do |p|
      short = ->(k) { p.fetch(k).first(IRQ_GAP_BUCKETS).sum }
      extra = short.call("on_gap_ns") - short.call("off_gap_ns") * p["on_ns"].to_f / p["off_ns"]
      { irq_ns: extra / p["irqs"], prog_ns: p["prog_ns"].to_f / p["irqs"], irqs: p["irqs"] }
    end
    @r[:irq] = { hz: IRQ_HZ, threshold_ns: j["threshold_ns"], pairs: pairs,
                 irq_ns: median(pairs.map { |p| p[:irq_ns] }), prog_ns: median(pairs.map { |p| p[:prog_ns] }) }
    log format("  %.2f µs per interrupt (empty program %.0f ns)", @r[:irq][:irq_ns] / 1e3, @r[:irq][:prog_ns])
  end

  def irq_ns
    @r[:irq][:irq_ns]
  end

  # -- 2. cost of a sample that is not a registered Ruby's ---------------------------------------

  # Two Rubies busy on both CPUs that no profiler registers, and a sleeper to register instead: the
  # samples a profiler takes then are all of processes it does not profile.
  def busy_unregistered
    spinners = [0, @wcpu].map { |c| ruby("deep", "10", cpus: c, nice: 10) }
    spinners.each { |s| s.wait_for(/READY/) }
    [spinners, Child.new(%w[sleep 3600])]
  end

  def measure_c0
    log "cost of a sample outside the targets (c0): rubyprofd and the floor, with unregistered Rubies busy"
    spinners, sleeper = busy_unregistered
    rp = Rubyprofd.new(["-F", DEPTH_HZ.to_s, "--pid", sleeper.pid.to_s], output: File.join(OUT, "c0.pb.gz"), cpus: "0")
    a = rp.snapshot
    sleep DEPTH_PHASE
    d = delta(a, rp.snapshot)
    rp.stop
    floor = run_floor([])
    sleeper.stop(:KILL)
    spinners.each { |s| s.stop(:KILL) }
    @r[:c0] = { ours_ns: d[:run_time_ns] / d[:run_cnt].to_f, floor_ns: floor[:run_time_ns] / floor[:run_cnt].to_f,
                ours_samples: d[:run_cnt], floor_samples: floor[:run_cnt] }
    log format("  rubyprofd %.0f ns, floor %.0f ns per sample", @r[:c0][:ours_ns], @r[:c0][:floor_ns])
  end

  def run_floor(targets)
    argv = ["taskset", "-c", "0", BPFBENCH, "floor", "-F", DEPTH_HZ.to_s, "-d", DEPTH_PHASE.to_s, "-w", "0.3"]
    targets.each { |t| argv += ["-t", t] }
    out = IO.popen(argv, &:read)
    raise "bpfbench floor failed" unless $?.success?

    JSON.parse(out, symbolize_names: true)
  end

  # -- 3. BPF time per sample by stack depth -----------------------------------------------------

  # One phase of rubyprofd --oneshot (args beside -F DEPTH_HZ) after `settle` s, the daemon on CPU
  # 0 (the block gets it before the phase): its counters' delta with the BPF time per sample of the
  # registered Rubies (less the samples of other processes, c0 each) and the daemon's CPU time
  # (utime + stime of all its threads) per sample it took in: what moving work out of BPF costs
  # userspace, its timers included. Also any counter's delta (count.("NAME")), the daemon's CPU
  # ns over the phase and its output.
  Phase = Struct.new(:d, :count, :cpu_ns, :text)

  def bpf_phase(args, name, register:, settle: 0.2, phase: DEPTH_PHASE)
    rp = Rubyprofd.new(["-F", DEPTH_HZ.to_s, *args], output: File.join(OUT, "#{name}.pb.gz"),
                       register: register, cpus: "0")
    yield rp if block_given?
    sleep settle
    a = rp.snapshot
    cpu0 = cpu_ns(rp.pid)
    sleep phase
    cpu1 = cpu_ns(rp.pid)
    b = rp.snapshot
    rp.stop
    d = delta(a, b)
    count = ->(k) { b[:counters].fetch(RP_STAT.fetch(k), 0) - a[:counters].fetch(RP_STAT.fetch(k), 0) }
    Phase.new(d.merge(per_sample_ns: per_ruby_sample(d, @r[:c0][:ours_ns]),
                      daemon_ns: d[:ruby_samples].zero? ? nil : (cpu1 - cpu0) / d[:ruby_samples].to_f),
              count, cpu1 - cpu0, rp.text)
  end

  def pid_args(pids)
    pids.flat_map { |p| ["--pid", p.to_s] }
  end

  def measure_depths
    @r[:depth] = {}
    DEPTHS.each do |depth|
      log "BPF time per sample at #{depth} frames: rubyprofd and the floor alternated, #{DEPTH_PAIRS} times at #{DEPTH_HZ} Hz"
      spinners = [0, @wcpu].map { |c| ruby("deep", depth.to_s, cpus: c, nice: 10) }
      spinners.each { |s| s.wait_for(/READY/) }
      pids = spinners.map(&:pid)
      ours = []
      floor = []
      targets = nil
      DEPTH_PAIRS.times do
        d = bpf_phase(pid_args(pids), "depth-#{depth}", register: pids) { |rp| targets ||= floor_targets(rp, pids) }.d
        ours << d.merge(frames_per_stack: d[:ruby_stacks].zero? ? 0 : d[:frames] / d[:ruby_stacks].to_f)
        next unless targets

        f = run_floor(targets)
        floor << f.merge(per_sample_ns: per_floor_sample(f), frames_per_stack: f[:frames] / [f[:target_samples], 1].max.to_f)
      end
      spinners.each { |s| s.stop(:KILL) }
      ratios = floor.empty? ? [] : ours.zip(floor).map { |o, f| o[:per_sample_ns] / f[:per_sample_ns] }
      @r[:depth][depth] = { ours: ours, floor: floor, ratios: ratios,
                            floor_note: targets ? nil : "EC not in static TLS" }
      fmt = ->(xs) { xs.map { |x| format('%.2f', x[:per_sample_ns] / 1e3) }.join("/") }
      log format("  rubyprofd %s µs, floor %s µs, %.1f frames/stack; daemon %s µs CPU per sample",
                 fmt.call(ours), fmt.call(floor), ours.first[:frames_per_stack],
                 ours.map { |o| o[:daemon_ns] ? format('%.1f', o[:daemon_ns] / 1e3) : "n/a" }.join("/"))
    end
  end

  # -- 3a. the OpenTelemetry thread context: the same spinner without and with one -----------------

  # tests/e2e/cext/otelctx.c, the tests' writer (TLSDESC, what the OTEP recommends), for this Ruby.
  def otelctx_so
    so = File.join(OUT, "otelctx.so")
    hdr, arch = RbConfig::CONFIG.values_at("rubyhdrdir", "rubyarchhdrdir")
    src = File.join(SRC, "tests/e2e/cext/otelctx.c")
    ok = system("gcc", "-O2", "-shared", "-fPIC", "-w", "-mtls-dialect=gnu2", "-DOTELCTX_TLSDESC",
                "-I", hdr, "-I", arch, "-o", so, src)
    raise "cannot build #{src}" unless ok

    so
  end

  # BPF time and daemon CPU per sample of two Rubies spinning TCTX_DEPTH frames deep, one that
  # publishes no thread context and one whose thread has a record attached (process context,
  # key map, a record of 28 + 21 bytes), each profiled alone in turn (DEPTH_PAIRS times), both
  # running all along: the extra reads of a sample with a context, as a ratio of one run.
  def measure_tctx
    log "thread context: #{TCTX_DEPTH} frames without and with a published record, alternated #{DEPTH_PAIRS} times at #{DEPTH_HZ} Hz"
    # both on the workload CPU (each gets half of it), the daemon on CPU 0: the same for both
    plain = ruby("deep", TCTX_DEPTH.to_s, cpus: @wcpu, nice: 10)
    ctx = ruby("deep-ctx", TCTX_DEPTH.to_s, otelctx_so, cpus: @wcpu, nice: 10)
    [plain, ctx].each { |c| c.wait_for(/READY/) }
    res = { none: [], ctx: [] }
    DEPTH_PAIRS.times do
      { none: plain, ctx: ctx }.each do |k, child|
        d = bpf_phase(pid_args([child.pid]), "tctx-#{k}", register: [child.pid]).d
        res[k] << d.merge(tctx_share: d[:ruby_samples].zero? ? 0 : d[:tctx] / d[:ruby_samples].to_f)
      end
    end
    [plain, ctx].each { |c| c.stop(:KILL) }
    res[:ratios] = res[:ctx].zip(res[:none]).map { |c, n| c[:per_sample_ns] && n[:per_sample_ns] ? c[:per_sample_ns] / n[:per_sample_ns] : nil }
    @r[:tctx] = res
    fmt = ->(xs) { xs.map { |x| x[:per_sample_ns] ? format('%.2f', x[:per_sample_ns] / 1e3) : "n/a" }.join("/") }
    log format("  without %s µs, with %s µs (%s of its samples carried the record)", fmt.call(res[:none]), fmt.call(res[:ctx]),
               res[:ctx].map { |x| format('%.0f %%', 100 * x[:tctx_share]) }.join("/"))
  end

  def tctx_row
    t = @r[:tctx]
    return nil unless t

    none = t[:none].filter_map { |x| x[:per_sample_ns] && x[:per_sample_ns] / 1e3 }
    with = t[:ctx].filter_map { |x| x[:per_sample_ns] && x[:per_sample_ns] / 1e3 }
    dn = t[:none].filter_map { |x| x[:daemon_ns] && x[:daemon_ns] / 1e3 }
    dc = t[:ctx].filter_map { |x| x[:daemon_ns] && x[:daemon_ns] / 1e3 }
    share = median(t[:ctx].map { |x| 100 * x[:tctx_share] })
    ["BPF time per sample with an OpenTelemetry thread context", format("%d Hz, %d frames, a record of 49 bytes", DEPTH_HZ, TCTX_DEPTH),
     "#{spread(with, '%.2f')} µs; ×#{spread(t[:ratios], '%.3f')} the same spinner without one",
     format("without a context %s µs (a process that publishes none reads nothing more); daemon CPU per sample %s µs " \
            "with, %s µs without; %.0f %% of the samples with a context carried it", spread(none, '%.2f'),
            spread(dc, '%.2f'), spread(dn, '%.2f'), share),
     "—", "no budget"]
  end

  # -- 3b. mixed stacks: --stacks mixed beside --stacks ruby --------------------------------------

  # BPF time and daemon CPU per sample of the same two Rubies, profiled in Ruby mode and in mixed
  # mode alternately (MIXED_PAIRS times each), so that the ratio of the two is of one run.
  def measure_mixed
    @r[:mixed] = {}
    MIXED_CASES.each do |kind, depth|
      key = "#{kind}-#{depth}"
      log "mixed stacks, #{kind} at #{depth} Ruby frames: --stacks ruby and --stacks mixed alternated, #{MIXED_PAIRS} times at #{DEPTH_HZ} Hz"
      spinners = [0, @wcpu].map { |c| ruby(kind, depth.to_s, cpus: c, nice: 10) }
      spinners.each { |s| s.wait_for(/READY/) }
      pids = spinners.map(&:pid)
      runs = { "ruby" => [], "mixed" => [] }
      MIXED_PAIRS.times do
        %w[ruby mixed].each do |mode|
          ph = bpf_phase(["--stacks", mode, *pid_args(pids)], "mixed-#{key}-#{mode}", register: pids,
                         settle: 0.3, phase: MIXED_PHASE)
          runs[mode] << ph.d.merge(ustacks: ph.count.("USTACKS"), ustack_lost: ph.count.("USTACK_LOST"),
                                   native_line: ph.text[/^native: .*/])
        end
      end
      spinners.each { |s| s.stop(:KILL) }
      ratio = ->(k) { runs["mixed"].zip(runs["ruby"]).filter_map { |m, r| m[k] && r[k] && m[k] / r[k] } }
      @r[:mixed][key] = { kind: kind, depth: depth, runs: runs, bpf_ratios: ratio.(:per_sample_ns),
                          daemon_ratios: ratio.(:daemon_ns) }
      fmt = ->(xs, k) { xs.map { |x| x[k] ? format('%.1f', x[k] / 1e3) : "n/a" }.join("/") }
      log format("  BPF µs per sample: ruby %s, mixed %s; daemon µs CPU per sample: ruby %s, mixed %s",
                 fmt.(runs["ruby"], :per_sample_ns), fmt.(runs["mixed"], :per_sample_ns),
                 fmt.(runs["ruby"], :daemon_ns), fmt.(runs["mixed"], :daemon_ns))
    end
  end

  # --native-processes all: the cost of a sample of a process that is no Ruby (two C-level
  # spinners: Rubies not registered, sampled as native processes), BPF and daemon.
  def measure_other_processes
    log "mixed stacks of other processes: BPF and daemon cost per sample with --native-processes all"
    spinners, sleeper = busy_unregistered
    runs = MIXED_PAIRS.times.map do
      ph = bpf_phase(["--stacks", "mixed", "--native-processes", "all", *pid_args([sleeper.pid])], "other",
                     register: [], settle: 0.3, phase: MIXED_PHASE)
      d = ph.d
      n = ph.count.("NATIVE_ALONE")
      { bpf_ns: d[:run_time_ns] / [d[:run_cnt], 1].max.to_f, samples: d[:run_cnt], alone: n,
        daemon_ns: n.zero? ? nil : ph.cpu_ns / n.to_f, line: ph.text[/^other processes: .*/] }
    end
    sleeper.stop(:KILL)
    spinners.each { |s| s.stop(:KILL) }
    @r[:other] = runs
    log format("  BPF %s µs per sample (Ruby mode, another process: %.1f µs); daemon %s µs CPU per native sample",
               runs.map { |r| format('%.1f', r[:bpf_ns] / 1e3) }.join("/"), @r[:c0][:ours_ns] / 1e3,
               runs.map { |r| r[:daemon_ns] ? format('%.0f', r[:daemon_ns] / 1e3) : "n/a" }.join("/"))
  end

  def other_row
    runs = @r[:other]
    ["Mixed stacks of every process (--native-processes all)", format("%d Hz, 2 busy processes, --oneshot", DEPTH_HZ),
     "BPF #{spread(runs.map { |r| r[:bpf_ns] / 1e3 }, '%.1f')} µs per sample (all samples); daemon " \
       "#{spread(runs.filter_map { |r| r[:daemon_ns] && r[:daemon_ns] / 1e3 }, '%.0f')} µs CPU per native sample",
     "Ruby mode: #{format('%.1f', @r[:c0][:ours_ns] / 1e3)} µs per sample of another process; " \
       "#{runs.sum { |r| r[:alone] }} native samples; the daemon's figure includes a Dwfl per new process", "—", "no budget"]
  end

  def mixed_rows
    MIXED_CASES.map do |kind, depth|
      m = @r[:mixed]["#{kind}-#{depth}"]
      r, x = m[:runs]["ruby"], m[:runs]["mixed"]
      us_of = ->(xs, k) { spread(xs.filter_map { |o| o[k] && o[k] / 1e3 }, "%.1f") }
      lost = x.sum { |o| o[:ustack_lost] }
      ["Mixed stacks, #{kind == "zlib" ? "in zlib's deflate" : "spinning in Ruby"}, #{depth} Ruby frames",
       format("%d Hz, 2 Rubies, --oneshot, ruby and mixed alternated", DEPTH_HZ),
       "BPF #{us_of.(x, :per_sample_ns)} µs (ruby #{us_of.(r, :per_sample_ns)} µs, ×#{spread(m[:bpf_ratios], '%.1f')}); " \
         "daemon #{us_of.(x, :daemon_ns)} µs (ruby #{us_of.(r, :daemon_ns)} µs, ×#{spread(m[:daemon_ratios], '%.1f')})",
       "per sample; #{lost} copies lost; #{x.last[:native_line] || 'no summary'}", "—", "no budget"]
    end
  end

  def per_floor_sample(f)
    (f[:run_time_ns] - @r[:c0][:floor_ns] * (f[:run_cnt] - f[:target_samples])) / [f[:target_samples], 1].max.to_f
  end

  # The floor walks exactly what rubyprofd walks: take the offsets rubyprofd validated.
  def floor_targets(rp, pids)
    procs = rp.procs
    pids.map do |pid|
      v = procs.fetch(pid)
      return nil unless v.fetch("ec_mode") == RP_EC_TLS_STATIC

      o = v.fetch("off")
      [pid, v.fetch("tls_off"), o.fetch("ec_vm_stack"), o.fetch("ec_vm_stack_size"), o.fetch("ec_cfp"),
       o.fetch("cfp_size")].join(":")
    end
  end

  # -- 4. slowdown of CPU-bound workloads ----------------------------------------------------------

  def slow_configs
    SLOW_HZ.map { |hz| [:rubyprofd, hz] } + [[:bpftrace, 99], [:stackprof, 99]]
  end

  # Each profiler runs for a while on the workload; meanwhile its sampling is switched off and on
  # every TOGGLE_PHASE seconds (bpfbench toggle; stackprof through signals), so that every phase
  # with sampling has phases without it a fraction of a second before and after.
  def measure_slowdown
    @r[:slowdown] = {}
    %w[methods blocks].each do |kind|
      log "slowdown, #{kind} workload on CPU #{@wcpu}: sampling off/on every #{TOGGLE_PHASE} s"
      w = ruby("workload", kind, cpus: @wcpu)
      w.wait_for(/READY/)
      sleep 1.0 # warm up: method caches, allocator
      runs = slow_configs.to_h do |who, hz|
        secs = who == :rubyprofd && hz == 99 ? SLOW_MAIN_S : SLOW_S
        ["#{who}@#{hz}", toggled_run(w, who, hz, secs)]
      end
      w.stop(:KILL)
      @r[:slowdown][kind] = slowdown_results(w, runs)
    end
  end

  def toggled_run(w, who, hz, secs)
    case who
    when :rubyprofd
      rp = Rubyprofd.new(["-F", hz.to_s, "--pid", w.pid.to_s], output: File.join(OUT, "slowdown.pb.gz"),
                         register: [w.pid], cpus: "0")
      sleep 0.2
      a = rp.snapshot
      phases = toggle(rp.pid, secs)
      d = delta(a, rp.snapshot)
      rp.stop
      { who: who, hz: hz, phases: phases, bpf: d }
    when :bpftrace
      bt = Child.new(["taskset", "-c", "0", "bpftrace", "-e", "profile:hz:#{hz} /pid == #{w.pid}/ { @[ustack] = count(); }"])
      prog = wait_sampling(bt)
      sleep 0.2
      a = perf_progs(bt.pid).fetch(prog)
      phases = toggle(bt.pid, secs)
      b = perf_progs(bt.pid).fetch(prog)
      bt.stop(:INT)
      { who: who, hz: hz, phases: phases, bpf: { run_time_ns: b[:run_time_ns] - a[:run_time_ns], run_cnt: b[:run_cnt] - a[:run_cnt] } }
    when :stackprof
      { who: who, hz: hz, phases: stackprof_toggle(w, secs) }
    end
  end

  def toggle(pid, secs)
    out = IO.popen(["taskset", "-c", "0", BPFBENCH, "toggle", "-p", pid.to_s, "-d", secs.to_s, "-P", TOGGLE_PHASE.to_s], &:read)
    raise "bpfbench toggle failed" unless $?.success?

    j = JSON.parse(out)
    ends = j["phases"].drop(1).map(&:last) + [j["end"]]
    j["phases"].zip(ends).map { |(on, t1), t2| { on: on == 1, t1: t1, t2: t2 } }
  end

  # stackprof runs in the workload: switched by signals, at the workload's next report.
  def stackprof_toggle(w, secs)
    start = mono
    seen = w.lines.size
    k = 0
    while (k + 1) * TOGGLE_PHASE < secs
      k += 1
      sleep [start + k * TOGGLE_PHASE * 1e9 - mono, 0].max / 1e9
      w.signal(k.odd? ? :USR1 : :USR2)
    end
    w.signal(:USR2) if k.odd?
    sleep TOGGLE_PHASE
    switches = w.lines.drop(seen).filter_map { |_, l| l =~ /\ASTACKPROF (on|off) (\d+)\z/ && [Regexp.last_match(1) == "on", Integer(Regexp.last_match(2))] }
    bounds = [[false, start]] + switches
    bounds.each_cons(2).map { |(on, t1), (_, t2)| { on: on, t1: t1, t2: t2 } }
  end

  # Work per second of the workload thread's CPU time in [t1, t2], from its own clocks; nil when
  # the phase holds too few reports. CPU time, not wall time: other tasks on the workload's CPU
  # (this machine is shared) do not count, while the sampling interrupts and BPF programs that hit
  # the thread do (this kernel has no IRQ time accounting: interrupt time is charged to the
  # interrupted task). The first report interval after a switch is left out.
  def throughput(recs, t1, t2)
    inside = recs.select { |t, _, _| t >= t1 + 25_000_000 && t <= t2 }
    return nil if inside.size < 3

    { thr: (inside.last[2] - inside.first[2]) / ((inside.last[1] - inside.first[1]) / 1e9),
      cpu_s: (inside.last[1] - inside.first[1]) / 1e9 * (t2 - t1) / (inside.last[0] - inside.first[0]) }
  end

  # Slowdown of each phase with sampling against the mean of the two phases without it around it,
  # and the null (A/A): the same figure for each phase without sampling against the two phases
  # without sampling around it, which shows the noise.
  def neighbour_effects(ph)
    effect = ->(a, b, c) { 100.0 * (1 - b[:thr][:thr] / ((a[:thr][:thr] + c[:thr][:thr]) / 2)) }
    ok = ->(*ps) { ps.all? { |p| p[:thr] } }
    on = ph.each_cons(3).filter_map { |a, b, c| effect.call(a, b, c) if b[:on] && !a[:on] && !c[:on] && ok.call(a, b, c) }
    offs = ph.reject { |p| p[:on] }
    null = offs.each_cons(3).filter_map { |a, b, c| effect.call(a, b, c) if ok.call(a, b, c) }
    [on, null]
  end

  def mean_ci(xs)
    return nil if xs.size < 3

    m = xs.sum / xs.size
    sd = Math.sqrt(xs.sum { |x| (x - m)**2 } / (xs.size - 1))
    { mean: m, ci95: 1.96 * sd / Math.sqrt(xs.size), n: xs.size, median: median(xs) }
  end

  def slowdown_results(w, runs)
    recs = w.lines.filter_map { |_, l| l.split.map { |x| Integer(x) } if l =~ /\A\d+ \d+ \d+\z/ }
    res = { configs: {} }
    nulls = []
    runs.each do |key, run|
      run[:phases].each { |p| p[:thr] = throughput(recs, p[:t1], p[:t2]) }
      on, off = neighbour_effects(run[:phases])
      nulls.concat(off)
      c = { effects: on, stat: mean_ci(on), null: mean_ci(off) }
      cpu_on = run[:phases].select { |p| p[:on] && p[:thr] }.sum { |p| p[:thr][:cpu_s] }
      if run[:who] == :rubyprofd
        d = run[:bpf]
        # All of rp_on_sample's run time (also its runs on the other CPU) per sample of the
        # workload: an upper bound that needs no estimate of what those other runs cost.
        c[:per_sample_ns] = d[:ruby_samples].zero? ? nil : d[:run_time_ns] / d[:ruby_samples].to_f
        # Samples per second of the workload's CPU time (counters run only while sampling is on).
        c[:rate] = d[:ruby_samples] / cpu_on
        c[:derived] = 100.0 * c[:rate] * (c[:per_sample_ns] + irq_ns - @r[:irq][:prog_ns]) / 1e9
      elsif run[:who] == :bpftrace
        # All of bpftrace's BPF time, also its runs on the other CPU, charged to the workload.
        c[:bpf_per_s_ns] = run[:bpf][:run_time_ns] / cpu_on
        c[:derived] = 100.0 * (c[:bpf_per_s_ns] + run[:hz] * (irq_ns - @r[:irq][:prog_ns])) / 1e9
      end
      c[:phases] = run[:phases].map { |p| { on: p[:on], thr: p[:thr] && p[:thr][:thr] } }
      res[:configs][key] = c
    end
    res[:null] = mean_ci(nulls)
    res[:units_per_s] = median(runs.values.flat_map { |r| r[:phases].reject { |p| p[:on] }.filter_map { |p| p[:thr] && p[:thr][:thr] } })
    log "  " + res[:configs].map { |k, c| c[:stat] ? format("%s %+.2f±%.2f%%", k, c[:stat][:mean], c[:stat][:ci95]) : "#{k} n/a" }.join(", ") +
        format(", A/A %+.2f±%.2f%%", res[:null][:mean], res[:null][:ci95])
    res
  end

  # -- 5. daemon cost ---------------------------------------------------------------------------------

  def measure_daemon
    @r[:daemon] = {}
    rubies = []
    DAEMON_NPROCS.each do |n|
      log "service cost with #{n} busy Ruby processes at #{DAEMON_HZ} Hz (whole host)"
      while rubies.size < n
        rubies << ruby("workload", rubies.size.even? ? "methods" : "blocks", "quiet", nice: 10)
      end
      rubies.each { |r| r.wait_for(/READY/) }
      @r[:daemon][n] = daemon_run("daemon-#{n}", [], rubies.map(&:pid))
    end
    # The same 50 named with --pid: no scan of /proc for new processes. The difference to the
    # whole-host run is what that scan costs; the rest is taking in and aggregating samples.
    n = DAEMON_NPROCS.last
    log "daemon cost with the same #{n} Ruby processes named with --pid (no /proc scan)"
    @r[:daemon_pids] = daemon_run("daemon-#{n}-pids", rubies.flat_map { |r| ["--pid", r.pid.to_s] }, rubies.map(&:pid))
    rubies.each { |r| r.stop(:KILL) }
  end

  def daemon_run(name, args, pids)
    rusage_file = File.join(OUT, "#{name}.rusage.json")
    FileUtils.rm_f(rusage_file)
    t0 = mono
    spool = File.join(OUT, "#{name}.spool")
    FileUtils.rm_rf(spool)
    rp = Rubyprofd.new(["-F", DAEMON_HZ.to_s, *args], output: spool, service: true,
                       register: pids, wrap: [BPFBENCH, "rusage", rusage_file, "--"])
    ready_s = (mono - t0) / 1e9
    startup_cpu = cpu_ns(rp.pid)
    ringbuf = bpftool_json("map", "show", "id", rp.maps.fetch("samples").to_s).fetch("max_entries")
    sleep 0.5
    windows = DAEMON_WINDOWS.times.map do
      c1 = cpu_ns(rp.pid)
      t1 = mono
      sleep DAEMON_WINDOW
      100.0 * (cpu_ns(rp.pid) - c1) / (mono - t1)
    end
    status = proc_status(rp.pid)
    # What the daemon profiles, from its procs map (the log's per-process lines are budgeted):
    # the bench's Rubies and any other Ruby of the host that the whole-host service sees too.
    profiled = rp.procs.keys
    rp.stop
    ru = JSON.parse(File.read(rusage_file), symbolize_names: true)
    r = { cpu_pct: windows, startup_cpu_ms: startup_cpu / 1e6, ready_s: ready_s, maxrss_mib: ru[:maxrss_kib] / 1024.0,
          profiled: profiled.size, others: (profiled - pids).size, ringbuf_mib: ringbuf / 1048576.0,
          rss_anon_mib: status.fetch("RssAnon", 0) / 1024.0, rss_file_mib: status.fetch("RssFile", 0) / 1024.0,
          rss_shmem_mib: status.fetch("RssShmem", 0) / 1024.0, utime_ms: ru[:utime_us] / 1e3, stime_ms: ru[:stime_us] / 1e3 }
    log format("  %.3f%% of a core (median), peak RSS %.1f MiB, startup %.0f ms CPU, %d processes profiled (%d not the bench's)",
               median(windows), r[:maxrss_mib], r[:startup_cpu_ms], r[:profiled], r[:others])
    r
  end

  # -- 6. latency -------------------------------------------------------------------------------------

  def measure_latency
    log "latency: exec of a new Ruby to its first sample; end of a run to its profile on disk (#{LATENCY_RUNS} runs)"
    rng = Random.new(mono)
    firsts = []
    writes = []
    LATENCY_RUNS.times do |run|
      spool = File.join(OUT, "latency-#{run}.spool")
      FileUtils.rm_rf(spool)
      rp = Rubyprofd.new(["-F", LATENCY_HZ.to_s, "--interval", "2"], output: spool, service: true)
      sleep 0.3
      stamps = LATENCY_RUBIES.times.map do |j|
        sleep rng.rand(0.1..0.5) # not in step with anything of the daemon's
        prefix = "lat#{run}x#{j}"
        t0 = mono
        c = ruby("stamp", t0.to_s, prefix, "1.2")
        boot = Integer(c.wait_for(/\ABOOT \d+\z/).first.last.split.last)
        sleep 0.01 until c.exited? || mono - t0 > 5e9
        c.stop(:TERM)
        { prefix: prefix, boot_ms: boot / 1e6 }
      end
      # SIGINT: the service writes the interval in progress, then exits
      t_sig = mono
      rp.child.signal(:INT)
      sleep 0.0005 until rp.exited?
      written = (mono - t_sig) / 1e6
      rp.stop
      files = Dir[File.join(spool, "*.pb.gz")]
      raise "no profile written:\n#{rp.text}" if files.empty?

      writes << written
      strings = files.map { |f| Zlib::GzipReader.open(f, &:read).b }.join
      stamps.each do |s|
        ms = strings.scan(/#{s[:prefix]}_(\d+)ms/n).map { |m| Integer(m[0]) }.min
        firsts << s.merge(first_sample_ms: ms)
      end
    end
    @r[:latency] = { first: firsts, write_ms: writes }
    log format("  first sample after %s ms; profile on disk after %s ms",
               firsts.map { |f| f[:first_sample_ms] || '-' }.join("/"), writes.map { |w| format('%.0f', w) }.join("/"))
  end

  # -- 7. the service's idle cost ----------------------------------------------------------------------

  # The service at IDLE_HZ for IDLE_S seconds with nothing to profile, then with one busy Ruby. Both
  # name their process with --pid (a sleeping non-Ruby for "none"), so that the other Rubies of a
  # shared host (this driver included) are not profiled. CPU: utime + stime of all its threads
  # (/proc/PID/task/*/stat, clock ticks) and their scheduler run time (schedstat, ns); wake-ups:
  # voluntary context switches of all its threads (each is a sleep that ended). Every exec on the
  # host wakes it (a new Ruby is looked at at once): the process events over the window are shown
  # beside, since on a shared machine they, not the daemon's own timers, are most wake-ups.
  def measure_idle
    @r[:idle] = {}
    sleeper = Child.new(%w[sleep 3600])
    busy = ruby("workload", "methods", "quiet", cpus: @wcpu, nice: 10)
    busy.wait_for(/READY/)
    [[:none, sleeper.pid, []], [:one, busy.pid, [busy.pid]]].each do |key, pid, register|
      log "service idle cost at #{IDLE_HZ} Hz, #{key == :none ? "no Ruby" : "one busy Ruby"}, #{IDLE_S.round} s"
      spool = File.join(OUT, "idle-#{key}.spool")
      FileUtils.rm_rf(spool)
      rp = Rubyprofd.new(["-F", IDLE_HZ.to_s, "--pid", pid.to_s], output: spool, service: true, register: register)
      sleep 1.0 # past the start-up
      a = idle_snapshot(rp.pid)
      ca = rp.counters
      # IDLE_WINDOWS windows in a row: the spread of the CPU figure
      marks = [a] + IDLE_WINDOWS.times.map do
        sleep IDLE_S / IDLE_WINDOWS
        idle_snapshot(rp.pid)
      end
      cb = rp.counters
      b = marks.last
      windows = marks.each_cons(2).map do |x, y|
        100.0 * (y[:ticks] - x[:ticks]) / Etc.sysconf(Etc::SC_CLK_TCK) / ((y[:t] - x[:t]) / 1e9)
      end
      rp.stop
      ev = RP_STAT.fetch("PROC_EVENTS")
      secs = (b[:t] - a[:t]) / 1e9
      @r[:idle][key] = { seconds: secs, hz: IDLE_HZ, window_cpu_pct: windows,
                         cpu_pct: 100.0 * (b[:ticks] - a[:ticks]) / Etc.sysconf(Etc::SC_CLK_TCK) / secs,
                         run_pct: 100.0 * (b[:run_ns] - a[:run_ns]) / 1e9 / secs,
                         wakeups_per_s: (b[:voluntary] - a[:voluntary]) / secs,
                         involuntary_per_s: (b[:involuntary] - a[:involuntary]) / secs,
                         events_per_s: (cb.fetch(ev, 0) - ca.fetch(ev, 0)) / secs,
                         samples_per_s: (cb.fetch(RP_STAT.fetch("RUBY_SAMPLES"), 0) -
                                         ca.fetch(RP_STAT.fetch("RUBY_SAMPLES"), 0)) / secs,
                         load: File.read("/proc/loadavg").split.first(3).join(" ") }
      log format("  %.3f %% of a core (utime + stime), %.3f %% (schedstat), %.1f wake-ups/s, %.1f process events/s",
                 @r[:idle][key][:cpu_pct], @r[:idle][key][:run_pct], @r[:idle][key][:wakeups_per_s],
                 @r[:idle][key][:events_per_s])
    end
    busy.stop(:KILL)
    sleeper.stop(:KILL)
  end

  def idle_snapshot(pid)
    ticks = 0
    vol = 0
    invol = 0
    Dir.glob("/proc/#{pid}/task/*").each do |t|
      stat = File.read(File.join(t, "stat"))
      f = stat[stat.rindex(")") + 2..].split
      ticks += Integer(f[11]) + Integer(f[12]) # utime, stime: fields 14 and 15
      st = File.read(File.join(t, "status"))
      vol += Integer(st[/^voluntary_ctxt_switches:\s+(\d+)/, 1])
      invol += Integer(st[/^nonvoluntary_ctxt_switches:\s+(\d+)/, 1])
    rescue Errno::ENOENT, Errno::ESRCH
      next
    end
    { t: mono, ticks: ticks, run_ns: cpu_ns(pid), voluntary: vol, involuntary: invol }
  end

  def idle_rows
    { none: "no Ruby (--pid of a sleeping non-Ruby process)", one: "one busy Ruby (--pid)" }.map do |key, what|
      d = @r[:idle][key]
      ["Service idle cost, #{key == :none ? "no Ruby" : "one Ruby"}",
       format("%d Hz, %s, 10 s intervals, %.0f s", d[:hz], what, d[:seconds]),
       format("%s %% of a core (%d windows); %.1f wake-ups/s", spread(d[:window_cpu_pct], "%.3f"), IDLE_WINDOWS,
              d[:wakeups_per_s]),
       format("utime + stime of its threads over the window (scheduler run time %.3f %%); wake-ups: voluntary " \
              "context switches (%.1f/s involuntary), of which up to %.1f/s the host's process events (every exec " \
              "wakes it); %.1f Ruby samples/s; load %s at the end", d[:run_pct], d[:involuntary_per_s],
              d[:events_per_s], d[:samples_per_s], d[:load]),
       "—", "no budget"]
    end
  end

  # -- wall-clock mode ------------------------------------------------------------------------------

  # For each thread count, one workload on the workload CPU, and in turn: rubyprofd --clock wall
  # with stack reuse, the same without it, CPU mode; each at 19 and 99 Hz. Per run: a steady window
  # (the daemon's CPU from its threads' schedstat, the iterator's from its own counters and from
  # bpf_stats), then the slowdown phases. A wall-mode daemon is switched off and on with
  # SIGSTOP/SIGCONT (its iterator runs only in its own read(), on its own clock; the cpu-clock
  # events are paused in wall mode), CPU mode with bpfbench toggle as in the slowdown rows.
  def measure_wall
    @r[:wall] = {}
    WALL_NTHREADS.each do |n|
      w = ruby("workload", "methods", "threads", n.to_s, cpus: @wcpu)
      w.wait_for(/READY/)
      runs = {}
      WALL_HZS.each do |hz|
        WALL_MODES.each do |mode, reuse|
          log "wall bench: #{n} thread#{n == 1 ? '' : 's'}, #{mode} at #{hz} Hz"
          runs["#{mode}@#{hz}"] = wall_run(w, mode, reuse, hz)
        end
      end
      res = slowdown_results(w, runs)
      runs.each { |k, r| res[:configs][k].merge!(r[:steady]) }
      w.stop(:KILL)
      @r[:wall][n] = res
    end
  end

  def wall_run(w, mode, reuse, hz)
    argv = ["taskset", "-c", "0", RUBYPROFD, "--oneshot", "-v", "--duration", "3600", "-o",
            File.join(OUT, "wall.pb.gz"), "-F", hz.to_s, "--pid", w.pid.to_s]
    argv += ["--clock", "wall"] unless mode == :cpu
    env = reuse ? { "RP_WALL_REUSE" => reuse } : {}
    # the 6.1 way of running it (an iterator created and read per run), beside the syscall program
    env["RP_WALL_ITER"] = "1" if mode == :wall_iter
    # every tick runs, even while nothing of the process was switched (the switch hooks off)
    env["RP_WALL_SKIP"] = "0" if mode == :wall_noskip
    # still ticks skipped, but the daemon wakes at every one all the same
    env["RP_WALL_SLEEP"] = "0" if mode == :wall_nosleep
    rp = Child.new(argv, env: env)
    rp.wait_for(/pid #{w.pid}: Ruby /)
    if mode == :cpu
      begin
        wait_sampling(rp, timeout: 60)
      rescue RuntimeError => e
        log "  #{e.message.lines.first.chomp}: measured all the same"
      end
    else
      deadline = mono + 30e9
      sleep 0.05 until (wall_stats(rp.pid)["RUNS"] || 0).positive? || mono > deadline
    end
    # past the start: the first walks of every thread, their symbols, the first stack copies
    sleep 2.0
    a = wall_snapshot(rp.pid)
    marks = [a] + WALL_WINDOWS.times.map do
      sleep WALL_STEADY_S / WALL_WINDOWS
      wall_snapshot(rp.pid)
    end
    b = marks.last
    # the daemon's CPU per thread-sample of each part of the window
    per_window = marks.each_cons(2).filter_map do |x, y|
      n = (y[:wstats]["THREADS"] || 0) - (x[:wstats]["THREADS"] || 0)
      (y[:cpu_ns] - x[:cpu_ns]) / n.to_f if n.positive?
    end
    phases = mode == :cpu ? toggle(rp.pid, WALL_TOGGLE_S) : stop_toggle(rp.pid, WALL_TOGGLE_S)
    rp.stop(:INT)
    secs = (b[:t] - a[:t]) / 1e9
    ws = ->(k) { (b[:wstats][k] || 0) - (a[:wstats][k] || 0) }
    steady = { daemon_pct: 100.0 * (b[:cpu_ns] - a[:cpu_ns]) / 1e9 / secs, seconds: secs }
    if mode != :cpu
      threads = ws.call("THREADS")
      hook_n = b[:hook][:run_cnt] - a[:hook][:run_cnt]
      hook_ns = b[:hook][:run_time_ns] - a[:hook][:run_time_ns]
      steady.merge!(hook_switches_per_s: hook_n / secs, hook_ns_per_switch: hook_n.zero? ? nil : hook_ns / hook_n.to_f,
                    hook_pct: 100.0 * hook_ns / 1e9 / secs)
      steady.merge!(thread_samples: threads, runs: ws.call("RUNS"), reused: ws.call("REUSED"),
                    iter_pct: 100.0 * ws.call("RUN_NS") / 1e9 / secs,
                    iter_ns_per_thread: threads.zero? ? nil : ws.call("RUN_NS") / threads.to_f,
                    stats_ns_per_thread: threads.zero? ? nil : (b[:iter][:run_time_ns] - a[:iter][:run_time_ns]) / threads.to_f,
                    daemon_ns_per_thread: threads.zero? ? nil : (b[:cpu_ns] - a[:cpu_ns]) / threads.to_f,
                    daemon_ns_per_thread_windows: per_window)
    end
    { who: mode, hz: hz, phases: phases, steady: steady }
  end

  # The wall program's counters (wall_stats), by name, from the map the daemon holds.
  def wall_stats(pid)
    id = bpf_fd_ids(pid, "map_id").find { |i| bpftool_json("map", "show", "id", i.to_s)["name"] == "wall_stats" }
    return {} unless id

    vals = bpftool_json("map", "dump", "id", id.to_s).to_h do |e|
      f = e["formatted"] || e
      [Integer(f.fetch("key").to_s), Integer(f.fetch("value").to_s)]
    end
    RP_WSTAT.transform_values { |i| vals.fetch(i, 0) }
  rescue RuntimeError
    {}
  end

  # The ids of the BPF maps or programs (key "map_id" / "prog_id") among pid's file descriptors.
  def bpf_fd_ids(pid, key)
    Dir.glob("/proc/#{pid}/fdinfo/*").filter_map do |f|
      File.read(f)[/^#{key}:\s+(\d+)/, 1]&.to_i
    rescue StandardError
      nil
    end.uniq
  end

  # bpf_stats of the first program named one of `names` among those the daemon holds (by fd):
  # the wall run (rp_wall_run, or the iterator rp_wall), or the switch hook (rp_wall_switch: it
  # runs in whatever task switches, on any CPU).
  def prog_stats(pid, names)
    Dir.glob("/proc/#{pid}/fdinfo/*").each do |f|
      info = File.read(f)
      id = info[/^prog_id:\s+(\d+)/, 1]
      next unless id && info =~ /^prog_type:\s+(#{BPF_PROG_TYPE_TRACING}|#{BPF_PROG_TYPE_SYSCALL})$/
      next unless names.include?(bpftool_json("prog", "show", "id", id)["name"])

      return { run_time_ns: Integer(info[/^run_time_ns:\s+(\d+)/, 1] || 0), run_cnt: Integer(info[/^run_cnt:\s+(\d+)/, 1] || 0) }
    rescue StandardError
      next
    end
    { run_time_ns: 0, run_cnt: 0 }
  end

  def wall_snapshot(pid)
    { t: mono, cpu_ns: cpu_ns(pid), wstats: wall_stats(pid), iter: prog_stats(pid, %w[rp_wall_run rp_wall]),
      hook: prog_stats(pid, %w[rp_wall_switch]) }
  end

  # Phases with the daemon stopped (SIGSTOP) and running, TOGGLE_PHASE s each, as toggle() gives.
  def stop_toggle(pid, secs)
    start = mono
    Process.kill(:STOP, pid)
    bounds = [[false, mono]]
    k = 0
    while (k + 1) * TOGGLE_PHASE < secs
      k += 1
      sleep [start + k * TOGGLE_PHASE * 1e9 - mono, 0].max / 1e9
      Process.kill(k.odd? ? :CONT : :STOP, pid)
      bounds << [k.odd?, mono]
    end
    Process.kill(:CONT, pid)
    ends = bounds.drop(1).map(&:last) + [mono]
    bounds.zip(ends).map { |(on, t1), t2| { on: on, t1: t1, t2: t2 } }
  end

  def wall_rows
    names = { wall: "wall, reuse, still ticks skipped and slept through",
              wall_nosleep: "wall, reuse, still ticks skipped (woken at each)", wall_noskip: "wall, reuse, every tick run",
              wall_iter: "wall, reuse, run by a task iterator (6.1)",
              wall_noreuse: "wall, no reuse", cpu: "CPU mode" }
    rows = []
    @r[:wall].each do |n, res|
      WALL_HZS.each do |hz|
        cpu = res[:configs]["cpu@#{hz}"]
        WALL_MODES.map(&:first).each do |mode|
          c = res[:configs]["#{mode}@#{hz}"]
          beside = format("daemon %.3f %% of a core", c[:daemon_pct])
          if mode != :cpu
            beside += format("; iterator %.3f %% of a core, %s µs per thread-sample (bpf_stats %s µs; daemon all-in %s µs); " \
                             "%d thread-samples, %d reused",
                             c[:iter_pct], c[:iter_ns_per_thread] ? format("%.2f", c[:iter_ns_per_thread] / 1e3) : "n/a",
                             c[:stats_ns_per_thread] ? format("%.2f", c[:stats_ns_per_thread] / 1e3) : "n/a",
                             c[:daemon_ns_per_thread] ? format("%.2f", c[:daemon_ns_per_thread] / 1e3) : "n/a",
                             c[:thread_samples], c[:reused])
            beside += format("; %d runs in %.0f s", c[:runs], c[:seconds]) if c[:runs]
            if c[:hook_ns_per_switch]
              beside += format("; switch hook %.0f ns × %.0f switches/s of the host = %.4f %% of a core",
                               c[:hook_ns_per_switch], c[:hook_switches_per_s], c[:hook_pct])
            end
          end
          if mode != :cpu && c[:stat] && cpu[:stat]
            beside += format("; slowdown − CPU mode's: %+.2f points", c[:stat][:mean] - cpu[:stat][:mean])
          end
          judged = []
          if hz == 99
            st = c[:stat]
            judged << ["≤ #{BUDGET_SLOWDOWN_99} % slowdown", judge(st && [st[:mean] - st[:ci95], st[:mean] + st[:ci95]], BUDGET_SLOWDOWN_99)]
          end
          if mode == :wall && n == 50 && hz == 19
            judged << ["≤ #{BUDGET_WALL_THREAD_US.to_i} µs per thread-sample all-in",
                       judge((c[:daemon_ns_per_thread_windows] || []).map { |x| x / 1e3 }, BUDGET_WALL_THREAD_US)]
          end
          result = "slowdown " + pct_ci(c[:stat])
          if c[:daemon_ns_per_thread_windows]
            result += "; daemon all-in #{spread(c[:daemon_ns_per_thread_windows].map { |x| x / 1e3 }, '%.2f')} µs per thread-sample " \
                      "(#{WALL_WINDOWS} windows)"
          end
          rows << ["Wall clock: #{names[mode]}, #{n} thread#{n == 1 ? '' : 's'}",
                   "#{hz} Hz, #{n - 1} parked #{WALL_PARK_DEPTH} frames deep, #{format('%.0f', c[:seconds])} s steady + #{WALL_TOGGLE_S} s toggled",
                   result, beside, judged.empty? ? "—" : judged.map(&:first).join(", "),
                   judged.empty? ? "no budget" : combine(judged)]
        end
      end
      rows << ["Wall clock: workload noise, #{n} thread#{n == 1 ? '' : 's'}", "phases without sampling vs those around them (A/A)",
               pct_ci(res[:null]), "", "—", "no budget"]
    end
    rows
  end

  # -- the table --------------------------------------------------------------------------------------

  # A Ruby with more methods than the symbolizer's caches hold, sampled at a high frequency: the
  # daemon (--oneshot --pid, on CPU 0) and the target (alone on the workload CPU) for
  # MANY_WINDOWS windows of MANY_WINDOW s after its start. Per window: the daemon's CPU per second
  # of the clock, the target's samples and those BPF could not hand over (ring buffer full); at its
  # end the daemon's own summary (every drop by cause, its cache resets).
  def measure_many
    @r[:many] = []
    MANY_CASES.map(&:first).uniq.each do |owners|
      dir = Dir.mktmpdir("rubyprofd-bench-many-")
      facts = File.join(dir, "facts")
      target = Child.new(["taskset", "-c", @wcpu.to_s, "ruby", MANY_METHODS, facts, owners.to_s, "500", "10", "0.0005", "0"])
      deadline = mono + 300e9
      sleep 0.2 until File.exist?(facts) || target.exited? || mono > deadline
      raise "many_methods.rb: no facts after 300 s:\n#{target.text}" unless File.exist?(facts)

      nmethods = Marshal.load(File.binread(facts)).fetch("methods")
      MANY_CASES.select { |o, _| o == owners }.each do |_, hz|
        log "many methods: #{nmethods} methods (#{nmethods * 3} iseqs, #{nmethods * 2} C method entries) at #{hz} Hz, " \
            "#{MANY_WINDOWS} windows of #{MANY_WINDOW} s"
        rp = Rubyprofd.new(["-F", hz.to_s, "--pid", target.pid.to_s], output: File.join(dir, "p.pb.gz"),
                           register: [target.pid], cpus: "0")
        startup_cpu_s = cpu_ns(rp.pid) / 1e9 # discovery, before the first sample is read
        sleep 0.5
        windows = MANY_WINDOWS.times.map do
          a = rp.snapshot
          c1 = cpu_ns(rp.pid)
          t1 = cpu_ns(target.pid)
          sleep MANY_WINDOW
          c2 = cpu_ns(rp.pid)
          t2 = cpu_ns(target.pid)
          d = delta(a, rp.snapshot)
          { seconds: d[:seconds], daemon_pct: 100.0 * (c2 - c1) / (d[:seconds] * 1e9), target_cpu_s: (t2 - t1) / 1e9,
            samples: d[:ruby_samples], dropped: d[:dropped] }
        end
        hwm = proc_status(rp.pid).fetch("VmHWM", 0)
        # The daemon's whole life in CPU (start-up and the samples it still had to read after
        # SIGINT included): what the driver's reaped children used, before and after it.
        kids = Process.times.then { |t| t.cutime + t.cstime }
        stopped = mono
        st = rp.stop
        life_cpu_s = Process.times.then { |t| t.cutime + t.cstime } - kids
        text = rp.text
        ruby_samples = text[/^samples: \d+ on all CPUs, (\d+) Ruby/, 1]&.to_i
        r = { owners: owners, nmethods: nmethods, hz: hz, windows: windows, stop_s: (mono - stopped) / 1e9,
              exit: st&.exitstatus, dropped_line: text[/^dropped: .*/], resets_line: text[/^cache resets: .*/],
              samples_line: text[/^samples: .*/], life_cpu_s: life_cpu_s, startup_cpu_s: startup_cpu_s,
              ruby_samples: ruby_samples,
              hwm_mib: hwm / 1024.0 }
        @r[:many] << r
        log format("  daemon %s %% of a core; %s of the target's samples dropped; %s; %s µs of CPU per sample after its " \
                   "start-up, peak RSS %.1f MiB; exit %.1f s after SIGINT",
                   windows.map { |w| format('%.0f', w[:daemon_pct]) }.join("/"),
                   windows.map { |w| w[:samples].zero? ? "n/a" : format('%.0f %%', 100.0 * w[:dropped] / w[:samples]) }.join("/"),
                   r[:resets_line] || "no cache reset", many_us(r), r[:hwm_mib], r[:stop_s])
      end
      target.stop(:KILL)
      FileUtils.rm_rf(dir)
    end
  end

  # The daemon's CPU per Ruby sample, in µs: its whole life but its start-up (the discovery of the
  # target before sampling), so the samples it still read after SIGINT count too.
  def many_us(r)
    return "n/a" unless r[:ruby_samples].to_i.positive?

    format("%.0f", 1e6 * (r[:life_cpu_s] - r[:startup_cpu_s].to_f) / r[:ruby_samples])
  end

  def many_rows
    (@r[:many] || []).map do |r|
      ws = r[:windows]
      share = ws.map { |w| w[:samples].zero? ? nil : 100.0 * w[:dropped] / w[:samples] }
      resets = r[:resets_line] ? r[:resets_line].sub(/\Acache resets: /, "") : "none"
      ["Many methods, daemon CPU and drops",
       format("%d Hz, --oneshot --pid, %d methods (%d iseqs, %d C method entries), %d windows of %.1f s",
              r[:hz], r[:nmethods], r[:nmethods] * 3, r[:nmethods] * 2, ws.size, median(ws.map { |w| w[:seconds] })),
       "#{spread(ws.map { |w| w[:daemon_pct] }, '%.1f')} % of a core; #{spread(share, '%.1f')} % of the samples dropped " \
         "(ring buffer full)",
       format("%s µs of daemon CPU per sample (its life after start-up, %d samples); %s target samples/s on " \
              "%.2f s of its CPU per second; cache resets: %s; peak RSS %.1f MiB; exit %s, %.1f s after SIGINT",
              many_us(r), r[:ruby_samples].to_i, spread(ws.map { |w| w[:samples] / w[:seconds] }, '%.0f'),
              median(ws.map { |w| w[:target_cpu_s] / w[:seconds] }), resets, r[:hwm_mib], r[:exit].inspect, r[:stop_s]),
       "—", "no budget"]
    end
  end

  # The target's throughput while rubyprofd is started and SIGKILLed again and again (issue 10,
  # item 5; tests/e2e/test_harm.rb checks its results): harm_work.rb's rounds (threads, a fork,
  # GC) on the workload CPU, phases without and with the churn alternated (A/B/A/B); a round
  # counts for the phase it ran wholly inside. The daemons run on CPU 0, the driver's.
  def measure_harm
    log "harm: target rounds without and with a daemon SIGKILLed after 0.2-2 s"
    dir = Dir.mktmpdir("rubyprofd-bench-harm-")
    stop = File.join(dir, "stop")
    w = Child.new(["taskset", "-c", @wcpu.to_s, "ruby", HARM_WORK, "run", File.join(dir, "facts"), stop])
    w.wait_for(/^round 0 /, timeout: 120)
    expected = IO.popen(["ruby", HARM_WORK, "expect", "4"], &:read).split
    rng = Random.new
    phases = []
    kills = 0
    [false, true, false, true].each do |churn|
      t0 = mono
      t1 = t0 + HARM_PHASE * 1e9
      i = 0
      while mono < t1
        unless churn
          sleep 0.1
          next
        end
        argv = if i.even?
                 [RUBYPROFD, "--spool-dir", File.join(dir, "spool"), "--interval", "1", "--frequency", HARM_HZ.to_s,
                  "--log-level", "error"]
               else
                 [RUBYPROFD, "--oneshot", "--frequency", HARM_HZ.to_s, "--duration", "60", "-o",
                  File.join(dir, "p.pb.gz"), "--quiet"]
               end
        pid = Process.spawn(*argv, out: File::NULL, err: File::NULL)
        sleep(rng.rand(0.2..2.0))
        Process.kill(:KILL, pid)
        Process.wait(pid)
        kills += 1
        i += 1
      end
      phases << { churn: churn, from: t0, to: mono }
    end
    FileUtils.touch(stop)
    w.wait_for(/^rounds \d+$/, timeout: 120)
    rounds = w.lines.filter_map do |t, l|
      next unless l =~ /^round (\d+) (\h+) ([\d.]+)$/

      { t_end: t, secs: Float($3), ok: $2 == expected[Integer($1) % 4] }
    end
    times = { false => [], true => [] }
    rounds.each do |r|
      ph = phases.find { |p| r[:t_end] - r[:secs] * 1e9 >= p[:from] && r[:t_end] <= p[:to] }
      times[ph[:churn]] << r[:secs] if ph
    end
    @r[:harm] = { kills: kills, hz: HARM_HZ, phase_s: HARM_PHASE, without_s: times[false], with_s: times[true],
                  rounds: rounds.size, all_equal: rounds.all? { |r| r[:ok] }, exit: w.stop(:TERM).exitstatus }
    FileUtils.rm_rf(dir)
  end

  def harm_row
    h = @r[:harm]
    a, b = h[:without_s], h[:with_s]
    result = if a.empty? || b.empty?
               "no round ran wholly inside a phase (#{a.size} without, #{b.size} with)"
             else
               format("round time ×%.3f under churn (median %.3f s vs %.3f s)", median(b) / median(a), median(b),
                      median(a))
             end
    ["Target under daemon churn (SIGKILL mid-run)",
     "#{h[:hz]} Hz, service and --oneshot alternately, each SIGKILLed after 0.2–2 s (#{h[:kills]} kills); " \
     "2 phases of #{h[:phase_s].round} s with, 2 without",
     result,
     "harm_work.rb rounds (4 threads, a fork, GC.compact): #{a.size} without, #{b.size} with; " \
     "#{h[:all_equal] ? "every checksum equal to the unprofiled one" : "CHECKSUMS DIFFER"}; exit #{h[:exit]}",
     "every checksum equal, exit 0", h[:all_equal] && h[:exit] == 0 ? "PASS" : "MISS: the target was harmed"]
  end

  def us(ns)
    ns.nil? ? "n/a" : format(ns < 10_000 ? "%.2f µs" : "%.1f µs", ns / 1e3)
  end

  # The one verdict rule (VERDICT_RULE): a figure's interval against its budget. xs: the
  # repetitions of this run (their min … max is the interval), or [lo, hi] of a mean's 95 %
  # interval; a missing figure is never a pass.
  def judge(xs, budget)
    xs = Array(xs).compact
    return "MISS: not measured" if xs.empty?

    lo, hi = xs.minmax
    return "PASS" if hi <= budget
    return "MISS" if lo > budget

    "not resolvable here"
  end

  # Several budgets on one row: MISS if one is missed, not resolvable if one is, else PASS.
  def combine(judged)
    vs = judged.map(&:last)
    worst = if vs.any? { |v| v.start_with?("MISS") } then "MISS"
            elsif vs.include?("not resolvable here") then "not resolvable here"
            else "PASS"
            end
    return vs.first if judged.size == 1

    "#{worst} (#{judged.map { |b, v| "#{b}: #{v}" }.join('; ')})"
  end

  def spread(xs, fmt)
    xs = xs.compact
    return "n/a" if xs.empty?

    lo, hi = xs.minmax
    "#{format(fmt, median(xs))} [#{format(fmt, lo)} … #{format(fmt, hi)}]"
  end

  def table_rows
    return [harm_row] if ONLY == "harm"
    return idle_rows if ONLY == "idle"
    return wall_rows if ONLY == "wall"
    return many_rows if ONLY == "many"
    if ONLY == "tctx"
      c0 = @r[:c0]
      return [["BPF time per sample of another process", "#{DEPTH_HZ} Hz", "#{format('%.0f', c0[:ours_ns])} ns",
               "floor #{format('%.0f', c0[:floor_ns])} ns", "—", "no budget"], tctx_row]
    end
    if ONLY == "mixed"
      c0 = @r[:c0]
      return [["BPF time per sample of another process", "#{DEPTH_HZ} Hz", "#{format('%.0f', c0[:ours_ns])} ns",
                        "Ruby mode; mixed mode runs the same instructions for them", "—", "no budget"], *mixed_rows, other_row]
    end

    rows = []
    irq = @r[:irq]
    irq && rows << ["Sampling interrupt (empty perf_event program)", "#{irq[:hz]} Hz on 1 CPU, #{irq[:pairs].size} off/on pairs",
             spread(irq[:pairs].map { |p| p[:irq_ns] / 1e3 }, "%.2f") + " µs per interrupt",
             "empty program itself: #{format('%.0f', irq[:prog_ns])} ns", "—", "no budget"]
    c0 = @r[:c0]
    rows << ["BPF time per sample of another process", "#{DEPTH_HZ} Hz", "#{format('%.0f', c0[:ours_ns])} ns",
             "floor #{format('%.0f', c0[:floor_ns])} ns", "—", "no budget"]
    DEPTHS.each { |d| rows << depth_row(d) }
    DEPTHS.each { |d| rows << daemon_sample_row(d) }
    return rows if ONLY_BPF

    rows << tctx_row if @r[:tctx]

    %w[methods blocks].each do |kind|
      s = @r[:slowdown][kind]
      slow_configs.each { |who, hz| rows << slow_row(kind, s, who, hz) }
      rows << ["Workload noise, #{kind}", "phases without sampling vs those around them (A/A)", pct_ci(s[:null]) +
               " (#{s[:null][:n]} phases)", format("the null: what the slowdown rows read with no effect; %.0f units " \
                                                 "per CPU-second", s[:units_per_s]), "—", "no budget"]
    end
    DAEMON_NPROCS.each { |n| rows << daemon_row(n) }
    rows << daemon_row(DAEMON_NPROCS.last, @r[:daemon_pids], pid_mode: true)
    lat = @r[:latency]
    boots = lat[:first].map { |f| f[:boot_ms] }
    firsts = lat[:first].map { |f| f[:first_sample_ms] }
    after_boot = lat[:first].filter_map { |f| f[:first_sample_ms] && f[:first_sample_ms] - f[:boot_ms] }
    # The measured column is the figure the budget is about (after the VM has a context); the
    # whole time from the exec is beside it, most of it Ruby's own boot.
    rows << ["Latency: a new Ruby's VM → its first sample", "#{LATENCY_HZ} Hz, whole host, #{firsts.size} Rubies",
             spread(after_boot, "%.0f") + " ms after its boot",
             "from the exec: #{spread(firsts.compact, '%.0f')} ms, of which Ruby's own boot (exec to its first line) " \
             "#{spread(boots, '%.0f')} ms; the service learns of the exec from the kernel at once, then looks again " \
             "while the VM boots", "≤ 100 ms after the VM has a context",
             firsts.include?(nil) ? "MISS: a Ruby was never sampled" : judge(after_boot, 100)]
    rows << ["Latency: SIGINT → the interval in progress on disk, service exited", "#{LATENCY_HZ} Hz, #{lat[:write_ms].size} runs",
             spread(lat[:write_ms], "%.0f") + " ms", "a sample waits for its interval to end, then this",
             "—", "no budget"]
    rows.concat(idle_rows)
    rows.concat(wall_rows)
    rows.concat(mixed_rows)
    rows << other_row
    rows.concat(many_rows)
    rows << harm_row
    rows
  end

  def table_of(rows)
    m = @r[:machine]
    head = "rubyprofd `make bench` on #{m[:summary]}. Load average #{m[:load_at_start]} at the start, " \
           "#{m[:load_at_end]} at the end; the hypervisor took #{format('%.1f', m[:steal_pct])} % of the CPU time " \
           "(steal). Bench runtime: #{format('%.0f', @r[:runtime_s])} s.\n\n" \
           "Figures: median [min … max] over the repetitions of this run. BPF time per sample = run_time_ns / " \
           "run_cnt (kernel.bpf_stats_enabled) over a phase, less the runs in other processes (their cost measured " \
           "alone). Slowdown: the profiler runs while its sampling is switched off and on every " \
           "#{TOGGLE_PHASE} s; each phase with sampling = 1 − its throughput / the mean of the phases without it " \
           "just before and after, given as mean ± 95 % interval; throughput is work per second of the workload " \
           "thread's CPU time. Derived = (BPF time per sample + interrupt cost) × samples per second of that CPU " \
           "time, all of the profiler's BPF time charged to the workload (an upper bound).\n\n"
    head + "#{VERDICT_RULE}\n\n| Measure | Setting | Result | Beside it | Budget | Verdict |\n|---|---|---|---|---|---|\n" +
      rows.map { |r| "| #{r.join(' | ')} |" }.join("\n") + "\n"
  end

  def depth_row(depth)
    d = @r[:depth][depth]
    ours = d[:ours].map { |o| o[:per_sample_ns] / 1e3 }
    floor = d[:floor].map { |f| f[:per_sample_ns] / 1e3 }
    fps = median(d[:ours].map { |x| x[:frames_per_stack] })
    beside = if floor.empty?
               "floor not measured (#{d[:floor_note]})"
             else
               "floor #{spread(floor, '%.2f')} µs; ×#{spread(d[:ratios], '%.2f')} the floor (per-phase ratios)"
             end
    judged = []
    judged << ["≤ #{BUDGET_BPF_100.to_i} µs", judge(ours, BUDGET_BPF_100)] if depth == 100
    judged << ["≤ #{BUDGET_BPF_4000.to_i} µs", judge(ours, BUDGET_BPF_4000)] if depth == 4000
    judged << ["≤ #{BUDGET_FLOOR_RATIO.to_i}× floor", judge(d[:ratios], BUDGET_FLOOR_RATIO)]
    ["BPF time per sample, #{depth} frames", format("%d Hz, 2 Rubies, %.0f frames walked", DEPTH_HZ, fps),
     "#{spread(ours, '%.2f')} µs", beside, judged.map(&:first).join(", "), combine(judged)]
  end

  # The daemon's CPU per sample beside the BPF time of the same phases: work moved out of BPF must
  # not simply reappear in userspace.
  def daemon_sample_row(depth)
    d = @r[:depth][depth]
    cpu = d[:ours].filter_map { |o| o[:daemon_ns] && o[:daemon_ns] / 1e3 }
    bpf = median(d[:ours].map { |o| o[:per_sample_ns] })
    ["Daemon CPU per sample, #{depth} frames",
     format("%d Hz, 2 Rubies, --oneshot, the phases of the row above", DEPTH_HZ),
     "#{spread(cpu, '%.2f')} µs", format("BPF time per sample %s; utime + stime of the daemon's threads over " \
                                        "the phase / samples taken, its wake-ups included", us(bpf)), "—", "no budget"]
  end

  def pct_ci(st)
    st ? format("%+.2f ± %.2f %%", st[:mean], st[:ci95]) : "n/a"
  end

  def slow_row(kind, s, who, hz)
    c = s[:configs]["#{who}@#{hz}"]
    name = { rubyprofd: "rubyprofd #{hz} Hz", bpftrace: "bpftrace profile:hz:#{hz} ustack (an interrupt-cost reference, not a Ruby profiler)",
             stackprof: "stackprof cpu mode, #{hz} Hz (in-process)" }.fetch(who)
    st = c[:stat]
    measured = st ? "#{pct_ci(st)} (#{st[:n]} phases)" : "n/a"
    irq = irq_ns - @r[:irq][:prog_ns]
    beside = case who
             when :rubyprofd
               format("derived ≤ %.3f %% = (≤ %s BPF + %s interrupt) × %.0f samples/s", c[:derived],
                      us(c[:per_sample_ns]), us(irq), c[:rate])
             when :bpftrace
               format("derived ≤ %.3f %% (all its BPF time, %.0f µs/s, + interrupts)", c[:derived],
                      c[:bpf_per_s_ns] / 1e3)
             else "in-process (SIGPROF handler): no BPF figure"
             end
    budget = who == :rubyprofd && hz == 99 ? "≤ #{BUDGET_SLOWDOWN_99} %" : "—"
    return ["Slowdown, #{kind} workload", name, measured, beside, budget, "no budget"] if budget == "—"

    # Judged on the measured slowdown, the workload's own loss: its 95 % interval against the
    # budget. The derived figure is beside it, an upper bound of the cost that noise cannot move,
    # never the verdict.
    v = st ? judge([st[:mean] - st[:ci95], st[:mean] + st[:ci95]], BUDGET_SLOWDOWN_99) : judge([], 0)
    if v == "not resolvable here" && st[:mean] < BUDGET_SLOWDOWN_99
      # Phases needed for the interval to clear the budget, were the mean and spread to stay.
      need = (st[:n] * (st[:ci95] / (BUDGET_SLOWDOWN_99 - st[:mean]))**2).ceil
      v += format(": the noise (± %.2f %%) is larger than the budget's distance; ≈ %d phases would resolve it", st[:ci95], need)
    elsif v == "not resolvable here"
      v += format(": the noise (± %.2f %%) is larger than the budget", st[:ci95])
    end
    ["Slowdown, #{kind} workload", name, measured, beside, budget, v]
  end

  # "50 profiled", or "53 profiled, 3 of them other Rubies of this host" (their samples are the
  # service's work too: a whole-host run on a shared machine measures more than the bench's own).
  def profiled_text(d)
    return "#{d[:profiled]} profiled" if d[:others].nil? || d[:others].zero?

    "#{d[:profiled]} profiled, #{d[:others]} of them other Rubies of this host"
  end

  def daemon_row(n, d = @r[:daemon][n], pid_mode: false)
    judged = n == DAEMON_NPROCS.last && !pid_mode
    budget = judged ? "≤ #{BUDGET_DAEMON_CPU} % of a core, ≤ #{BUDGET_DAEMON_RSS.to_i} MiB" : "—"
    verdict = "no budget"
    if judged
      # The peak RSS is one figure of the service's whole life: its own interval.
      verdict = combine([["CPU", judge(d[:cpu_pct], BUDGET_DAEMON_CPU)], ["RSS", judge([d[:maxrss_mib]], BUDGET_DAEMON_RSS)]])
      if verdict.start_with?("MISS") && median(d[:cpu_pct]) > BUDGET_DAEMON_CPU
        pids = median(@r[:daemon_pids][:cpu_pct])
        verdict += format("; of the CPU, taking in samples, symbolizing and writing profiles ≈ %.2f %% (the --pid run), " \
                          "life-cycle events and rescans of /proc ≈ %.2f %%", pids, median(d[:cpu_pct]) - pids)
      end
    end
    ["Service, #{n} busy Ruby process#{n == 1 ? '' : 'es'}",
     "#{DAEMON_HZ} Hz, 10 s intervals, #{pid_mode ? "--pid for each" : "whole host"} (#{profiled_text(d)}), " \
     "#{DAEMON_WINDOWS} windows of #{DAEMON_WINDOW} s",
     "#{spread(d[:cpu_pct], '%.3f')} % of a core; peak RSS #{format('%.1f', d[:maxrss_mib])} MiB",
     format("startup: %.0f ms CPU, sampling after %.1f s; RSS: heap %.1f, file-backed %.1f MiB",
            d[:startup_cpu_ms], d[:ready_s], d[:rss_anon_mib], d[:rss_file_mib]),
     budget, verdict]
  end

end

START = mono
Bench.new.run
