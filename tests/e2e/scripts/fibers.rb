# SPDX-License-Identifier: GPL-2.0-only
# Two threads, each spinning inside a fiber: one in an Enumerator's block driven by an external
# `next` (the block runs on the enumerator's own fiber), one in a Fiber resumed by the thread. Each
# records caller_locations(0) at its hot line once (what Ruby shows inside that fiber: the fiber's
# frames only), then spins there until killed. Usage: ruby fibers.rb OUT
OUT = ARGV.fetch(0)
STACKS = {}
LOCK = Mutex.new
DONE = Queue.new

# The C functions at the bottom of the enumerator's fiber have no Ruby caller, so no path (nil):
# a profile's file name for them is "".
def record(kind, locs)
  LOCK.synchronize { STACKS[kind] = locs.map { |l| { "label" => l.label, "path" => l.path || "", "lineno" => l.lineno } } }
  DONE << kind
end

module Fibers
  class Source
    def items
      Enumerator.new do |y|
        produce(y)
      end
    end

    def produce(y)
      enum_hot
      y << 1
    end

    def enum_hot
      i = 0; done = false
      while true; (record("enum", caller_locations(0)); done = true) unless done; i += 1; end # HOT
    end
  end

  class Worker
    def run
      Fiber.new { outer }.resume
    end

    def outer
      [1].each { fiber_hot }
    end

    def fiber_hot
      i = 0; done = false
      while true; (record("fiber", caller_locations(0)); done = true) unless done; i += 1; end # HOT
    end
  end
end

threads = [
  Thread.new { Fibers::Source.new.items.next },
  Thread.new { Fibers::Worker.new.run },
]
2.times { DONE.pop }
info = LOCK.synchronize { { "pid" => Process.pid, "version" => RUBY_VERSION, "stacks" => STACKS.dup } }
File.write(OUT + ".tmp", Marshal.dump(info))
File.rename(OUT + ".tmp", OUT)
threads.each(&:join)
