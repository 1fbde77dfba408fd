# SPDX-License-Identifier: GPL-2.0-only
# Ruby -> C (Array#each) -> Ruby block -> C (Zlib::Deflate.deflate) -> libz: two VM invocations
# on one native stack. Usage: ruby zlib_nested.rb OUT
require "zlib"
require_relative "common"
OUT = ARGV.fetch(0)

def make_data
  r = Random.new(42)
  words = Array.new(512) { Array.new(r.rand(3..12)) { (97 + r.rand(26)).chr }.join }
  Array.new(400_000) { words[r.rand(words.size)] }.join(" ")
end

def compress_each(data)
  written = false
  loop do
    [data].each do |d|
      Zlib::Deflate.deflate(d, Zlib::BEST_COMPRESSION)
    end
    write_facts(OUT, "bytes" => data.bytesize) unless written
    written = true
  end
end

compress_each(make_data)
