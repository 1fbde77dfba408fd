# SPDX-License-Identifier: GPL-2.0-only
# Ruby -> C -> Ruby nested DEPTH times (Array#each running a block that recurses), zlib at the
# bottom: more native frames than rubyprofd keeps. Usage: ruby nested_deep.rb OUT DEPTH
require "zlib"
require_relative "common"
OUT = ARGV.fetch(0)

def nest(n, data)
  return bottom(data) if n.zero?
  [n].each { nest(n - 1, data) }
end

def bottom(data)
  written = false
  loop do
    Zlib::Deflate.deflate(data, Zlib::BEST_COMPRESSION)
    write_facts(OUT, "frames" => location_facts(caller_locations(0))) unless written
    written = true
  end
end

r = Random.new(42)
words = Array.new(512) { Array.new(r.rand(3..12)) { (97 + r.rand(26)).chr }.join }
nest(Integer(ARGV.fetch(1)), Array.new(200_000) { words[r.rand(words.size)] }.join(" "))
