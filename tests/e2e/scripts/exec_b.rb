# SPDX-License-Identifier: GPL-2.0-only
# The program exec_into.rb becomes: spins in exec_b_work until killed.
require_relative "common"

def exec_b_work
  deadline = monotonic + 0.05
  x = 0
  x += 1 while monotonic < deadline
  x
end

loop { exec_b_work }
