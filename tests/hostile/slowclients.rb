# SPDX-License-Identifier: GPL-2.0-only
# 100 slow clients of the metrics port (ARGV[0]): 40 that connect and send nothing, 30 that
# send one byte a second, 30 that send a whole request with a tiny receive buffer, half-close,
# and never read; reconnecting whichever the daemon closes.
require "socket"
port = Integer(ARGV[0])
mk = lambda do |kind|
  s = Socket.new(:INET, :STREAM)
  s.setsockopt(:SOCKET, :RCVBUF, 256) if kind == :halfopen
  s.connect(Socket.sockaddr_in(port, "127.0.0.1"))
  if kind == :halfopen
    s.write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    s.shutdown(:WR)
  end
  [kind, s]
rescue SystemCallError
  nil
end
kinds = [:idle] * 40 + [:trickle] * 30 + [:halfopen] * 30
socks = kinds.map { |k| mk[k] }
loop do
  socks = socks.each_with_index.map do |ks, i|
    ks ||= mk[kinds[i]]
    next nil unless ks
    kind, s = ks
    begin
      s.write("G") if kind == :trickle
      # a closed idle/half-open socket reads EOF: make a new one
      if kind == :idle && IO.select([s], nil, nil, 0) && s.read_nonblock(1, exception: false).nil?
        s.close
        next mk[kind]
      end
      ks
    rescue SystemCallError, IOError
      s.close rescue nil
      mk[kind]
    end
  end
  sleep 1
end
