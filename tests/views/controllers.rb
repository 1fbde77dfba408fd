# SPDX-License-Identifier: GPL-2.0-only
# Two "controllers" that spin, called in turns for SECONDS, each request's CPU time measured by
# the script's own clock (the thread's CPU clock); written as JSON to OUT at the end:
# {"OrdersController#index": seconds, "UsersController#show": seconds}. Orders gets about twice
# Users' work per turn.
#   ruby controllers.rb OUT [SECONDS]
require "json"

class OrdersController
  def index(n)
    x = 0
    n.times { |i| x += i * i % 7 }
    x
  end
end

class UsersController
  def show(n)
    s = +""
    n.times do |i|
      s << i.to_s
      s.clear if s.size > 512
    end
    s.size
  end
end

out, seconds = ARGV[0], (ARGV[1] || "3").to_f
cpu = Hash.new(0.0)
clock = Process::CLOCK_THREAD_CPUTIME_ID
orders, users = OrdersController.new, UsersController.new
deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  t0 = Process.clock_gettime(clock)
  orders.index(100_000)
  t1 = Process.clock_gettime(clock)
  users.show(12_000)
  t2 = Process.clock_gettime(clock)
  cpu["OrdersController#index"] += t1 - t0
  cpu["UsersController#show"] += t2 - t1
end
File.write(out, JSON.generate(cpu))
