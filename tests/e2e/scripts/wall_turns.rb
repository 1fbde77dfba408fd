# SPDX-License-Identifier: GPL-2.0-only
# Two threads taking turns on the GVL: each sleeps 10 ms, then computes for 20 ms of wall time.
# A thread's sleep ends while the other computes, so about half of its time in Kernel#sleep is
# the wait for the GVL after the sleep (native_sleep takes it back with the thread still
# STOPPED). Each records its backtrace at the sleep. Usage: ruby wall_turns.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)

FACTS = {}
LOCK = Mutex.new
READY = Queue.new

def note(name, locs)
  LOCK.synchronize { FACTS[name] = { "frames" => location_facts(locs), "cfunc" => "sleep" } }
  READY << name
end

def take_turns(name)
  n = 0
  loop do
    (note(name, caller_locations(0)); n = 1) if n == 0; sleep 0.01 # TURN
    deadline = monotonic + 0.02
    nil while monotonic < deadline
  end
end

threads = %w[rp-turn-a rp-turn-b].map do |name|
  Thread.new { Thread.current.name = name; take_turns(name) }
end
2.times { READY.pop }
sleep 0.3
write_facts(OUT, "threads" => LOCK.synchronize { FACTS.dup })
threads.each(&:join)
