# SPDX-License-Identifier: GPL-2.0-only
# Ruby threads named by Thread#name, each spinning in its own method, and one left unnamed. Writes
# what Ruby knows of each: its name and, where Fiddle can read it, the address of its rb_thread_t
# (the data of its Thread object), which rubyprofd's ruby_thread label names.
# Usage: ruby ruby_threads.rb OUT
OUT = ARGV.fetch(0)

def spin_alpha; x = 0; loop { x += 1 }; end
def spin_beta; x = 0; loop { x += 2 }; end
def spin_gamma; x = 0; loop { x += 3 }; end
def spin_delta; x = 0; loop { x += 4 }; end

begin
  require "fiddle"
rescue LoadError
  nil
end

# RTypedData.data, 32 bytes into the Thread object, on every version tested
def thread_struct(thread)
  format("0x%x", Fiddle::Pointer.new(Fiddle.dlwrap(thread))[32, 8].unpack1("Q"))
rescue LoadError, StandardError
  nil
end

# The facts are gathered before any thread spins: four spinning threads leave the main thread a
# slice of the GVL now and then, too slow for a require.
gate = Queue.new
threads = %w[alpha beta gamma delta].map do |name|
  Thread.new do
    Thread.current.name = "rt-#{name}" unless name == "delta"
    gate.pop
    send("spin_#{name}")
  end
end
sleep 0.01 until threads.all? { |t| t.status == "sleep" }
facts = {
  "pid" => Process.pid,
  "version" => RUBY_VERSION,
  "main_name" => Thread.main.name,
  "threads" => %w[alpha beta gamma delta].zip(threads).to_h do |name, t|
    [name, { "name" => t.name, "struct" => thread_struct(t) }]
  end,
}
File.write(OUT + ".tmp", Marshal.dump(facts))
File.rename(OUT + ".tmp", OUT)
threads.size.times { gate << :go }
threads.each(&:join)
