# SPDX-License-Identifier: GPL-2.0-only
# A master that forks workers without exec, as Puma, Unicorn and Sidekiq swarm do. Each child
# spins in child_work for SECONDS and reports its pid, CPU time and wall time (from its fork to
# its end, by its own clocks); the master spins in master_work meanwhile. It forks once the test
# says go (once the profiler profiles the master): the children's [CPU, wall] seconds go to
# OUT.children. Usage: ruby forker.rb OUT CHILDREN SECONDS
require_relative "common"

OUT = ARGV.fetch(0)
N = Integer(ARGV.fetch(1))
SECONDS = Float(ARGV.fetch(2))

def cpu
  Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
end

def child_work(seconds)
  spin_for(seconds)
end

def master_work
  child_work(0.05)
end

# the master is profiled before it forks
write_facts(OUT, {})
master_work until File.exist?(OUT + ".go")
children = {}
N.times do
  r, w = IO.pipe
  pid = fork do
    t0 = monotonic
    r.close
    child_work(SECONDS)
    w.write(Marshal.dump([cpu, monotonic - t0]))
    w.close
    exit!(0)
  end
  w.close
  children[pid] = r
end
cpus = children.to_h { |pid, r| [pid, Marshal.load(r.read)] }
children.each_key { |pid| Process.wait(pid) }
write_facts(OUT + ".children", { "children" => cpus })
loop { master_work }
