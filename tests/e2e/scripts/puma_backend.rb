# SPDX-License-Identifier: GPL-2.0-only
# The slow backend of puma_app.rb, a process of its own so that its waiting is not in the
# profiled process: a UNIX socket server that answers each line "ok\n" 30 ms after it came.
# Usage: ruby puma_backend.rb SOCKET_PATH
require "socket"

server = UNIXServer.new(ARGV.fetch(0))
loop do
  conn = server.accept
  Thread.new(conn) do |c|
    while c.gets
      sleep 0.03
      c.write("ok\n")
    end
  rescue SystemCallError, IOError
    nil
  ensure
    c.close
  end
end
