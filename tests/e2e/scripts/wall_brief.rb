# SPDX-License-Identifier: GPL-2.0-only
# Threads that stay parked for all of their short lives: one at a time, rp-brief sleeps BRIEF
# seconds at one line and ends, and the next one starts. A parked thread's reused visits are
# summed in BPF and sent later, so this is where they could go missing: every tick of its life
# must be in the profile all the same. With "exit" as the second argument the process instead
# ends after EXIT_AFTER seconds while rp-parked still sleeps (the visits of a process that ends).
# Each thread records its backtrace at the sleep. Usage: ruby wall_brief.rb OUT [exit]
require_relative "common"
OUT = ARGV.fetch(0)
MODE = ARGV.fetch(1, "threads")
BRIEF = 0.8
EXIT_AFTER = 3.5

FACTS = {}
LOCK = Mutex.new

def note(name, locs)
  LOCK.synchronize { FACTS[name] ||= { "frames" => location_facts(locs), "cfunc" => "sleep" } }
end

def park(name, seconds)
  note(name, caller_locations(0)); sleep seconds # PARK
end

if MODE == "exit"
  Thread.new { Thread.current.name = "rp-parked"; park("rp-parked", 3600) }
  sleep 0.1 until LOCK.synchronize { FACTS.key?("rp-parked") }
  write_facts(OUT, "threads" => LOCK.synchronize { FACTS.dup })
  # the profiler attaches meanwhile; every tick it takes while this process lives counts
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
