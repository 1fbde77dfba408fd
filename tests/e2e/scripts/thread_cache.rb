# SPDX-License-Identifier: GPL-2.0-only
# Starts and finishes a few threads (Ruby keeps some of their native threads around for reuse,
# with a stale execution context in their TLS), then spins in cached_work until killed.
# Usage: ruby thread_cache.rb OUT
require_relative "common"

OUT = ARGV.fetch(0)

def cached_work
  deadline = monotonic + 0.05
  x = 0
  x += 1 while monotonic < deadline
  x
end

4.times.map { Thread.new { cached_work } }.each(&:join)
# (a chroot without /proc cannot count them)
threads = (Dir.children("/proc/self/task").size rescue "?")
write_facts(OUT, { "threads" => threads })
loop { cached_work }
