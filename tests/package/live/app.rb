# SPDX-License-Identifier: GPL-2.0-only
# An app of the booted root (tests/package/test-live.sh), run by its own unit: CPU in a method
# named after it, a fifth of the time (the machine is shared), until stopped.
#   ruby app.rb NAME
name = ARGV.fetch(0)

def spin(seconds)
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  x
end

# The method the profile must show: Object#<name>_work (a def, so that it is its label).
eval("def #{name}_work = spin(0.02)", binding, __FILE__, __LINE__)
loop do
  send(:"#{name}_work")
  sleep 0.08
end
