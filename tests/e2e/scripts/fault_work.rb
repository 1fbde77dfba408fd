# SPDX-License-Identifier: GPL-2.0-only
# A target for the fault matrix that must come out unharmed: WORKERS threads each mix ITERS numbers
# at the bottom of a DEPTH-deep recursion, again and again until OUT.stop exists (every round must
# give the same number), SLEEPERS more threads wait meanwhile; then the program prints "checksum X"
# (what fault_expected computes without any profiler), and exits 0 (1 if a round differed).
# Usage: ruby fault_work.rb OUT ITERS [WORKERS [DEPTH [SLEEPERS]]]
require_relative "common"

FAULT_MASK = (1 << 64) - 1

def fault_mix(seed, iters)
  x = seed
  iters.times { |i| x = ((x * 6364136223846793005 + i) & FAULT_MASK) ^ (x >> 29) }
  x
end

def fault_down(n, seed, iters)
  return fault_mix(seed, iters) if n <= 1

  fault_down(n - 1, seed, iters)
end

# What the program prints when nothing disturbed it.
def fault_expected(iters, workers) = (1..workers).map { |w| fault_mix(w, iters) }.reduce(:^)

if $0 == __FILE__
  out = ARGV.fetch(0)
  iters = Integer(ARGV.fetch(1))
  workers = Integer(ARGV.fetch(2, "1"))
  depth = Integer(ARGV.fetch(3, "10"))
  sleepers = Integer(ARGV.fetch(4, "0"))
  stop = "#{out}.stop"
  done = Queue.new
  idle = Array.new(sleepers) { Thread.new { done.pop } }
  busy = (1..workers).map do |w|
    Thread.new do
      first = nil
      rounds = 0
      loop do
        v = fault_down(depth, w, iters)
        first ||= v
        abort("worker #{w}: round #{rounds} gave #{v}, not #{first}") if v != first
        rounds += 1
        break if File.exist?(stop)
      end
      first
    end
  end
  write_facts(out, "threads" => Thread.list.size)
  sum = busy.map(&:value).reduce(:^)
  sleepers.times { done << true }
  idle.each(&:join)
  puts format("checksum %x", sum)
end
