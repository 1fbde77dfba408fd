# SPDX-License-Identifier: GPL-2.0-only
# More methods than a symbolizer's iseq cache holds (daemon/ruby/symbolizer.c: 65,536 iseqs), so that a
# profiler sampling it fast drops and refills its caches again and again while it symbolizes:
# NCLASSES classes and modules of NMETHODS methods each, every method calling a block (through its
# own copy of Kernel#catch) that calls a block (through another copy) in which it calls the next
# method of its owner: three iseqs and two C method entries per method. Each step of the rotation calls
# a chain of DEPTH methods of one owner (every sample holds DEPTH methods and their blocks) and
# spins in Many.leaf for SPIN seconds at the end of it, so that the chain's frames still live when
# the profiler reads their environment to confirm the owner; the next step moves on to the next
# owner and, after the last, to the next DEPTH methods.
#
# Usage: ruby many_methods.rb OUT [NCLASSES [NMETHODS [DEPTH [SPIN [PAUSE]]]]]
# Writes its facts to OUT once the methods are defined, then runs its rotation until killed.
# Facts: "methods" (how many), "owners" (per generated file: its path and the prefix Ruby gives
# its methods' owner, "Many::C0#" or "Many::C1."), "recorded" (for a sample of the methods, what
# Ruby itself says: caller_locations of its two blocks and of itself, and Method#owner).
require_relative "common"
OUT = ARGV.fetch(0)
NCLASSES = Integer(ARGV.fetch(1, "200"))
NMETHODS = Integer(ARGV.fetch(2, "500"))
DEPTH = Integer(ARGV.fetch(3, "3"))
SPIN = Float(ARGV.fetch(4, "0.0005"))
PAUSE = Float(ARGV.fetch(5, "0"))

module Many
  # The end of each chain: CPU time in a frame of its own.
  def self.leaf(x)
    return x if $rec

    deadline = monotonic + SPIN
    x = (x * 31 + 7) & 0xffffffff while monotonic < deadline
    x
  end
end

# Even owners are classes (instance methods: "Many::C0#m1"), odd ones modules (singleton methods:
# "Many::C1.m1"). Each owner is evaluated from a file name of its own, each method on line j + 1,
# so that a frame's path and line name its method.
OWNERS = (0...NCLASSES).map do |i|
  klass = i.even?
  path = "many/c#{i}.rb"
  mod = klass ? Class.new : Module.new
  Many.const_set("C#{i}", mod)
  # Each method's own two copies of Kernel#catch (a C function that yields once): C method
  # entries of their own (more than the symbolizer's 16,384 names), owned by the method's owner.
  target = klass ? mod : mod.singleton_class
  src = (0...NMETHODS).map do |j|
    target.define_method(:"t#{j}", Kernel.instance_method(:catch))
    target.define_method(:"u#{j}", Kernel.instance_method(:catch))
    outer, inner = j.even? ? ["t#{j}", "u#{j}"] : ["u#{j}", "t#{j}"]
    nxt = "m#{(j + 1) % NMETHODS}"
    "def #{klass ? "" : "self."}m#{j}(d, x); #{outer} { #{inner} { $rec&.push(caller_locations(0, 5)); " \
      "x = d.zero? ? ::Many.leaf(x + #{j}) : #{nxt}(d - 1, x) } }; x; end"
  end.join("\n")
  mod.module_eval(src, path, 1)
  [mod, klass ? mod.new : mod, path]
end

# What Ruby says of every 97th method: its block's and its own caller_locations, and its owner.
recorded = []
(0...NCLASSES * NMETHODS).step(97) do |k|
  mod, recv, path = OWNERS[k % NCLASSES]
  j = k / NCLASSES
  m = recv.method(:"m#{j}")
  $rec = []
  m.call(0, 1)
  inner, cinner, outer, couter, meth = $rec.first
  $rec = nil
  owner = m.owner.singleton_class? ? "#{recv.name}." : "#{m.owner.name}#"
  recorded << {
    "name" => "m#{j}", "owner" => owner, "path" => path,
    "frames" => [inner, outer, meth].map { |l| { "label" => l.label, "path" => l.path, "lineno" => l.lineno } },
    "cfuncs" => [cinner.label, couter.label]
  }
end

write_facts(OUT, "methods" => NCLASSES * NMETHODS, "depth" => DEPTH,
                 "owners" => OWNERS.map { |mod, recv, path| [path, mod.is_a?(Class) ? "#{mod.name}#" : "#{mod.name}."] },
                 "recorded" => recorded)

step = 0
loop do
  i = step % NCLASSES
  j = (step / NCLASSES * DEPTH) % NMETHODS
  OWNERS[i][1].__send__(:"m#{j}", DEPTH - 1, step)
  step += 1
  sleep(PAUSE)
end
