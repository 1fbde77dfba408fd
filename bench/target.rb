# SPDX-License-Identifier: GPL-2.0-only
# The Ruby processes that `make bench` profiles (bench/run.rb starts them):
#
#   target.rb workload methods|blocks [quiet]
#       CPU-bound work in small units. Every ~20 ms prints "MONOTONIC_NS THREAD_CPU_NS UNITS" (units
#       done so far), so the driver can compute the throughput of any time window, per second of
#       CPU time of this thread (interrupts that hit it are charged to it; other tasks are not). SIGUSR1 starts stackprof
#       (cpu mode, 99 Hz) in this process, SIGUSR2 stops it; each switch is made at the next report
#       and prints "STACKPROF on|off MONOTONIC_NS".
#       methods: Ruby method calls (recursion, attribute readers, small methods);
#       blocks:  blocks and C functions (Array#map/sort_by/select, Hash, String, Integer#times).
#       threads N (after the kind): N - 1 more threads parked in Queue#pop, each PARK_DEPTH frames
#       deep (an idle thread pool, for --clock wall), started before "READY".
#   target.rb deep N
#       Recurses until the thread has N control frames (as rubyprofd counts them: caller_locations
#       + 1), prints "READY", then spins there.
#   target.rb zlib N
#       As deep N, then compresses with Zlib::Deflate.deflate there, over and over: most samples
#       in libz, the native frames of a C extension above N Ruby frames.
#   target.rb deep-ctx N SO
#       As deep N, in an app that publishes an OpenTelemetry thread context (docs/trace-context.md)
#       with the tests' writer SO (tests/e2e/cext/otelctx.c): the process context with its key
#       map, and the spinning thread's record (trace, span and an http.route): every sample reads it.
#   target.rb stamp T0_NS PREFIX SECONDS
#       T0_NS is CLOCK_MONOTONIC just before this process was exec'd. Spends each millisecond
#       since T0 in its own method PREFIX_<ms>ms, so the first such method in a profile tells
#       when the first sample was taken. Prints "BOOT <ns from T0 to the first line>".
$stdout.sync = true

def now_ns
  Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
end

module Methods
  class Node
    attr_reader :value, :left, :right

    def initialize(value, left, right)
      @value = value
      @left = left
      @right = right
    end

    def sum
      total = value
      total += left.sum if left
      total += right.sum if right
      total
    end
  end

  def self.tree(depth, value = 1)
    return nil if depth.zero?

    Node.new(value, tree(depth - 1, value * 2), tree(depth - 1, value * 2 + 1))
  end

  def self.fib(n)
    n < 2 ? n : fib(n - 1) + fib(n - 2)
  end

  TREE = tree(8)

  def self.unit
    fib(15) + TREE.sum
  end
end

module Blocks
  ITEMS = Array.new(400) { |i| { id: i, price: (i * 7919) % 1000, name: "item-#{i}" } }

  def self.unit
    cheap = ITEMS.sort_by { |item| item[:price] }.first(20).map { |item| item[:name] }
    by_bucket = ITEMS.group_by { |item| item[:price] / 100 }
    total = by_bucket.sum { |_, items| items.sum { |item| item[:price] } }
    text = 50.times.map { |i| "row #{i}" }.join(",")
    cheap.size + total + text.count("1")
  end
end

# How deep a parked pool thread waits (a server's worker: its loop, the app's frames, the wait).
PARK_DEPTH = 30
PARKED = Queue.new

def park(depth)
  depth.positive? ? park(depth - 1) : PARKED.pop
end

def workload(kind, quiet, threads = 1)
  mod = { "methods" => Methods, "blocks" => Blocks }.fetch(kind)
  (threads - 1).times { Thread.new { park(PARK_DEPTH) } }
  sleep 0.1 until Thread.list.count { |t| t.status == "sleep" } >= threads - 1
  want = state = :off
  trap("USR1") { want = :on }
  trap("USR2") { want = :off }
  units = 0
  last = now_ns
  puts "READY"
  loop do
    mod.unit
    units += 1
    t = now_ns
    next if t - last < 20_000_000

    last = t
    puts "#{t} #{Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID, :nanosecond)} #{units}" unless quiet
    next if want == state

    # Switched between two report lines, so that the driver's phases hold whole intervals. The
    # results are never collected: only the sampling is measured, and stop/start keeps adding up.
    require "stackprof"
    if want == :on
      StackProf.start(mode: :cpu, interval: 1_000_000 / 99, raw: false)
    else
      StackProf.stop
    end
    state = want
    puts "STACKPROF #{state} #{now_ns}"
  end
end

def down(n)
  if n.positive?
    down(n - 1)
  else
    puts "READY"
    i = 0
    i += 1 while true
  end
end

def down_zlib(n)
  if n.positive?
    down_zlib(n - 1)
  else
    require "zlib"
    r = Random.new(42)
    data = Array.new(20_000) { r.rand(1 << 16).to_s(36) }.join(" ")
    puts "READY"
    Zlib::Deflate.deflate(data, Zlib::BEST_COMPRESSION) while true
  end
end

def stamp(t0, prefix, seconds)
  puts "BOOT #{now_ns - t0}"
  stop = t0 + (seconds * 1e9).to_i
  while (t = now_ns) < stop
    ms = (t - t0) / 1_000_000
    name = "#{prefix}_#{ms}ms"
    unless Object.method_defined?(name)
      Object.class_eval <<~RUBY, __FILE__, __LINE__ + 1
        def #{name}
          stop = #{t0 + (ms + 1) * 1_000_000}
          nil while now_ns < stop
        end
      RUBY
    end
    send(name)
  end
end

case ARGV[0]
when "workload"
  workload(ARGV.fetch(1), ARGV.include?("quiet"),
           ARGV.include?("threads") ? Integer(ARGV.fetch(ARGV.index("threads") + 1)) : 1)
when "deep" then down(Integer(ARGV.fetch(1)) - 2)
when "deep-ctx"
  require ARGV.fetch(2)
  require_relative "../tests/e2e/scripts/resource_pb"
  OtelCtx.publish_process(otel_resource({ "service.name" => "bench-ctx", "threadlocal.schema_version" => "tlsdesc_v1_dev" },
                                        %w[http.route http.method]))
  REC = OtelCtx.record("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 1, { 0 => "/orders/:id", 1 => "GET" })
  OtelCtx.attach(REC)
  down(Integer(ARGV.fetch(1)) - 2)
when "zlib" then down_zlib(Integer(ARGV.fetch(1)) - 2)
when "stamp" then stamp(Integer(ARGV.fetch(1)), ARGV.fetch(2), Float(ARGV.fetch(3)))
else abort "usage: target.rb workload methods|blocks [quiet] [threads N] | deep N | deep-ctx N SO | zlib N | stamp T0_NS PREFIX SECONDS"
end
