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

def monotonic
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
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
