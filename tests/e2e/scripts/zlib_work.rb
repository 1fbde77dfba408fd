# SPDX-License-Identifier: GPL-2.0-only
# Spends its time in zlib's deflate (a C extension calling libz) on large random-ish data, under
# a Ruby method of its own. Usage: ruby zlib_work.rb OUT
require "zlib"
require_relative "common"
OUT = ARGV.fetch(0)

# Random-ish: compressible enough to keep deflate's match search busy, not a run of one byte.
def compress_loop(data)
  loop do
    Zlib::Deflate.deflate(data, Zlib::BEST_COMPRESSION)
    write_facts_once(OUT, "bytes" => data.bytesize)
  end
end

compress_loop(random_text(400_000))
