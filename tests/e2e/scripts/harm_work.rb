# SPDX-License-Identifier: GPL-2.0-only
# A CPU-heavy workload with a deterministic result, for "never harm the target" (issue 10, item 5):
# each round runs THREADS threads (strings, big integers, sorting, hashes: allocation enough for
# the GC to run often), forks a child that computes its own part and sends it through a pipe, and
# runs GC.start (and GC.compact where the Ruby has it); its checksum is a CRC-32 of every part in
# a fixed order. Round i computes the same as any round j with i % 4 == j % 4, whatever the
# scheduling, so that a profiled run can be checked against an unprofiled one.
#
#   ruby harm_work.rb expect N         prints the checksums of rounds 0..N-1, one a line
#   ruby harm_work.rb run OUT STOP [MAX_ROUNDS]
#                                      writes its facts to OUT, then runs rounds until the file
#                                      STOP exists (or MAX_ROUNDS, then waits for STOP), printing
#                                      "round I CHECKSUM SECONDS" per round (SECONDS: its wall
#                                      time) and "rounds N" at the end; exits 1 if a child failed
require "zlib"
require_relative "common"

THREADS = 4
SIZE = Integer(ENV.fetch("HARM_SIZE", "2500"))

def part(seed, t)
  acc = +""
  big = 1
  words = []
  SIZE.times do |k|
    s = "#{seed}-#{t}-#{k}-" * ((k % 7) + 1)
    words << s.reverse
    big = (big * (k + 3) + seed) % (2**521 - 1)
    acc << s[0, 8] if k % 50 == 0
  end
  h = words.each_with_index.to_h { |w, k| [w, k * t] }
  [Zlib.crc32(words.sort.join(",")), big.to_s(36), h.size, Zlib.crc32(acc)].join(":")
end

def forked_part(seed)
  r, w = IO.pipe
  pid = fork do
    r.close
    w.write(part(seed, 99))
    w.close
    exit!(0)
  end
  w.close
  out = r.read
  r.close
  _, st = Process.wait2(pid)
  raise "forked child #{pid}: #{st.inspect}" unless st.success?

  out
end

def round(i)
  seed = i % 4
  parts = Array.new(THREADS) { |t| Thread.new { part(seed, t) } }.map(&:value)
  parts << forked_part(seed)
  GC.start
  GC.compact if GC.respond_to?(:compact)
  Zlib.crc32(parts.join("|")).to_s(16)
end

case ARGV[0]
when "expect"
  Integer(ARGV.fetch(1)).times { |i| puts round(i) }
when "run"
  out, stop = ARGV.fetch(1), ARGV.fetch(2)
  max = Integer(ARGV.fetch(3, "1000000"))
  $stdout.sync = true
  write_facts(out, {})
  i = 0
  until File.exist?(stop)
    if i < max
      t0 = monotonic
      sum = round(i)
      puts "round #{i} #{sum} #{format("%.3f", monotonic - t0)}"
      i += 1
    else
      sleep 0.05
    end
  end
  puts "rounds #{i}"
else
  abort "usage: harm_work.rb expect N | run OUT STOP [MAX_ROUNDS]"
end
