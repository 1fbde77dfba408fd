# SPDX-License-Identifier: GPL-2.0-only
# A short-lived Ruby whose hot method is named after its own pid, so that a profile shows which
# process each stack came from. With FORKS > 0 it is a master that forks that many such children
# (without exec), one after another. Usage: ruby churn.rb SECONDS [FORKS]
def monotonic
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def churn(seconds)
  # a method per process: churn_<pid>
  name = "churn_#{Process.pid}"
  Object.class_eval("def #{name}(d); x = 0; x += 1 while monotonic < d; x; end", __FILE__, __LINE__)
  send(name, monotonic + seconds)
end

seconds = Float(ARGV.fetch(0))
forks = Integer(ARGV.fetch(1, "0"))
if forks.zero?
  churn(seconds)
else
  forks.times do
    pid = fork { churn(seconds); exit!(0) }
    Process.wait(pid)
  end
end
