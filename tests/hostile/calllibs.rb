# SPDX-License-Identifier: GPL-2.0-only
# The tenant's Ruby for the mixed-mode inputs: dlopens each copy of libz named (RTLD_DEEPBIND,
# so its own calls stay in the copy) and calls its crc32 over 1 MiB, for ever; with NAME=sym,
# calls sym(long) of that library instead (a spin loop).
require "fiddle"
fns = ARGV.map do |a|
  path, sym = a.split("=", 2)
  h = Fiddle::Handle.new(File.expand_path(path), Fiddle::RTLD_NOW | 8)
  if sym
    f = Fiddle::Function.new(h[sym], [Fiddle::TYPE_LONG], Fiddle::TYPE_LONG)
    -> { f.call(2_000_000) }
  else
    f = Fiddle::Function.new(h["crc32"], [Fiddle::TYPE_LONG, Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT], Fiddle::TYPE_LONG)
    buf = "x" * (1 << 20)
    -> { f.call(0, buf, buf.bytesize) }
  end
end
File.write("ready", "") rescue nil
loop { fns.each(&:call) }
