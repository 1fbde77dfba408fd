# SPDX-License-Identifier: GPL-2.0-only
# Threads that switch between two blocking places every PHASE seconds, so that a wall sample
# showing a stale stack (the other place's) is seen: rp-ab sleeps in alt_a, then in alt_b (the
# same depth, the same state: only the stack tells them apart); rp-si sleeps in alt_a, then waits
# in IO.select in alt_select (another state). Each records its backtrace at each blocking line the
# first time round. Usage: ruby wall_alternate.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)
PHASE = 0.3

FACTS = {}
LOCK = Mutex.new
READY = Queue.new

def note(key, cfunc, locs)
  LOCK.synchronize do
    next if FACTS.key?(key)

    FACTS[key] = { "frames" => location_facts(locs), "cfunc" => cfunc }
    READY << key
  end
end

def alt_a(who)
  note("#{who} a", "sleep", caller_locations(0)); sleep PHASE # A
end

def alt_b(who)
  note("#{who} b", "sleep", caller_locations(0)); sleep PHASE # B
end

def alt_select(who, r)
  note("#{who} select", "select", caller_locations(0)); IO.select([r], nil, nil, PHASE) # SELECT
end

rd, _wr = IO.pipe
threads = [
  Thread.new { Thread.current.name = "rp-ab"; loop { alt_a("rp-ab"); alt_b("rp-ab") } },
  Thread.new { Thread.current.name = "rp-si"; loop { alt_a("rp-si"); alt_select("rp-si", rd) } },
]
4.times { READY.pop }
write_facts(OUT, "places" => LOCK.synchronize { FACTS.dup })
threads.each(&:join)
