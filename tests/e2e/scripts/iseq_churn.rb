# SPDX-License-Identifier: GPL-2.0-only
# Defines a method, runs it for a while, removes it, over and over, with GC: the freed iseqs'
# addresses come back for the next methods, so a profiler that caches names by iseq address would
# name a new method after an old one. Each method m_N spans lines 10*N+1 to 10*N+11 of "churn.rb"
# (5 to 11 lines: its shape varies) and spins on line 10*N+3; its wall-clock run goes to OUT.log
# ("start N NS" before, "end N NS" after) so that the test can tell which names may appear in
# which interval. Usage: ruby iseq_churn.rb OUT
OUT = ARGV.fetch(0)
LOG = File.open(OUT + ".log", "w")
LOG.sync = true

class Churn; end

def now_ns
  Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
end

i = 0
loop do
  # a different shape per method (0..6 extra statements) so that pcs differ too
  pad = "  nil\n" * (i % 7)
  Churn.class_eval(<<~RUBY, "churn.rb", 10 * i + 1)
    def m_#{i}(limit)
      t = Process.clock_gettime(Process::CLOCK_MONOTONIC) + limit
      x = 0; x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t
    #{pad}  x
    end
  RUBY
  LOG.puts("start #{i} #{now_ns}")
  Churn.new.public_send("m_#{i}", 0.08)
  LOG.puts("end #{i} #{now_ns}")
  Churn.send(:remove_method, "m_#{i}")
  GC.start if i % 10 == 9
  if i == 2
    File.write(OUT + ".tmp", Marshal.dump({ "pid" => Process.pid, "version" => RUBY_VERSION }))
    File.rename(OUT + ".tmp", OUT)
  end
  i += 1
end
