# SPDX-License-Identifier: GPL-2.0-only
# A Puma server (Debian's puma package, used as a library: no rack gem needed) with 4 request
# threads, single mode, on a UNIX socket. Its handler sleeps 50 ms (App#nap), asks a slow backend
# that answers after 30 ms (App#query_backend; puma_backend.rb, another process) and computes for
# 20 ms of wall time (App#compute). puma_load.rb, a third process, keeps the threads busy.
# Each phase records its backtrace (caller_locations from the line that waits or computes), one
# per distinct stack seen; the facts are written once every request thread ran every phase a few
# times. Usage: ruby puma_app.rb OUT
require "socket"
require "puma"
require "puma/configuration"
require "puma/server"
require_relative "common"
OUT = ARGV.fetch(0)
DIR = File.dirname(OUT)
THREADS = 4
NAP = 0.05
BACKEND = File.join(DIR, "puma-backend-#{Process.pid}.sock")
LISTEN = File.join(DIR, "puma-#{Process.pid}.sock")

TIMES = File.join(DIR, "puma-times-#{Process.pid}")

# phase => { stack signature => facts }; the thread names that ran each phase, and how often;
# the wall time spent in each phase and in the whole handler, in seconds, all threads together,
# and the number of naps (each one asks for NAP seconds of sleep)
STACKS = Hash.new { |h, k| h[k] = {} }
RUNS = Hash.new(0)
SPENT = Hash.new(0.0)
LOCK = Mutex.new

def spent(phase, since)
  dt = monotonic - since
  LOCK.synchronize { SPENT[phase] += dt }
end

def note(phase, cfunc, locs)
  sig = locs.map { |l| [l.label, l.path, l.lineno] }
  LOCK.synchronize do
    STACKS[phase][sig] ||= { "frames" => location_facts(locs), "cfunc" => cfunc }
    RUNS[[phase, Thread.current.name]] += 1
  end
end

class App
  def call(env)
    handle(env)
    [200, { "Content-Type" => "text/plain" }, ["ok\n"]]
  end

  def handle(_env)
    t0 = monotonic
    nap
    query_backend
    compute
    spent("handle", t0)
  end

  def nap
    t0 = monotonic
    note("nap", "sleep", caller_locations(0)); sleep NAP # NAP
    spent("nap", t0)
    LOCK.synchronize { SPENT["naps"] += 1 }
  end

  def query_backend
    t0 = monotonic
    sock = (Thread.current[:rp_backend] ||= UNIXSocket.new(BACKEND))
    sock.write("q\n")
    note("query", "read", caller_locations(0)); sock.read(3) # QUERY
    spent("query", t0)
  end

  # 20 ms of wall time on the CPU: the inner loop is where the time goes, on the same line
  def compute
    t0 = monotonic
    deadline = t0 + 0.02
    note("compute", nil, caller_locations(0)); (i = 0; i += 1 while i < 20_000) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline # COMPUTE
    spent("compute", t0)
  end
end

backend = Process.spawn(RbConfig.ruby, File.join(__dir__, "puma_backend.rb"), BACKEND)
children = [backend]
at_exit { children.each { |pid| Process.kill("KILL", pid) rescue nil } }
sleep 0.05 until File.socket?(BACKEND)

# Puma 4/5 take an Events (its log sink) and thread counts as options or setters; Puma 6
# takes a LogWriter option and fills its options from Configuration's defaults.
def puma6?
  require "puma/log_writer"
  true
rescue LoadError
  false
end

options = { min_threads: THREADS, max_threads: THREADS }
if puma6?
  options[:log_writer] = Puma::LogWriter.strings
  server = Puma::Server.new(App.new, nil, options)
else
  server = Puma::Server.new(App.new, Puma::Events.strings, options)
  server.min_threads = THREADS if server.respond_to?(:min_threads=)
  server.max_threads = THREADS if server.respond_to?(:max_threads=)
end
server.add_unix_listener(LISTEN)
server_thread = server.run
load = Process.spawn(RbConfig.ruby, File.join(__dir__, "puma_load.rb"), LISTEN, (THREADS + 2).to_s)
children << load

# The time spent so far, one line every 100 ms: "EPOCH_SECONDS nap query compute handle naps".
# The test takes the lines at the profile's start and end and compares the shares of the
# difference with the profile's.
Thread.new do
  Thread.current.name = "rp-times"
  File.open(TIMES, "w") do |f|
    f.sync = true
    loop do
      spent = LOCK.synchronize { SPENT.dup }
      f.puts(([Time.now.to_f] + %w[nap query compute handle naps].map { |k| spent[k] }).join(" "))
      sleep 0.1
    end
  end
end

# every request thread ran every phase 3 times: the stacks they take are all seen
loop do
  done = LOCK.synchronize do
    names = RUNS.keys.map(&:last).uniq
    names.size >= THREADS && names.all? { |n| %w[nap query compute].all? { |p| RUNS[[p, n]] >= 3 } }
  end
  break if done
  sleep 0.05
end
facts = LOCK.synchronize do
  { "stacks" => STACKS.transform_values(&:values), "puma" => Puma::Const::PUMA_VERSION,
    "request_threads" => RUNS.keys.map(&:last).uniq.sort, "backend_pid" => backend, "load_pid" => load,
    "times" => TIMES, "nap" => NAP }
end
write_facts(OUT, facts)
server_thread.join
