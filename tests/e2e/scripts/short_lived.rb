# SPDX-License-Identifier: GPL-2.0-only
# Spins in a named method for SECONDS, then exits by itself. Usage: ruby short_lived.rb SECONDS
def short_lived_work(deadline)
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  x
end
short_lived_work(Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV.fetch(0)))
