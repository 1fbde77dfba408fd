# SPDX-License-Identifier: GPL-2.0-only
# A master that loads zlib and forks WORKERS workers without exec (Puma and Unicorn clustered):
# each compresses with Zlib::Deflate.deflate forever, under a Ruby method of its own. The facts
# name the workers' pids. Usage: ruby zlib_workers.rb OUT WORKERS
require "zlib"
require_relative "common"
OUT = ARGV.fetch(0)
WORKERS = Integer(ARGV.fetch(1))

def worker_loop(data)
  loop { Zlib::Deflate.deflate(data, Zlib::BEST_COMPRESSION) }
end

data = random_text(100_000)
workers = Array.new(WORKERS) { fork { worker_loop(data) } }
write_facts(OUT, "workers" => workers)
# the workers are in the master's process group: they go with it
Process.waitall
