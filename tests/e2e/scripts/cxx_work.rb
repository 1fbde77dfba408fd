# SPDX-License-Identifier: GPL-2.0-only
# Spends its time in a C++ member function of a shared library (LIB, built by the test) called
# through Fiddle, under a Ruby method of its own. Usage: ruby cxx_work.rb OUT LIB
require "fiddle"
require_relative "common"
OUT = ARGV.fetch(0)
LIB = ARGV.fetch(1)

def burn_loop(burn)
  loop { burn.call(20) }
end

burn = Fiddle::Function.new(Fiddle.dlopen(LIB)["rp_burn"], [Fiddle::TYPE_INT], Fiddle::TYPE_LONG)
write_facts(OUT, {})
burn_loop(burn)
