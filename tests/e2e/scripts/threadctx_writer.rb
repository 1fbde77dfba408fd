# SPDX-License-Identifier: GPL-2.0-only
# The writer's own check (test_threadctx_writer): tests/e2e/cext/otelctx.c publishes a process
# context and attaches one record on the main thread and another on a second thread, then waits,
# so that an outside reader (gdb's libthread_db, /proc/PID/mem) can compare what it finds with
# what was written.
# Usage: ruby threadctx_writer.rb OUT SO
require_relative "common"
require_relative "resource_pb"

OUT, SO = ARGV
require SO

KEYS = %w[http.route http.method].freeze
payload = otel_resource({ "service.name" => "writer-check", "threadlocal.schema_version" => "tlsdesc_v1_dev" }, KEYS)
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
