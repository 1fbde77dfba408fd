# SPDX-License-Identifier: GPL-2.0-only
# One method body (one iseq) run under two owners in turn: each phase spins in the shared body
# and records Ruby's own backtrace there, with the owner Ruby names for it (Method#owner).
# Usage: ruby owners.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)
PHASE = 0.3
ROUNDS = 4
CASES = {}

# The owner-qualified label of the method running in the caller's frame, as Ruby 3.4 prints it:
# "Klass#name", or "Mod.name" for a singleton method of a module.
def owner_label(owner, name)
  attached = owner.singleton_class? && owner.inspect[/\A#<Class:(.*)>\z/, 1]
  attached ? "#{attached}.#{name}" : "#{owner.name}##{name}"
end

module Shared
  # the method body every case runs; `owner` is the Method#owner of this call
  def spun(name, owner)
    deadline = monotonic + PHASE
    while monotonic < deadline
      i = 0; CASES[name] ||= [location_facts(caller_locations(0)), owner_label(owner, :spun)]; i += 1 while i < 100_000 # HOT
    end
  end
end

# define_method with the same UnboundMethod: two entries, two owners, one iseq
class Dog
  define_method(:spun, Shared.instance_method(:spun))
  def go
    spun("define_method copy in Dog", Dog.instance_method(:spun).owner)
  end
end

class Cat
  define_method(:spun, Shared.instance_method(:spun))
  def go
    spun("define_method copy in Cat", Cat.instance_method(:spun).owner)
  end
end

# module_function: a private instance method and a singleton method sharing one iseq
module Tool
  module_function

  def spin2(name, owner)
    deadline = monotonic + PHASE
    while monotonic < deadline
      i = 0; CASES[name] ||= [location_facts(caller_locations(0)), owner_label(owner, :spin2)]; i += 1 while i < 100_000 # HOT2
    end
  end
end

class User
  include Tool
  def go
    spin2("module_function instance copy", Tool.instance_method(:spin2).owner)
  end
end

# Warm-up: rubyprofd may still be finding this process (a command it just started).
warm = monotonic + 1.0
nil while monotonic < warm

ROUNDS.times do
  Dog.new.go
  Cat.new.go
  Tool.spin2("module_function singleton copy", Tool.method(:spin2).owner)
  User.new.go
end
write_facts(OUT, "cases" => CASES.map { |name, (want, label)| [name, want, label] })
