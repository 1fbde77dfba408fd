# SPDX-License-Identifier: GPL-2.0-only
# Two "controllers" that spin, called in turns for SECONDS, each request's CPU time measured by
# the script's own clock (the thread's CPU clock); written as JSON to OUT at the end:
# {"OrdersController#index": seconds, "UsersController#show": seconds}. Orders gets about twice
# Users' work per turn. With "threads", each controller runs in a thread of its own, named
# "orders" and "users" (Thread#name: the ruby_thread_name label), at the same time.
#   ruby controllers.rb OUT [SECONDS [threads]]
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

out, seconds, threads = ARGV[0], (ARGV[1] || "3").to_f, ARGV[2] == "threads"
cpu = Hash.new(0.0)
clock = Process::CLOCK_THREAD_CPUTIME_ID
deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
# one request of name: its CPU time on this thread's clock
request = lambda do |name, &blk|
  t0 = Process.clock_gettime(clock)
  blk.call
  Process.clock_gettime(clock) - t0
end
if threads
  workers = [["orders", "OrdersController#index", -> { OrdersController.new.index(100_000) }],
             ["users", "UsersController#show", -> { UsersController.new.show(6_000) }]].map do |tname, name, work|
    Thread.new do
      Thread.current.name = tname
      spent = 0.0
      spent += request.call(name, &work) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      [name, spent]
    end
  end
  workers.each { |t| name, spent = t.value; cpu[name] = spent }
else
  orders, users = OrdersController.new, UsersController.new
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    cpu["OrdersController#index"] += request.call("OrdersController#index") { orders.index(100_000) }
    cpu["UsersController#show"] += request.call("UsersController#show") { users.show(12_000) }
  end
end
File.write(out, JSON.generate(cpu))
