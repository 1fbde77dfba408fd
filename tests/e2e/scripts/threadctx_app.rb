# SPDX-License-Identifier: GPL-2.0-only
# An app that publishes OpenTelemetry thread context (OTEP 4947) through tests/e2e/cext/otelctx.c
# while it handles "requests": each request has its own trace_id, span_id and http.route, and
# runs in a method of its own (req_<trace_id>), so a profile's stack says which request a sample
# was taken in, and the test compares the sample's labels with that request's ids. Between
# requests the app works in between_requests, where no record is attached.
#
# Usage: ruby threadctx_app.rb OUT SO PUBLISH SERVICE KIND WORK
#   SO       the otelctx.so to load
#   PUBLISH  "yes": process context and records; "no": the extension loaded, nothing published;
#            "late": records from the start, the process context only 3 s after the go (an SDK
#            that starts after the profiler found the process)
#   SERVICE  service.name in the process context
#   KIND     threads: 3 threads, one request at a time each; fibers: 3 threads, each running 3
#            requests as plain fibers resumed in turn (Fiber#resume / Fiber.yield), the record
#            switched by the extension's RUBY_EVENT_FIBER_SWITCH hook as real writers do;
#            scheduler: 3 threads, each with a Fiber scheduler (Ruby 3.1+: Fiber.set_scheduler,
#            the minimal one below) running 3 requests as non-blocking fibers that switch in
#            `sleep` (wall) or a `sleep 0` between slices (cpu), as an async server's would
#   WORK     cpu: requests spin; wall: requests spin a little and sleep
# Facts: "requests" => [{trace, span, route, thread, cpu_s, wall_s}], "prev" => {trace =>
# [traces of the fibers that ran on its thread just before it]}, "key_map", "hooked".
require_relative "common"
require_relative "resource_pb"

OUT, SO, PUBLISH, SERVICE, KIND, WORK = ARGV
require SO

KEYS = %w[http.route http.method].freeze

def resource
  otel_resource({ "service.name" => SERVICE, "threadlocal.schema_version" => "tlsdesc_v1_dev" }, KEYS)
end

def now_cpu
  Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
end

def work(seconds)
  spin_for(seconds, Process::CLOCK_THREAD_CPUTIME_ID)
end

def between_requests
  work(0.01)
end

# One request's work, in slices (a fiber yields between them).
def request_slices(req)
  4.times do |i|
    timed(req) do
      work(WORK == "cpu" ? 0.02 : 0.003)
      sleep(0.01) if WORK == "wall"
    end
    yield i if block_given?
  end
end

LOCK = Mutex.new
REQUESTS = []
PREV = Hash.new { |h, k| h[k] = [] }
SEQ = [0]
RECS = []

def new_request(thread)
  n = LOCK.synchronize { SEQ[0] += 1 }
  trace = Random.bytes(16).unpack1("H*")
  span = Random.bytes(8).unpack1("H*")
  route = "/r#{n % 7}/#{thread}"
  meth = "req_#{trace}"
  Object.class_eval("def #{meth}(req, &b)\n request_slices(req, &b)\nend", __FILE__, __LINE__)
  req = { "trace" => trace, "span" => span, "route" => route, "thread" => thread, "meth" => meth,
          "cpu_s" => 0.0, "wall_s" => 0.0 }
  # kept for good: a record is never freed while a sample could still point at it
  LOCK.synchronize do
    REQUESTS << req
    RECS << OtelCtx.record(trace, span, 1, { 0 => route, 1 => "GET" }) if PUBLISH != "no"
    [req, PUBLISH != "no" ? RECS.last : nil]
  end
end

def timed(req)
  c0 = now_cpu
  w0 = monotonic
  yield
ensure
  req["cpu_s"] += now_cpu - c0
  req["wall_s"] += monotonic - w0
end

def thread_worker(name)
  loop do
    req, rec = new_request(name)
    OtelCtx.fiber_record = rec
    send(req["meth"], req)
    OtelCtx.fiber_record = nil
    between_requests
  end
end

def fiber_worker(name)
  last = [nil]
  loop do
    made = Array.new(3) { new_request(name) }
    reqs = made.map(&:first)
    fibers = made.map do |req, rec|
      Fiber.new do
        OtelCtx.fiber_record = rec
        send(req["meth"], req) { Fiber.yield }
        OtelCtx.fiber_record = nil
        :done
      end
    end
    live = fibers.zip(reqs)
    until live.empty?
      live.reject! do |f, req|
        LOCK.synchronize { PREV[req["trace"]] << last[0] if last[0] && last[0] != req["trace"] }
        r = f.resume
        last[0] = req["trace"]
        between_requests
        r == :done
      end
    end
  end
end

# A Fiber scheduler as small as the interface allows (the hooks Ruby calls for sleep and for
# blocking on a Mutex or Queue), the way an async server's event loop runs its fibers: each
# switch goes through here. CUR: the trace each fiber is in, for PREV.
class MiniScheduler
  CUR = {}

  def initialize
    @ready = []
    @timers = []
    @last = nil
  end

  def fiber(&blk)
    f = Fiber.new(blocking: false, &blk)
    resume(f)
    f
  end

  def kernel_sleep(duration = nil)
    @timers << [monotonic + (duration || 0), Fiber.current]
    Fiber.yield
  end

  def block(_blocker, timeout = nil)
    @timers << [monotonic + timeout, Fiber.current] if timeout
    Fiber.yield
  end

  def unblock(_blocker, fiber)
    @ready << fiber
  end

  def io_wait(_io, _events, timeout)
    kernel_sleep(timeout || 0.001)
  end

  def close
    run
  end

  def resume(f)
    now = CUR[f]
    LOCK.synchronize { PREV[now] << @last if now && @last && @last != now }
    f.resume
    @last = now
    # (sleeping requests leave the thread to this loop: with wall work, the loop's own work
    # every fifth switch only, or it would take most of the thread's time)
    @switches = (@switches || 0) + 1
    between_requests if WORK == "cpu" || (@switches % 5).zero?
  end

  def run
    until @ready.empty? && @timers.empty?
      t = monotonic
      due, @timers = @timers.partition { |at, _| at <= t }
      fibers = @ready + due.sort_by(&:first).map(&:last)
      @ready = []
      sleep(0.001) if fibers.empty?
      fibers.each { |f| resume(f) if f.alive? }
    end
  end
end

def scheduler_worker(name)
  Fiber.set_scheduler(MiniScheduler.new)
  3.times do
    Fiber.schedule do
      loop do
        req, rec = new_request(name)
        MiniScheduler::CUR[Fiber.current] = req["trace"]
        OtelCtx.fiber_record = rec
        send(req["meth"], req) { sleep 0 if WORK == "cpu" }
        OtelCtx.fiber_record = nil
        MiniScheduler::CUR[Fiber.current] = nil
        sleep 0
      end
    end
  end
end

hooked = false
if PUBLISH != "no"
  OtelCtx.publish_process(resource) if PUBLISH == "yes"
  hooked = OtelCtx.hook_fiber_switch
  raise "no RUBY_EVENT_FIBER_SWITCH on this Ruby" if KIND != "threads" && !hooked
end

threads = Array.new(3) do |i|
  Thread.new do
    Thread.current.name = "ctx-#{i}"
    case KIND
    when "fibers" then fiber_worker("ctx-#{i}")
    when "scheduler" then scheduler_worker("ctx-#{i}")
    else thread_worker("ctx-#{i}")
    end
  end
end
write_facts(OUT, { "key_map" => KEYS, "hooked" => hooked, "tls_model" => OtelCtx.tls_model })
wait_for_go(OUT)
if PUBLISH == "late"
  sleep 3
  OtelCtx.publish_process(resource)
end
# the facts of what ran by the go, then again at the end (the test reads the last)
# (final: written after the test's stop, with every request the profile can have seen)
loop do
  sleep 0.5
  stop = File.exist?(OUT + ".stop")
  snap = LOCK.synchronize { [REQUESTS.map(&:dup), PREV.map { |k, v| [k, v.uniq] }.to_h] }
  write_facts(OUT + ".requests", { "requests" => snap[0], "prev" => snap[1], "final" => stop })
  break if stop
end
threads.each(&:kill)
