# SPDX-License-Identifier: GPL-2.0-only
# A short-lived Ruby whose hot method is named after its own pid, so that a profile shows which
# process each stack came from. With FORKS > 0 it is a master that forks that many such children
# (without exec), one after another. Each spins for SECONDS of its own CPU time (not wall time:
# on a busy machine a process that spins for a wall-clock time gets any share of a CPU, and the
# test's expected samples come from the CPU time). With LOG, each process that spun appends
# "PID CPU_SECONDS" (its CPU time in the hot method, by its own clock) to it.
# Usage: ruby churn.rb SECONDS [FORKS [LOG]]
def cpu
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

def churn(seconds, log)
  # a method per process: churn_<pid>
  name = "churn_#{Process.pid}"
  Object.class_eval("def #{name}(d); x = 0; x += 1 while cpu < d; x; end", __FILE__, __LINE__)
  c0 = cpu
  send(name, c0 + seconds)
  # one short write with O_APPEND: the lines of processes that end together do not mix
  File.open(log, "a") { |f| f.syswrite(format("%d %.4f\n", Process.pid, cpu - c0)) } if log
end

seconds = Float(ARGV.fetch(0))
forks = Integer(ARGV.fetch(1, "0"))
log = ARGV[2]
if forks.zero?
  churn(seconds, log)
else
  forks.times do
    pid = fork { churn(seconds, log); exit!(0) }
    Process.wait(pid)
  end
end
