# SPDX-License-Identifier: GPL-2.0-only
# Spins in exec_a_work for SECONDS of its own CPU time, then replaces itself (same pid) with another
# Ruby program that spins in exec_b_work. Usage: ruby exec_into.rb OUT SECONDS
require "rbconfig"
require_relative "common"

OUT = ARGV.fetch(0)

def exec_a_work(seconds)
  deadline = cpu_time + seconds
  x = 0
  x += 1 while cpu_time < deadline
  x
end

write_facts(OUT, {})
exec_a_work(Float(ARGV.fetch(1)))
exec(RbConfig.ruby, File.join(__dir__, "exec_b.rb"))
