# SPDX-License-Identifier: GPL-2.0-only
# A broken (or hostile) OpenTelemetry thread-context writer: the process context and its key map
# are right, the records are not. Three threads take turns through every kind of bad record, each
# run in a method of its own (bad_<kind>) with the thread's pointer set to that kind's record, so
# a sample's stack says which record it was taken with.
#
# Usage: ruby threadctx_bad.rb OUT SO
require_relative "common"
require_relative "resource_pb"

OUT, SO = ARGV
require SO

KEYS = %w[http.route http.method].freeze
TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"

# trace-id, span-id, valid, flags, attrs-data-size, attrs (the OTEP's layout, written by hand)
def raw(valid: 1, size: nil, attrs: "".b)
  [TRACE].pack("H*") + [SPAN].pack("H*") + [valid, 1, size || attrs.bytesize].pack("CCS<") + attrs.b
end

def attr(key, value)
  [key, value.bytesize].pack("CC") + value.b
end

GOOD = OtelCtx.raw_record(raw(attrs: attr(0, "/good") + attr(1, "GET")))
RECORDS = {
  # kind => [record or address, the labels a sample of it must carry]
  "good" => [GOOD, { "trace_id" => TRACE, "span_id" => SPAN, "http_route" => "/good", "http_method" => "GET" }],
  "invalid" => [OtelCtx.raw_record(raw(valid: 0, attrs: attr(0, "/invalid"))), {}],
  "valid2" => [OtelCtx.raw_record(raw(valid: 2, attrs: attr(0, "/valid2"))), {}],
  "unmapped" => [0x1000, {}],
  "odd" => [GOOD.address + 1, {}],
  "oversize" => [OtelCtx.raw_record(raw(size: 0xffff, attrs: attr(0, "/oversize"))), { "trace_id" => TRACE, "span_id" => SPAN }],
  "badutf8" => [OtelCtx.raw_record(raw(attrs: attr(0, "\xc3\x28") + attr(1, "GET"))),
                { "trace_id" => TRACE, "span_id" => SPAN, "http_method" => "GET" }],
  "control" => [OtelCtx.raw_record(raw(attrs: attr(0, "/a\e[31m"))), { "trace_id" => TRACE, "span_id" => SPAN }],
  "badkey" => [OtelCtx.raw_record(raw(attrs: attr(200, "x") + attr(0, "/ok"))),
               { "trace_id" => TRACE, "span_id" => SPAN, "http_route" => "/ok" }],
  "truncated" => [OtelCtx.raw_record(raw(size: 10, attrs: attr(0, "/r") + [1, 200].pack("CC") + "GE".b + "x" * 4)),
                  { "trace_id" => TRACE, "span_id" => SPAN, "http_route" => "/r" }],
  "zero_ids" => [OtelCtx.raw_record(("\0" * 24).b + [1, 0, 4].pack("CCS<") + attr(1, "PU")), { "http_method" => "PU" }],
}.freeze

def now_cpu
  Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
end

RECORDS.each_key do |kind|
  Object.class_eval("def bad_#{kind}\n t = now_cpu + 0.02\n nil while now_cpu < t\nend", __FILE__, __LINE__)
end

OtelCtx.publish_process(otel_resource({ "service.name" => "ctx-bad", "threadlocal.schema_version" => "tlsdesc_v1_dev" }, KEYS))
threads = Array.new(3) do |i|
  Thread.new do
    Thread.current.name = "bad-#{i}"
    kinds = RECORDS.keys.rotate(i)
    loop do
      kinds.each do |kind|
        rec, = RECORDS[kind]
        rec.is_a?(Integer) ? OtelCtx.attach_address(rec) : OtelCtx.attach(rec)
        send("bad_#{kind}")
        OtelCtx.attach(nil)
      end
    end
  end
end
write_facts(OUT, { "want" => RECORDS.transform_values { |_, labels| labels } })
wait_for_go(OUT)
sleep
