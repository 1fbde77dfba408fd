# SPDX-License-Identifier: GPL-2.0-only
# A target for the fault matrix that must come out unharmed: WORKERS threads each mix ITERS numbers
# at the bottom of a DEPTH-deep recursion, again and again until OUT.stop exists (every round must
# give the same number), SLEEPERS more threads wait meanwhile; then the program prints "checksum X"
# (what fault_expected computes without any profiler), and exits 0 (1 if a round differed).
# Usage: ruby fault_work.rb OUT ITERS [WORKERS [DEPTH [SLEEPERS [MAPS]]]]
# MAPS: that many small files (in OUT.maps/) mapped with mmap before the work starts.
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

# Maps n files of one page each, kept mapped; [files, mappings seen in /proc/self/maps].
def fault_map_files(dir, n)
  require "fiddle"
  Dir.mkdir(dir)
  mmap = Fiddle::Function.new(Fiddle.dlopen(nil)["mmap"],
                              [Fiddle::TYPE_VOIDP, Fiddle::TYPE_SIZE_T, Fiddle::TYPE_INT, Fiddle::TYPE_INT,
                               Fiddle::TYPE_INT, Fiddle::TYPE_LONG], Fiddle::TYPE_VOIDP)
  files = Array.new(n) do |i|
    f = File.open(File.join(dir, format("data-%04d.bin", i)), "w+")
    f.write(i.to_s.ljust(4096, "x"))
    f.flush
    addr = mmap.call(nil, 4096, 1, 1, f.fileno, 0) # PROT_READ, MAP_SHARED
    abort("mmap #{f.path} failed") if addr.to_i == -1 || addr.to_i.zero?
    f
  end
  [files, File.read("/proc/self/maps").lines.count { |l| l.include?(dir) }]
end

# What the program prints when nothing disturbed it.
def fault_expected(iters, workers)
  (1..workers).map { |w| fault_mix(w, iters) }.reduce(:^)
end

if $0 == __FILE__
  out = ARGV.fetch(0)
  iters = Integer(ARGV.fetch(1))
  workers = Integer(ARGV.fetch(2, "1"))
  depth = Integer(ARGV.fetch(3, "10"))
  sleepers = Integer(ARGV.fetch(4, "0"))
  mapped, nmaps = fault_map_files("#{out}.maps", Integer(ARGV.fetch(5))) if ARGV[5]
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
  write_facts(out, "threads" => Thread.list.size, "maps" => nmaps)
  sum = busy.map(&:value).reduce(:^)
  sleepers.times { done << true }
  idle.each(&:join)
  mapped&.each(&:close)
  puts format("checksum %x", sum)
end
