# SPDX-License-Identifier: GPL-2.0-only
# Spins in a named method for SECONDS of its own CPU time (however long that takes on a busy
# machine), then exits by itself. Usage: ruby short_lived.rb SECONDS
def cpu
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

def short_lived_work(until_cpu)
  x = 0
  x += 1 while cpu < until_cpu
  x
end
short_lived_work(cpu + Float(ARGV.fetch(0)))
