# SPDX-License-Identifier: GPL-2.0-only
# An app that publishes an OpenTelemetry process context as OTEP 4719 writes it (commit
# 02e55db8b3c0edbf785640fd79bf9a3d6ea79bb6 of opentelemetry-specification), written here from
# the OTEP's text alone, sharing nothing with the reader: a memfd named OTEL_CTX, sized, mapped
# and closed, MADV_DONTFORK, the payload (a Resource, encoded below) after the 32-byte header,
# the header's fields, the signature last, then the mapping named (which this VM's kernel
# refuses; ignored, as the OTEP says). Then it spins in otel_work; on its go it updates the
# context by the updating protocol (published_at_ns 0, the new payload's pointer and size, a new
# published_at_ns) and spins on.
# Usage: ruby otel_ctx.rb OUT NAME VERSION ENV INSTANCE NAME2 VERSION2 ENV2
# (OTEL_CTX_TEST_VERSION: the header's version, 2 by default: another one is refused by readers)
require "fiddle"
require_relative "common"
require_relative "resource_pb"

OUT, NAME, VERSION, ENVNAME, INSTANCE, NAME2, VERSION2, ENV2 = ARGV

LIBC = Fiddle::Handle::DEFAULT
def libc(name, args, ret)
  Fiddle::Function.new(LIBC[name], args, ret)
end

I = Fiddle::TYPE_INT
L = Fiddle::TYPE_LONG
P = Fiddle::TYPE_VOIDP
MEMFD_CREATE = libc("memfd_create", [P, I], I)
FTRUNCATE = libc("ftruncate", [I, L], I)
MMAP = libc("mmap", [P, L, I, I, I, L], P)
MADVISE = libc("madvise", [P, L, I], I)
CLOSE = libc("close", [I], I)
PRCTL = libc("prctl", [I, L, L, L, L], I)
PROT_READ_WRITE = 3
MAP_SHARED = 1
MFD_CLOEXEC = 1
MADV_DONTFORK = 10
PR_SET_VMA = 0x53564d41
PR_SET_VMA_ANON_NAME = 0
SIZE = 4096

def resource(name, version, env)
  otel_resource({ "service.name" => name, "service.version" => version,
                  "deployment.environment.name" => env, "service.instance.id" => INSTANCE,
                  "telemetry.sdk.language" => "ruby", "threadlocal.schema_version" => "tlsdesc_v1_dev" },
                %w[http.route http.method])
end

def now_ns
  Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
end

fd = MEMFD_CREATE.call("OTEL_CTX", MFD_CLOEXEC)
raise "memfd_create failed" if fd.negative?
raise "ftruncate failed" unless FTRUNCATE.call(fd, SIZE).zero?

addr = MMAP.call(nil, SIZE, PROT_READ_WRITE, MAP_SHARED, fd, 0)
raise "mmap failed" if addr.to_i == -1 || addr.to_i.zero?

CLOSE.call(fd)
raise "madvise failed" unless MADVISE.call(addr, SIZE, MADV_DONTFORK).zero?

MAP = Fiddle::Pointer.new(addr.to_i, SIZE)
def name_mapping
  PRCTL.call(PR_SET_VMA, PR_SET_VMA_ANON_NAME, MAP.to_i, SIZE, Fiddle::Pointer["OTEL_CTX"].to_i)
end

# x86-64 keeps stores in order, and each of these is a memcpy: the signature, written last, is
# seen after the fields (the OTEP's "memory barrier")
first = resource(NAME, VERSION, ENVNAME)
MAP[32, first.bytesize] = first
MAP[8, 24] = [Integer(ENV.fetch("OTEL_CTX_TEST_VERSION", "2")), first.bytesize, now_ns, MAP.to_i + 32].pack("L<L<Q<Q<")
MAP[0, 8] = "OTEL_CTX"
name_mapping

def otel_work
  deadline = monotonic + 0.05
  x = 0
  x += 1 while monotonic < deadline
  x
end

write_facts(OUT, { "ctx" => MAP.to_i })
otel_work until File.exist?(OUT + ".go")
# the updating protocol: the new payload elsewhere in the mapping
second = resource(NAME2, VERSION2, ENV2)
MAP[16, 8] = [0].pack("Q<")
MAP[1024, second.bytesize] = second
MAP[12, 4] = [second.bytesize].pack("L<")
MAP[24, 8] = [MAP.to_i + 1024].pack("Q<")
updated = now_ns
MAP[16, 8] = [updated].pack("Q<")
name_mapping
File.write(OUT + ".updated", updated.to_s)
loop { otel_work }
