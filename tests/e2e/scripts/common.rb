# SPDX-License-Identifier: GPL-2.0-only
# Shared by the test scripts: how a script reports what Ruby says about itself.

def location_facts(locs)
  locs.map { |l| { "label" => l.label, "path" => l.path, "lineno" => l.lineno } }
end

# Writes facts (Marshal) atomically to path.
def write_facts(path, facts)
  # ready_ns: the wall clock when the script is past its boot (profiles are stamped in it)
  File.write(path + ".tmp", Marshal.dump({ "pid" => Process.pid, "version" => RUBY_VERSION,
                                           "ready_ns" => Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond) }.merge(facts)))
  File.rename(path + ".tmp", path)
end

# write_facts the first time only: for a script's endless loop, which reports once it runs.
def write_facts_once(path, facts)
  return if $facts_written
  write_facts(path, facts)
  $facts_written = true
end

# count words of 3 to 12 letters joined by spaces, drawn from 512 by a seeded generator (the
# same text every run): work for a compressor or a parser that is not a run of one byte.
def random_words(r)
  Array.new(512) { Array.new(r.rand(3..12)) { (97 + r.rand(26)).chr }.join }
end

def random_text(count)
  r = Random.new(42)
  words = random_words(r)
  Array.new(count) { words[r.rand(words.size)] }.join(" ")
end

def monotonic
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

# Keeps the CPU busy for seconds by clock (monotonic: wall time; a CPU-time clock: that much CPU).
def spin_for(seconds, clock = Process::CLOCK_MONOTONIC)
  deadline = Process.clock_gettime(clock) + seconds
  x = 0
  x += 1 while Process.clock_gettime(clock) < deadline
  x
end

# This process's CPU seconds: its progress, which a busy machine slows down but never skips.
def cpu_time
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

# Waits until the test says go (it makes OUT.go once the profiler samples): what a script does
# at a given moment of the profile happens in the profile, however late the profiler started.
def wait_for_go(out)
  sleep 0.01 until File.exist?(out + ".go")
end
