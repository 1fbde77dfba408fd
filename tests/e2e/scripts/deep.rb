# SPDX-License-Identifier: GPL-2.0-only
# Recurses DEPTH levels, records Ruby's backtrace there and spins. Usage: ruby deep.rb OUT DEPTH
require_relative "common"
OUT = ARGV.fetch(0)

def down(n)
  return bottom if n <= 1
  down(n - 1)
end

def bottom
  i = 0; rec = nil
  loop { rec ||= write_facts(OUT, "frames" => location_facts(caller_locations(0))) || true; i += 1 } # HOT
end
down(Integer(ARGV.fetch(1)) - 4) # <main>, down x (DEPTH - 4), bottom, loop, block in bottom
