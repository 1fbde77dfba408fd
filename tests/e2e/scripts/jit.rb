# SPDX-License-Identifier: GPL-2.0-only
# JIT-compiled methods calling JIT-compiled methods. Usage: ruby --yjit jit.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)
$rec = nil

def step(i)
  $rec ||= write_facts(OUT, "frames" => location_facts(caller_locations(0)),
                            "yjit" => defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?) || true
  i + 1
end

def batch(i)

  step(step(step(i)))

end

def hot
  i = 0
  loop { i = batch(i) }
end
hot
