# SPDX-License-Identifier: GPL-2.0-only
# Threads that stay parked for all of their short lives: one at a time, rp-brief sleeps BRIEF
# seconds at one line and ends, and the next one starts. A parked thread's reused visits are
# summed in BPF and sent later, so this is where they could go missing: every tick of its life
# must be in the profile all the same. With "exit" as the second argument the process instead
# ends after EXIT_AFTER seconds while rp-parked still sleeps (the visits of a process that ends).
# With "list", parked threads see the thread list change around them (one in the middle ends,
# one is added). Each thread records its backtrace at the sleep. In both, the times count from
# the test's go (wait_for_go), once the profiler samples. Usage: ruby wall_brief.rb OUT [exit|list]
require_relative "common"
OUT = ARGV.fetch(0)
MODE = ARGV.fetch(1, "threads")
BRIEF = 0.8
EXIT_AFTER = 5.0
LIST_B_END = 4.5
LIST_D_START = 5.0

FACTS = {}
LOCK = Mutex.new

def note(name, locs)
  LOCK.synchronize { FACTS[name] ||= { "frames" => location_facts(locs), "cfunc" => "sleep" } }
end

def park(name, seconds)
  note(name, caller_locations(0)); sleep seconds # PARK
end

if MODE == "list"
  # The thread list changes under parked threads: rp-b, between rp-a and rp-c, ends LIST_B_END s
  # after the go (woken from its sleep; only the list's count tells), rp-d is added LIST_D_START
  # s after it; the wall-clock times of both go to OUT.times, for the test to place them in the
  # profile.
  mk = ->(name, secs) { Thread.new { Thread.current.name = name; park(name, secs) } }
  times = OUT + ".times"
  a = mk.("rp-a", 3600)
  b = mk.("rp-b", 3600)
  c = mk.("rp-c", 3600)
  sleep 0.05 until LOCK.synchronize { FACTS.size == 3 }
  write_facts(OUT, "threads" => LOCK.synchronize { FACTS.dup }, "times" => times)
  wait_for_go(OUT)
  sleep LIST_B_END
  sleep 0.01 until b.status == "sleep"
  b.wakeup
  b.join
  File.write(times, "b_end #{Time.now.to_f}\n")
  sleep LIST_D_START - LIST_B_END
  mk.("rp-d", 3600)
  File.write(times, "d_start #{Time.now.to_f}\n", mode: "a")
  [a, c].each(&:join)
end

if MODE == "exit"
  Thread.new { Thread.current.name = "rp-parked"; park("rp-parked", 3600) }
  sleep 0.1 until LOCK.synchronize { FACTS.key?("rp-parked") }
  write_facts(OUT, "threads" => LOCK.synchronize { FACTS.dup })
  # every tick the profiler takes while this process lives counts
  wait_for_go(OUT)
  sleep EXIT_AFTER
  exit!(0)
end

first = true
loop do
  Thread.new { Thread.current.name = "rp-brief"; park("rp-brief", BRIEF) }.join
  next unless first

  first = false
  write_facts(OUT, "threads" => LOCK.synchronize { FACTS.dup })
end
