# SPDX-License-Identifier: GPL-2.0-only
# Every kind of label Ruby prints, one phase each: in each phase `spin` records Ruby's own
# backtrace (caller_locations) at its hot line and spins there for PHASE seconds.
# Usage: ruby labels.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)
PHASE = 0.7
CASES = []

def spin(name)
  rec = nil
  deadline = monotonic + PHASE
  while monotonic < deadline
    i = 0; rec ||= CASES << [name, location_facts(caller_locations(0))]; i += 1 while i < 100_000 # HOT
  end
end

module Outer
  class Inner
    def inst
      spin("instance method")
    end
    def self.klass
      spin("singleton method of a class")
    end
    def with_block
      [1].each { spin("block") }
    end
    def nested_blocks
      1.times { [1].each { spin("nested blocks") } }
    end
    def rescuer
      raise ArgumentError
    rescue ArgumentError
      spin("rescue")
    end

    def ensurer
      nil
    ensure
      spin("ensure")
    end
    spin("class body")
  end

  module Util
    def self.helper
      spin("module function")
    end
  end
end

spin("main")
require_relative "labels_required"
Outer::Inner.new.inst
Outer::Inner.klass
Outer::Inner.new.with_block
Outer::Inner.new.nested_blocks
Outer::Inner.new.rescuer
Outer::Inner.new.ensurer
Outer::Util.helper
Class.new { def anon; spin("anonymous class"); end }.new.anon
obj = Object.new
def obj.single
  spin("singleton of an object")
end
obj.single
{ a: 1 }.each { spin("Hash#each") }
write_facts(OUT, "cases" => CASES)
