# SPDX-License-Identifier: GPL-2.0-only
# Spends its time in zlib's deflate (a C extension calling libz) on large random-ish data, under
# a Ruby method of its own. Usage: ruby zlib_work.rb OUT
require "zlib"
require_relative "common"
OUT = ARGV.fetch(0)

# Random-ish: compressible enough to keep deflate's match search busy, not a run of one byte.
def make_data
  r = Random.new(42)
  words = Array.new(512) { Array.new(r.rand(3..12)) { (97 + r.rand(26)).chr }.join }
  Array.new(400_000) { words[r.rand(words.size)] }.join(" ")
end

def compress_loop(data)
  written = false
  loop do
    Zlib::Deflate.deflate(data, Zlib::BEST_COMPRESSION)
    write_facts(OUT, "bytes" => data.bytesize) unless written
    written = true
  end
end

compress_loop(make_data)
