# SPDX-License-Identifier: GPL-2.0-only
# The writer's own check (test_threadctx_writer): tests/e2e/cext/otelctx.c publishes a process
# context and attaches one record on the main thread and another on a second thread, then waits,
# so that an outside reader (gdb's libthread_db, /proc/PID/mem) can compare what it finds with
# what was written.
# Usage: ruby threadctx_writer.rb OUT SO
require_relative "common"

OUT, SO = ARGV
require SO

def pb_varint(n)
  s = +"".b
  loop do
    b = n & 0x7f
    n >>= 7
    s << (n.positive? ? b | 0x80 : b).chr
    return s if n.zero?
  end
end

def pb_field(num, bytes)
  pb_varint(num << 3 | 2) + pb_varint(bytes.bytesize) + bytes.b
end

def pb_kv(key, any)
  pb_field(1, pb_field(1, key) + pb_field(2, any))
end

KEYS = %w[http.route http.method].freeze
payload = pb_kv("service.name", pb_field(1, "writer-check")) +
          pb_kv("threadlocal.schema_version", pb_field(1, "tlsdesc_v1_dev")) +
          pb_kv("threadlocal.attribute_key_map", pb_field(5, KEYS.map { |k| pb_field(1, pb_field(1, k)) }.join))
map = OtelCtx.publish_process(payload)

WANT = {
  "main" => ["0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", { 0 => "/orders/:id", 1 => "GET" }],
  "w1" => ["4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", { 0 => "/pay" }],
}.freeze
recs = WANT.transform_values { |t, s, a| OtelCtx.record(t, s, 1, a) }
OtelCtx.attach(recs["main"])
q = Queue.new
Thread.new do
  Thread.current.name = "w1"
  OtelCtx.attach(recs["w1"])
  q << OtelCtx.current
  sleep
end
w1_current = q.pop
write_facts(OUT, { "want" => WANT, "addr" => recs.transform_values(&:address), "bytes" => recs.transform_values(&:bytes),
                   "current" => { "main" => OtelCtx.current, "w1" => w1_current }, "map" => map, "payload" => payload,
                   "tls_model" => OtelCtx.tls_model })
sleep
