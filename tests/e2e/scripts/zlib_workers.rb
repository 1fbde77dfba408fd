# SPDX-License-Identifier: GPL-2.0-only
# A master that loads zlib and forks WORKERS workers without exec (Puma and Unicorn clustered):
# each compresses with Zlib::Deflate.deflate forever, under a Ruby method of its own. The facts
# name the workers' pids. Usage: ruby zlib_workers.rb OUT WORKERS
require "zlib"
require_relative "common"
OUT = ARGV.fetch(0)
WORKERS = Integer(ARGV.fetch(1))

def make_data
  r = Random.new(42)
  words = Array.new(512) { Array.new(r.rand(3..12)) { (97 + r.rand(26)).chr }.join }
  Array.new(100_000) { words[r.rand(words.size)] }.join(" ")
end

def worker_loop(data)
  loop { Zlib::Deflate.deflate(data, Zlib::BEST_COMPRESSION) }
end

data = make_data
workers = Array.new(WORKERS) { fork { worker_loop(data) } }
write_facts(OUT, "workers" => workers)
# the workers are in the master's process group: they go with it
Process.waitall
