# SPDX-License-Identifier: GPL-2.0-only
# A thread that names itself a while after its start, as apps do in the thread's block
# (Thread.new { setup; Thread.current.name = "worker"; work }): once the profiler samples (the
# test's go), it spins UNNAMED seconds in spin_unnamed, names itself NAME, then spins in
# spin_named for good. Usage: ruby late_name.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)
UNNAMED = 0.5
NAME = "rp-late"

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def spin_unnamed(seconds)
  x = 0
  t_end = now + seconds
  x += 1 while now < t_end
  x
end

def spin_named
  x = 0
  loop { x += 1 }
end

write_facts(OUT, "name" => NAME, "unnamed" => UNNAMED)
wait_for_go(OUT)
Thread.new do
  spin_unnamed(UNNAMED)
  Thread.current.name = NAME
  spin_named
end.join
