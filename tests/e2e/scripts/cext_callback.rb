# SPDX-License-Identifier: GPL-2.0-only
# Ruby -> C -> Ruby -> C with a C extension of the tests (tests/e2e/cext/cbext.c): CbExt.each_twice
# yields from its own C functions to a block whose Ruby methods call CbExt.spin, which burns CPU
# in C. Usage: ruby cext_callback.rb OUT CBEXT_SO
require_relative "common"
OUT = ARGV.fetch(0)
require ARGV.fetch(1)

SPIN = 3_000_000

def spin_inner
  $locs ||= caller_locations(0); CbExt.spin(SPIN)
end

def spin_outer
  spin_inner
end

# `while`, not Kernel#loop: no C frame of loop's own between each_twice and its caller
def run_callbacks
  written = false
  while true
    CbExt.each_twice { |_i| spin_outer }
    write_facts(OUT, "frames" => location_facts($locs)) unless written
    written = true
  end
end

run_callbacks
