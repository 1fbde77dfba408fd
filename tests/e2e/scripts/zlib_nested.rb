# SPDX-License-Identifier: GPL-2.0-only
# Ruby -> C (Array#each) -> Ruby block -> C (Zlib::Deflate.deflate) -> libz: two VM invocations
# on one native stack. Usage: ruby zlib_nested.rb OUT
require "zlib"
require_relative "common"
OUT = ARGV.fetch(0)

def compress_each(data)
  loop do
    [data].each do |d|
      Zlib::Deflate.deflate(d, Zlib::BEST_COMPRESSION)
    end
    write_facts_once(OUT, "bytes" => data.bytesize)
  end
end

compress_each(random_text(400_000))
