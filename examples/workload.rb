# SPDX-License-Identifier: GPL-2.0-only
# A small CPU-bound Ruby program for a first look at rubyprofd: three kinds of work in a loop,
# with a known split of CPU time. Runs for ARGV[0] seconds (default 12).
module Shop
  class Catalog
    def initialize
      @items = Array.new(2_000) { |i| { id: i, name: "item-#{i}", price: (i * 7919) % 1000 } }
    end

    # Sorting and hashing: mostly C functions (Array#sort_by, Hash#[])
    def cheapest(n)
      @items.sort_by { |item| item[:price] }.first(n).map { |item| item[:name] }
    end
  end

  module Pricing
    # Plain recursion: all Ruby frames
    def self.fib(n)
      n < 2 ? n : fib(n - 1) + fib(n - 2)
    end
  end

  class Report
    # String building: blocks and String#<<
    def render(rows)
      out = +""
      rows.times do |i|
        out << "row #{i}: " << ("*" * (i % 40)) << "\n"
      end
      out.size
    end
  end
end

deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV.fetch(0, 12))
catalog = Shop::Catalog.new
report = Shop::Report.new
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  Shop::Pricing.fib(20)
  catalog.cheapest(10)
  report.render(2_000)
end
