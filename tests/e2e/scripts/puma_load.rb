# SPDX-License-Identifier: GPL-2.0-only
# The load generator of puma_app.rb, a process of its own: CLIENTS threads each send one HTTP
# request after another (a new connection each) to the Puma server's UNIX socket, for ever.
# Usage: ruby puma_load.rb SOCKET_PATH CLIENTS
require "socket"

path = ARGV.fetch(0)
clients = Integer(ARGV.fetch(1))
request = "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
threads = Array.new(clients) do
  Thread.new do
    loop do
      UNIXSocket.open(path) do |s|
        s.write(request)
        s.read
      end
    rescue SystemCallError, IOError
      sleep 0.01 # the server is not listening yet, or went away
    end
  end
end
threads.each(&:join)
