# SPDX-License-Identifier: GPL-2.0-only
# Spends its time in system calls: a pipe written and read back 4 KiB at a time, with
# IO#syswrite and IO#sysread (C methods calling libc's write and read). Usage: ruby pipe_syscalls.rb OUT
require_relative "common"
OUT = ARGV.fetch(0)

def pipe_loop
  r, w = IO.pipe
  data = "x" * 4096
  written = false
  loop do
    w.syswrite(data)
    r.sysread(4096)
    write_facts(OUT, {}) unless written
    written = true
  end
end

pipe_loop
