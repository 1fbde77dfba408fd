# SPDX-License-Identifier: GPL-2.0-only
# Every kind of label Ruby prints, one phase each: in each phase `spin` records Ruby's own
# backtrace (caller_locations) at its hot line and spins there for PHASE seconds of its CPU
# time (so that each phase gets its samples on a busy machine too).
# Usage: ruby labels.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)
PHASE = 0.7
CASES = []

# What Ruby 3.4 prints for frames of each case (index in caller_locations(0) => label); rubyprofd
# prints these on every version.
QUALIFIED = Gem::Version.new(RUBY_VERSION) >= Gem::Version.new("3.4")

def spin(name, owner_labels = {})
  rec = nil
  deadline = cpu_time + PHASE
  while cpu_time < deadline
    i = 0; rec ||= CASES << [name, location_facts(caller_locations(0)), owner_labels]; i += 1 while i < 100_000 # HOT
  end
end

# Warm-up: rubyprofd may still be finding this process (a command it just started).
warm = cpu_time + 1.0
nil while cpu_time < warm

module Outer
  class Inner
    def inst
      spin("instance method", 1 => "Outer::Inner#inst")
    end
    def self.klass
      spin("singleton method of a class", 1 => "Outer::Inner.klass")
    end
    def with_block
      [1].each { spin("block", 1 => "block in Outer::Inner#with_block", 2 => "Array#each") }
    end
    def nested_blocks
      1.times { [1].each { spin("nested blocks", 1 => "block (2 levels) in Outer::Inner#nested_blocks") } }
    end
    def rescuer
      raise ArgumentError
    rescue ArgumentError
      spin("rescue", 1 => QUALIFIED ? "Outer::Inner#rescuer" : "rescue in Outer::Inner#rescuer")
    end

    def ensurer
      nil
    ensure
      spin("ensure", 1 => "Outer::Inner#ensurer") # the ensure clause runs inline on the normal path
    end
    spin("class body", 1 => "<class:Inner>")
  end

  # An operator method called from C: its name comes from the operator part of the ID table
  class Eq
    def ==(other)
      spin("operator", 1 => "Outer::Eq#==", 2 => "Array#==")
      true
    end
  end

  module Util
    def self.helper
      spin("module function", 1 => "Outer::Util.helper")
    end
  end
end

spin("main", 0 => "Object#spin", 1 => "<main>")
require_relative "labels_required"
Outer::Inner.new.inst
Outer::Inner.klass
Outer::Inner.new.with_block
Outer::Inner.new.nested_blocks
Outer::Inner.new.rescuer
Outer::Inner.new.ensurer
Outer::Util.helper
Class.new { def anon; spin("anonymous class", 1 => "anon"); end }.new.anon
obj = Object.new
def obj.single
  spin("singleton of an object", 1 => "single")
end
obj.single
{ a: 1 }.each { spin("Hash#each", 1 => "block in <main>", 2 => "Hash#each") }
[Outer::Eq.new] == [Outer::Eq.new]
write_facts(OUT, "cases" => CASES)
