# SPDX-License-Identifier: GPL-2.0-only
# Records its own backtrace at the hot line (caller_locations, as Ruby shows it), then spins on
# that very line until killed. Usage: ruby exact_stack.rb OUT.json
OUT = ARGV.fetch(0)

def c_function?(klass, name)
  # A method implemented in C has no instruction sequence.
  RubyVM::InstructionSequence.of(klass.instance_method(name)).nil?
end

# Each frame's label as Ruby 3.4 prints it, with its method's owner (Method#owner), whatever
# this Ruby prints: rubyprofd names the owner on every version.
def qualified(label)
  owners = { "hot" => Outer::Worker.instance_method(:hot), "middle" => Outer::Worker.instance_method(:middle),
             "run" => Outer::Worker.instance_method(:run), "times" => Integer.instance_method(:times),
             "loop" => Kernel.instance_method(:loop), "each" => Array.instance_method(:each) }
  label.sub(/(\A|in )(?:[A-Z][\w:]*[#.])?(\w+)\z/) { (m = owners[$2]) ? "#{$1}#{m.owner.name}##{$2}" : $& }
end

def record(locs)
  frames = locs.map { |l| { "label" => l.label, "path" => l.path, "lineno" => l.lineno, "qualified" => qualified(l.label) } }
  info = {
    "pid" => Process.pid,
    "cpu" => Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID), # at the hot line
    "at" => Process.clock_gettime(Process::CLOCK_REALTIME), # Time.now, which dlhost lacks
    "version" => RUBY_VERSION,
    "frames" => frames,
    "c_functions" => {
      "times" => c_function?(Integer, :times),
      "loop" => c_function?(Kernel, :loop),
      "each" => c_function?(Array, :each),
    },
  }
  File.write(OUT + ".tmp", Marshal.dump(info))
  File.rename(OUT + ".tmp", OUT)
end

module Outer
  class Worker
    def run
      [1].each do
        2.times do
          loop do
            middle
          end
        end
      end
    end

    def middle
      hot(3)
    end

    def hot(n)
      i = 0; done = false
      while true; (record(caller_locations(0)); done = true) unless done; i += n; end # HOT
    end
  end
end

Outer::Worker.new.run
