# SPDX-License-Identifier: GPL-2.0-only
# Spends its time in garbage collection, triggered from a known line. Usage: ruby gc_churn.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)

def collect
  rec = nil
  loop { rec ||= write_facts(OUT, "frames" => location_facts(caller_locations(0))) || true; GC.start } # HOT
end
collect
