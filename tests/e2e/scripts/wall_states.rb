# SPDX-License-Identifier: GPL-2.0-only
# Threads that each do one thing for ever in a method of their own: a CPU loop, sleep, a blocking
# pipe read, Mutex#lock on a held mutex, Queue#pop on an empty queue. Each records, just before
# it blocks, its backtrace (caller_locations from the blocking line) and the C method that will
# be on top. Usage: ruby wall_states.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)

FACTS = {}
LOCK = Mutex.new
READY = Queue.new

def note(name, cfunc, locs)
  LOCK.synchronize { FACTS[name] = { "frames" => location_facts(locs), "cfunc" => cfunc } }
  READY << name
end

def wall_cpu
  x = 0; n = 0
  loop { (note("rp-cpu", nil, caller_locations(0)); n = 1) if n == 0; x += 1 } # CPU
end

def wall_sleep
  loop { note("rp-sleep", "sleep", caller_locations(0)); sleep } # SLEEP
end

def wall_pipe(r)
  loop { note("rp-pipe", "read", caller_locations(0)); r.read(1) } # PIPE
end

def wall_mutex(m)
  loop { note("rp-mutex", "lock", caller_locations(0)); m.lock } # MUTEX
end

def wall_queue(q)
  loop { note("rp-queue", "pop", caller_locations(0)); q.pop } # QUEUE
end

held = Mutex.new
held_by = Queue.new
holder = Thread.new { Thread.current.name = "rp-holder"; held.lock; held_by << 1; sleep }
held_by.pop
rd, _wr = IO.pipe
queue = Queue.new

threads = {
  "rp-cpu" => -> { wall_cpu },
  "rp-sleep" => -> { wall_sleep },
  "rp-pipe" => -> { wall_pipe(rd) },
  "rp-mutex" => -> { wall_mutex(held) },
  "rp-queue" => -> { wall_queue(queue) },
}.map do |name, body|
  Thread.new { Thread.current.name = name; body.call }
end
5.times { READY.pop }
sleep 0.3 # every thread reached its blocking call
write_facts(OUT, "threads" => LOCK.synchronize { FACTS.dup })
threads.each(&:join)
holder.join
