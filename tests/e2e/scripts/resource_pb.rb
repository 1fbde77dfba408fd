# SPDX-License-Identifier: GPL-2.0-only
# The test writers' protobuf, by hand (no gem): an opentelemetry.proto.resource.v1.Resource as
# OTEP 4719's process context carries it. Resource.attributes (1) are KeyValue {key 1, value 2:
# AnyValue {string_value 1, array_value 5: ArrayValue {values 1}}}; every field here is
# length-delimited, its tag and length varints.

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

# AnyValue{string_value}
def pb_string(s)
  pb_field(1, s)
end

# one Resource.attributes entry
def pb_kv(key, any)
  pb_field(1, pb_field(1, key) + pb_field(2, any))
end

# A Resource: string attributes in their order, then threadlocal.attribute_key_map (an array of
# the thread records' key names, index = key byte) when keys are given.
def otel_resource(attrs, keys = nil)
  body = attrs.map { |k, v| pb_kv(k, pb_string(v)) }.join
  return body unless keys

  body + pb_kv("threadlocal.attribute_key_map", pb_field(5, keys.map { |k| pb_field(1, pb_string(k)) }.join))
end
