# SPDX-License-Identifier: GPL-2.0-only
# Three named threads, each spinning in its own method. Usage: ruby threads.rb OUT
OUT = ARGV.fetch(0)

def spin_alpha; x = 0; loop { x += 1 }; end
def spin_beta; x = 0; loop { x += 2 }; end
def spin_gamma; x = 0; loop { x += 3 }; end

threads = %w[alpha beta gamma].map do |name|
  Thread.new do
    Thread.current.name = "rp-#{name}"
    send("spin_#{name}")
  end
end
sleep 0.2
File.write(OUT + ".tmp", Marshal.dump({ "pid" => Process.pid, "version" => RUBY_VERSION }))
File.rename(OUT + ".tmp", OUT)
threads.each(&:join)
