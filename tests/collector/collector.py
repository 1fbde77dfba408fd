#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""A local stand-in for the collectors rubyprofd ships profiles to: Grafana Pyroscope (/ingest
and the push API) and Parca (ProfileStoreService.WriteRaw over gRPC-web and its HTTP/JSON
gateway). Python 3 standard library only. It follows the servers' own source, read for the
contract (nothing copied); the files read, at grafana/pyroscope 3fe6a457 and parca-dev/parca
3b5647cd:

  pkg/ingester/pyroscope/ingest_handler.go   /ingest: query parsing, body formats, status codes
  api/model/labelset/labelset.go, validate.go the name= parser and its error messages
  pkg/og/util/attime/attime.go                from=/until= parsing
  pkg/og/convert/pprof/profile.go             format=pprof: raw body or multipart field "profile",
                                              fixTime (time_nanos 0 or 1970 -> from=)
  pkg/ingester/pyroscope/ingest_adapter.go    errors of the conversion and the push path
  pkg/util/http/error.go, auth.go             JSON error bodies; 401 "no org id" (multi-tenant)
  pkg/util/connectgrpc/connectgrpc.go         HTTP status <-> Connect code
  pkg/validation/validate.go, limits.go       labels, ingestion window (reject_older_than 1h,
                                              reject_newer_than 10m), max profile size 4 MiB,
                                              body limit 256 MiB
  pkg/distributor/distributor.go              Push: errors wrapped as invalid_argument (400)
  api/push/v1/push.proto, api/types/v1         PushRequest/RawProfileSeries/RawSample/LabelPair
  parca: proto/parca/profilestore/v1alpha1/profilestore.proto  WriteRawRequest, /profiles/writeraw
  parca: pkg/server/server.go                 gRPC-web (improbable-eng, any path, Content-Type
                                              application/grpc*) and the gateway under /api
  parca: pkg/normalizer/normalizer.go         WriteRaw validation: __name__, label names, gzip

CONTRACT (what this collector implements)

POST /ingest?name=APP{k=v,...}&from=&until=&sampleRate=&spyName=&format=pprof
  name: parsed character by character as Pyroscope's labelset parser does: the service name is
    everything before the first '{' (spaces trimmed), [A-Za-z0-9_./-]; inside {}, "k=v" pairs
    separated by ','; keys (trimmed) [A-Za-z0-9_.], "__name__" reserved; values (trimmed) any
    character but ',' and '}'; a key without '=' before '}' is dropped; an unterminated "{k=v"
    drops that pair. Errors -> 400 {"code":"invalid_argument","message":"name: invalid service
    name: APP: character is not allowed: ' '"} (and "service name is required", "invalid label
    name: K: character is not allowed: '-'", "label name is required").
  from/until: digits only -> an 8-digit YYYYMMDD date, else unix time by length: 13 digits ms,
    16 us, 19 ns, other lengths seconds; "now", "now-1h" etc. relative; absent -> now. Never an
    error (as in Pyroscope).
  sampleRate: an integer >= 0, else 100 (logged, not an error); spyName: default "unknown".
  format=pprof: the body is the profile, gzip'd or plain. Without format=pprof, a
    multipart/form-data body is read for its "profile" field (a "prev_profile" field -> error).
    Other formats are refused here with 422 (this stand-in only decodes pprof).
  Body: an empty profile -> 200, nothing stored (Pyroscope ignores it). A body larger than
    --max-body-bytes -> 413. A profile that does not parse as a pprof Profile, or has no
    sample_type, or whose decompressed size exceeds --max-profile-bytes, or outside the
    ingestion window -> 422 {"code":"unknown","message":"..."} (the ingest handler answers 422
    for every error of the push path but resource_exhausted, which is 429).
  Ingestion window: the profile's time_nanos (or from= when it is 0 or in 1970) must be after
    now - --reject-older-than (default 3600 s) and before now + --reject-newer-than (600 s).
  Success: 200, empty body.

POST /push.v1.PusherService/Push (Connect unary)
  Content-Type application/proto (or application/json); other -> 415. Connect-Protocol-Version,
  when present, must be "1"; Content-Encoding gzip or identity. Body: PushRequest{series=1:
  RawProfileSeries{labels=1: LabelPair{name=1,value=2}, samples=2: RawSample{raw_profile=1,
  ID=2}}}. Each series: __name__ a valid metric name, service_name present, label names valid
  (dots allowed: Pyroscope sanitizes them), no duplicates; each raw_profile a pprof (gzip or
  plain) within the window. Errors: HTTP status + {"code":...,"message":...} (Content-Type
  application/json): validation errors (labels, window, size, empty profile) 400
  invalid_argument; a raw_profile that is no protobuf Profile (or broken gzip) 500 unknown,
  since the distributor leaves pprof.RawFromBytesWithLimit's error unwrapped.
  Success: 200, application/proto, empty PushResponse.

POST /parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw (gRPC-web)
  Content-Type application/grpc-web or application/grpc-web+proto; body: one length-prefixed
  frame (flag byte 0, 4-byte big-endian length, WriteRawRequest{tenant=1, series=2:
  RawProfileSeries{labels=1: LabelSet{labels=1: Label{name=1,value=2}}, samples=2:
  RawSample{raw_profile=1, executable_info=2}}, normalized=3}). Answer: HTTP 200, a data frame
  (empty WriteRawResponse) and a trailer frame "grpc-status:0"; errors: no data frame, trailer
  (and headers) grpc-status 3 (invalid argument) with grpc-message: "missing __name__ label",
  "invalid label name: X", "duplicate label name: X", "failed to parse profile: ...",
  "invalid profile: ..."; a broken gzip stream grpc-status 2 (unknown, as normalizer.go).
POST /api/profiles/writeraw (Parca's grpc-gateway, JSON)
  {"series":[{"labels":{"labels":[{"name":..,"value":..}]},"samples":[{"rawProfile":"BASE64"}]}]}
  (proto names accepted too); errors 400 {"code":3,"message":...,"details":[]}; success 200 {}.

Auth (all endpoints): --token T requires "Authorization: Bearer T"; --basic-auth U:P requires
  Basic; either one when both are given. Wrong or missing -> 401 {"code":"unauthenticated",...}
  with WWW-Authenticate. --tenant ID requires X-Scope-OrgID: missing -> 401 "no org id"
  (Pyroscope's multi-tenant mode), another value -> 401.
Faults: --mode ok|hang|status|close (and the control endpoint, --control-port):
  POST /control {"mode":"ok"|"hang"|"status"|"close","status":503,"retry_after":2,"count":N}
  "status" answers that status (Retry-After when given) to the next N requests (all if no count),
  "hang" reads the request and never answers (when the mode leaves "hang", the held connections
  are closed unanswered); with "store": true a held request is processed and stored first (the
  collector has it, the client never learns it: its resend shows as a second sha256), without
  it nothing is stored. Each held request is a line in DIR/held.jsonl (request_sha256, stored,
  status). "close" closes the connection unanswered. Each answer to a request that stored
  profiles is a line in DIR/answered.jsonl (the seqs it stored), written once the answer is
  sent: a stored seq never answered was cut off (a hold, or the collector killed between its
  store and its answer), which is what a client's resend of it is for.
  GET /state -> {"mode":..., "requests":N, "accepted":N, "hung":N (held now), "statuses":{...}}.
  Down: kill the process; a restart with the same --port and --store goes on appending.
Store (--store DIR): every accepted profile is DIR/profiles/NNNNNN.pb.gz (or .pb when it was
  sent uncompressed): the profile bytes exactly as sent (the /ingest body, or the raw_profile of
  a push/WriteRaw sample), and one JSON line in DIR/index.jsonl: seq, protocol (pyroscope,
  pyroscope-push, parca-grpc-web, parca-json), path, name (as sent), app (the service name),
  labels (series labels, without __name__/service_name for /ingest), metric (__name__ of a push
  or WriteRaw series), from_ns, until_ns, sample_rate, spy_name, format, time_nanos,
  duration_nanos, sample_types, samples, sample_label_keys, sha256 (of the profile bytes as
  sent), request_sha256, bytes, file, content_type, content_encoding, user_agent, auth (scheme),
  tenant, connection (a per-connection id: keep-alive reuse shows as one id), arrival (unix s).
  A resend byte for byte shows as a second line with the same sha256.
"""
import argparse
import base64
import binascii
import calendar
import gzip
import hashlib
import json
import os
import re
import signal
import ssl
import sys
import threading
import time
import urllib.parse
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# ---------------------------------------------------------------------------------------------
# protobuf wire format


class ProtoError(ValueError):
    """Not a protobuf message of the expected schema (or a broken gzip stream)."""


class GzipError(ProtoError):
    pass


class PprofInvalid(ProtoError):
    """A well-formed Profile that the server's validation refuses."""


def pb_varint(buf, i):
    """Decodes a varint at buf[i]; returns (value, next index)."""
    v = 0
    shift = 0
    while True:
        if i >= len(buf):
            raise ProtoError("unexpected EOF")
        b = buf[i]
        i += 1
        if shift == 63 and b > 1:
            raise ProtoError("integer overflow")
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, i
        shift += 7
        if shift > 63:
            raise ProtoError("integer overflow")


def pb_fields(buf):
    """Yields (field number, wire type, value): int for varint/fixed, bytes for length-delimited."""
    i = 0
    n = len(buf)
    while i < n:
        key, i = pb_varint(buf, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ProtoError("illegal tag 0")
        if wt == 0:
            v, i = pb_varint(buf, i)
        elif wt == 1:
            if i + 8 > n:
                raise ProtoError("unexpected EOF")
            v = int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wt == 2:
            ln, i = pb_varint(buf, i)
            if i + ln > n:
                raise ProtoError("unexpected EOF")
            v = bytes(buf[i:i + ln])
            i += ln
        elif wt == 5:
            if i + 4 > n:
                raise ProtoError("unexpected EOF")
            v = int.from_bytes(buf[i:i + 4], "little")
            i += 4
        else:
            raise ProtoError(f"illegal wireType {wt}")
        yield num, wt, v


def pb_expect(num, wt, want, msg):
    if wt != want:
        raise ProtoError(f"{msg}: field {num}: wrong wire type {wt}")


def pb_packed_or_one(wt, v):
    """A repeated integer field: packed (bytes of varints) or one varint."""
    if wt == 0:
        return [v]
    if wt == 2:
        out, i = [], 0
        while i < len(v):
            x, i = pb_varint(v, i)
            out.append(x)
        return out
    raise ProtoError(f"wrong wire type {wt} for a repeated integer")


def pb_enc_varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_enc_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return pb_enc_varint(num << 3 | 2) + pb_enc_varint(len(data)) + data


def pb_enc_int(num, v):
    return pb_enc_varint(num << 3) + pb_enc_varint(v)


def pb_string(v, what):
    try:
        return v.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtoError(f"{what}: invalid UTF-8") from None


def pb_pair(buf, what):
    """Fields 1 and 2 of a message of two length-delimited fields (a label's name and value, a
    raw sample and its ID), b"" for one that is absent; other fields are skipped."""
    out = {1: b"", 2: b""}
    for num, wt, v in pb_fields(buf):
        if num in out:
            pb_expect(num, wt, 2, what)
            out[num] = v
    return out[1], out[2]


def pb_label(buf, what):
    """A label message (name = 1, value = 2) as a pair of strings."""
    name, value = pb_pair(buf, what)
    return pb_string(name, f"{what}.name"), pb_string(value, f"{what}.value")


# ---------------------------------------------------------------------------------------------
# pprof (profile.proto): decoded as far as validation and the index need


def pprof_decode(data, max_bytes):
    """Decompresses (gzip magic) and decodes a Profile; returns a dict of facts or raises."""
    if len(data) >= 2 and data[0] == 0x1F and data[1] == 0x8B:
        try:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            raw = d.decompress(data, max_bytes + 1 if max_bytes else 0)
            if max_bytes and len(raw) > max_bytes:
                raise PprofInvalid("uncompressed profile payload size exceeds limit of "
                                   f"{max_bytes} bytes")
            if not d.eof:
                raise GzipError("gzip: unexpected EOF")
        except zlib.error as e:
            raise GzipError(f"gzip: {e}") from None
    else:
        raw = data
        if max_bytes and len(raw) > max_bytes:
            raise PprofInvalid("uncompressed profile payload size exceeds limit of "
                               f"{max_bytes} bytes")
    strings, sample_types, samples, loc_ids, fn_ids = [], [], [], [], []
    time_nanos = duration_nanos = period = 0
    for num, wt, v in pb_fields(raw):
        if num == 1:  # sample_type: ValueType{type=1, unit=2}
            pb_expect(num, wt, 2, "Profile.sample_type")
            vt = {1: 0, 2: 0}
            for n2, w2, v2 in pb_fields(v):
                if n2 in vt:
                    pb_expect(n2, w2, 0, "ValueType")
                    vt[n2] = v2
            sample_types.append((vt[1], vt[2]))
        elif num == 2:  # sample: location_id=1, value=2, label=3
            pb_expect(num, wt, 2, "Profile.sample")
            nvals, labels = 0, []
            for n2, w2, v2 in pb_fields(v):
                if n2 == 1:
                    pb_packed_or_one(w2, v2)
                elif n2 == 2:
                    nvals += len(pb_packed_or_one(w2, v2))
                elif n2 == 3:
                    pb_expect(n2, w2, 2, "Sample.label")
                    for n3, w3, v3 in pb_fields(v2):
                        if n3 == 1:
                            pb_expect(n3, w3, 0, "Label.key")
                            labels.append(v3)
            samples.append((nvals, labels))
        elif num in (4, 5):  # location, function: id=1
            pb_expect(num, wt, 2, "Profile.location" if num == 4 else "Profile.function")
            ident = 0
            for n2, w2, v2 in pb_fields(v):
                if n2 == 1:
                    pb_expect(n2, w2, 0, "id")
                    ident = v2
            (loc_ids if num == 4 else fn_ids).append(ident)
        elif num == 3:
            pb_expect(num, wt, 2, "Profile.mapping")
            for _ in pb_fields(v):
                pass
        elif num == 6:
            pb_expect(num, wt, 2, "Profile.string_table")
            strings.append(pb_string(v, "string_table"))
        elif num == 9:
            pb_expect(num, wt, 0, "Profile.time_nanos")
            time_nanos = v - (1 << 64) if v >= 1 << 63 else v
        elif num == 10:
            pb_expect(num, wt, 0, "Profile.duration_nanos")
            duration_nanos = v
        elif num == 12:
            pb_expect(num, wt, 0, "Profile.period")
            period = v
    # What Pyroscope's ValidateProfile and pprof's own checks refuse.
    if strings and strings[0] != "":
        raise ProtoError("string_table[0] must be ''")
    if not sample_types:
        raise PprofInvalid("empty profile")

    def s(i):
        if i >= len(strings):
            raise ProtoError(f"string index {i} out of range")
        return strings[i]

    if any(i == 0 for i in loc_ids):
        raise PprofInvalid("location id is 0")
    if any(i == 0 for i in fn_ids):
        raise PprofInvalid("function id is 0")
    keys = set()
    for nvals, labels in samples:
        if nvals != len(sample_types):
            raise PprofInvalid("sample value length mismatch")
        keys.update(s(k) for k in labels)
    return {
        "time_nanos": time_nanos,
        "duration_nanos": duration_nanos,
        "period": period,
        "sample_types": [f"{s(t)}:{s(u)}" for t, u in sample_types],
        "samples": len(samples),
        "sample_label_keys": sorted(keys),
        "uncompressed_bytes": len(raw),
    }


# ---------------------------------------------------------------------------------------------
# Pyroscope's name parser (labelset.Parse) and validation


class NameError_(ValueError):
    pass


def go_quote_rune(r):
    """Go's %q of a rune."""
    special = {"'": "\\'", "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    if r in special:
        return f"'{special[r]}'"
    c = ord(r)
    if r.isprintable():
        return f"'{r}'"
    if c < 0x80:
        return f"'\\x{c:02x}'"
    if c < 0x10000:
        return f"'\\u{c:04x}'"
    return f"'\\U{c:08x}'"


def label_rune_ok(r):
    return ("a" <= r <= "z") or ("A" <= r <= "Z") or ("0" <= r <= "9") or r in "_."


def validate_service_name(n):
    if not n:
        raise NameError_("service name is required")
    for r in n:
        if not (r in "-./" or label_rune_ok(r)):
            raise NameError_(f"invalid service name: {n}: character is not allowed: {go_quote_rune(r)}")


def validate_label_name(k):
    if not k:
        raise NameError_("label name is required")
    for r in k:
        if not label_rune_ok(r):
            raise NameError_(f"invalid label name: {k}: character is not allowed: {go_quote_rune(r)}")
    if k == "__name__":
        raise NameError_(f"label name is reserved: {k}")


def parse_name(name):
    """Pyroscope's labelset.Parse: returns {"__name__": app, key: value...} or raises."""
    labels = {}
    state = "name"
    key, value = [], []
    for r in name + "{":
        if state == "name":
            if r == "{":
                app = "".join(value).strip(" \t\n\r\v\f")
                validate_service_name(app)
                labels["__name__"] = app
                state = "key"
            else:
                value.append(r)
        elif state == "key":
            if r == "}":
                state = "done"
            elif r == "=":
                state = "value"
                value = []
            else:
                key.append(r)
        elif state == "value":
            if r in ",}":
                state = "key"
                k = "".join(key).strip(" \t\n\r\v\f")
                if k != "__name__":
                    validate_label_name(k)
                labels[k] = "".join(value).strip(" \t\n\r\v\f")
                key = []
            else:
                value.append(r)
    return labels


DIGITS = re.compile(r"^\d+$")


def parse_attime(s, now):
    """attime.Parse: returns unix nanoseconds."""
    s = s.strip().replace("_", "").replace(",", "").replace(" ", "")
    if DIGITS.match(s):
        if len(s) == 8:
            try:
                t = time.strptime(s, "%Y%m%d")
                if t.tm_year > 1900:
                    return calendar.timegm(t) * 10**9
            except ValueError:
                pass
        v = int(s)
        if v >= 1 << 63:  # strconv.Atoi fails: v is 0
            v = 0
        return {13: v * 10**6, 16: v * 10**3, 19: v}.get(len(s), v * 10**9)
    i = s.find("+")
    if i == -1:
        i = s.find("-")
    offset = s[i:] if i != -1 else ""
    return now + _attime_offset(offset) * 10**9


def _attime_offset(offset):
    if not offset:
        return 0
    sign = 1
    if offset[0] == "-":
        sign, offset = -1, offset[1:]
    elif offset[0] == "+":
        offset = offset[1:]
    d = 0
    while offset:
        m = re.match(r"^(\d*)(\D*)", offset)
        num = int(m.group(1)) if m.group(1) else 0
        unit = m.group(2)
        offset = offset[m.end():]
        if not m.group(0):
            break
        d += num * sign * _unit(unit)
    return d


def _unit(u):
    if u.startswith("s"):
        return 1
    if u.startswith("mon") or u.startswith("M"):
        return 3600 * 24 * 30
    if u.startswith("min") or u.startswith("m"):
        return 60
    for p, m in (("h", 3600), ("d", 86400), ("w", 604800), ("y", 31536000)):
        if u.startswith(p):
            return m
    return 0


METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LEGACY_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def label_pairs_string(pairs):
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(pairs)) + "}"


def fmt_millis(ns):
    ms = ns // 10**6
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


# ---------------------------------------------------------------------------------------------
# errors


class HTTPError_(Exception):
    def __init__(self, status, message, code=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


HTTP_TO_CODE = {400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied",
                404: "unimplemented", 412: "failed_precondition", 413: "invalid_argument",
                429: "resource_exhausted", 431: "resource_exhausted", 499: "canceled",
                502: "unavailable", 503: "unavailable", 504: "deadline_exceeded"}
CODE_TO_HTTP = {"canceled": 499, "unknown": 500, "invalid_argument": 400,
                "deadline_exceeded": 504, "not_found": 404, "already_exists": 409,
                "permission_denied": 403, "resource_exhausted": 429,
                "failed_precondition": 412, "aborted": 409, "out_of_range": 400,
                "unimplemented": 404, "internal": 500, "unavailable": 503, "data_loss": 500,
                "unauthenticated": 401}
GRPC_CODES = {"invalid_argument": 3, "unauthenticated": 16, "unavailable": 14,
              "resource_exhausted": 8, "internal": 13, "unknown": 2, "permission_denied": 7,
              "unimplemented": 12, "deadline_exceeded": 4, "not_found": 5}
GRPC_TO_HTTP = {0: 200, 3: 400, 16: 401, 14: 503, 8: 429, 13: 500, 2: 500, 7: 403, 12: 501,
                4: 504, 5: 404}

# ---------------------------------------------------------------------------------------------
# state


class Store:
    def __init__(self, root):
        self.root = root
        self.dir = os.path.join(root, "profiles")
        self.index = os.path.join(root, "index.jsonl")
        os.makedirs(self.dir, exist_ok=True)
        self.lock = threading.Lock()
        self.seq = 0
        if os.path.exists(self.index):
            with open(self.index, "rb") as f:
                self.seq = sum(1 for line in f if line.strip())

    def held(self, meta):
        with self.lock:
            with open(os.path.join(self.root, "held.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps(meta, sort_keys=True) + "\n")

    def answered(self, seqs):
        with self.lock:
            with open(os.path.join(self.root, "answered.jsonl"), "a", encoding="utf-8") as f:
                f.write(json.dumps({"seqs": seqs}) + "\n")
                f.flush()

    def save(self, profile, meta):
        with self.lock:
            self.seq += 1
            ext = ".pb.gz" if profile[:2] == b"\x1f\x8b" else ".pb"
            name = f"{self.seq:06d}{ext}"
            path = os.path.join(self.dir, name)
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(profile)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, path)
            meta = dict(meta, seq=self.seq, file=os.path.join("profiles", name))
            with open(self.index, "a", encoding="utf-8") as f:
                f.write(json.dumps(meta, sort_keys=True) + "\n")
                f.flush()
                os.fsync(f.fileno())
            return meta


class State:
    def __init__(self, args):
        self.args = args
        self.cond = threading.Condition()
        self.mode = args.mode
        self.status = args.status
        self.retry_after = args.retry_after
        self.count = args.count
        self.message = None
        self.store_held = False
        self.generation = 0  # bumped when the mode leaves "hang"
        self.requests = 0
        self.accepted = 0
        self.hung = 0
        self.statuses = {}
        self.conn_seq = 0

    def snapshot(self):
        with self.cond:
            return {"mode": self.mode, "status": self.status, "retry_after": self.retry_after,
                    "count": self.count, "requests": self.requests, "accepted": self.accepted,
                    "hung": self.hung, "statuses": dict(self.statuses)}

    def set(self, ctl):
        with self.cond:
            mode = ctl.get("mode", self.mode)
            if mode not in ("ok", "hang", "status", "close"):
                raise ValueError(f"unknown mode {mode!r}")
            if self.mode == "hang" and mode != "hang":
                self.generation += 1
            self.mode = mode
            # every call says the whole fault: what it leaves out is back to its default
            self.status = int(ctl.get("status", 503))
            self.retry_after = ctl.get("retry_after")
            self.count = ctl.get("count")
            self.message = ctl.get("message")
            self.store_held = bool(ctl.get("store", False))
            self.cond.notify_all()

    def fault(self):
        """The fault to apply to the next request: None, ("hang", gen), ("status", s, ra, msg),
        ("close",)."""
        with self.cond:
            self.requests += 1
            if self.mode == "ok":
                return None
            if self.mode == "hang":
                return ("hang", self.generation, self.store_held)
            f = (self.mode, self.status, self.retry_after, self.message)
            if self.count is not None:
                self.count -= 1
                if self.count <= 0:
                    self.mode, self.count = "ok", None
            return f

    def hang(self, gen):
        with self.cond:
            self.hung += 1
            try:
                while self.generation == gen and not STOP.is_set():
                    self.cond.wait(0.5)
            finally:
                self.hung -= 1

    def answered(self, status):
        with self.cond:
            self.statuses[str(status)] = self.statuses.get(str(status), 0) + 1
            if status == 200:
                self.accepted += 1


STOP = threading.Event()

# ---------------------------------------------------------------------------------------------
# the collector's handler


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "collector-standin/1"
    state = None  # set in main
    store = None
    mute = False  # a held request: processed, never answered
    saved = ()  # the seqs this request stored (recorded as answered once the answer is sent)
    muted_status = None

    def setup(self):
        super().setup()
        with self.state.cond:
            self.state.conn_seq += 1
            self.conn_id = self.state.conn_seq

    def log_message(self, fmt, *a):  # noqa: N802 (http.server's name)
        sys.stderr.write("%s [conn %d] %s\n" % (time.strftime("%H:%M:%S"), self.conn_id, fmt % a))

    # -- body -------------------------------------------------------------------------------
    def read_body(self):
        limit = self.state.args.max_body_bytes
        te = self.headers.get("Transfer-Encoding", "").lower()
        if te == "chunked":
            out = bytearray()
            while True:
                line = self.rfile.readline(1024)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024).strip():
                        pass
                    break
                out += self.rfile.read(size)
                self.rfile.readline(8)
                if len(out) > limit:
                    self.close_connection = True
                    raise HTTPError_(413, f"request body too large: http: request body too large")
            return bytes(out)
        n = int(self.headers.get("Content-Length") or 0)
        if n > limit:
            self.close_connection = True
            raise HTTPError_(413, "request body too large: http: request body too large")
        return self.rfile.read(n) if n else b""

    # -- answers ----------------------------------------------------------------------------
    def answer(self, status, body=b"", ctype=None, headers=()):
        if self.mute:
            self.muted_status = status
            return
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if body:
            self.wfile.write(body)
        self.wfile.flush()
        self.state.answered(status)
        if self.saved:
            self.store.answered(list(self.saved))
            self.saved = ()

    def save(self, profile, meta):
        meta = self.store.save(profile, meta)
        self.saved = (*self.saved, meta["seq"])
        return meta

    def answer_json_error(self, status, message, code=None, headers=()):
        code = code or HTTP_TO_CODE.get(status, "unknown")
        body = (json.dumps({"code": code, "message": message}) + "\n").encode()
        self.answer(status, body, "application/json",
                    [("X-Content-Type-Options", "nosniff"), *headers])

    def answer_error(self, kind, e, headers=()):
        """An error in the style of the endpoint's server."""
        if kind == "grpc-web":
            code = GRPC_CODES.get(e.code or HTTP_TO_CODE.get(e.status, "unknown"), 2)
            if e.status in (401, 413) or e.code == "fault":
                # refused in front of the gRPC server (a gateway, the body limit, a fault)
                self.answer_json_error(e.status, e.message, headers=headers)
                return
            self.grpc_web_answer(code, e.message)
        elif kind == "parca-json":
            if e.status == 401 or e.code == "fault":
                self.answer_json_error(e.status, e.message, headers=headers)
                return
            code = GRPC_CODES.get(e.code or HTTP_TO_CODE.get(e.status, "unknown"), 2)
            body = json.dumps({"code": code, "message": e.message, "details": []}).encode()
            self.answer(GRPC_TO_HTTP.get(code, 500), body, "application/json", headers)
        else:
            code = e.code if e.code and e.code != "fault" else None
            self.answer_json_error(e.status, e.message, code, headers)

    def grpc_web_answer(self, code, message, payload=None):
        trailer = f"grpc-status:{code}\r\ngrpc-message:{urllib.parse.quote(message or '')}\r\n"
        body = b""
        if payload is not None:
            body += b"\x00" + len(payload).to_bytes(4, "big") + payload
        t = trailer.encode()
        body += b"\x80" + len(t).to_bytes(4, "big") + t
        headers = [("Access-Control-Expose-Headers", "grpc-status,grpc-message")]
        if payload is None:  # trailers-only: grpc-go's status is in the headers too
            headers += [("Grpc-Status", str(code)), ("Grpc-Message", urllib.parse.quote(message))]
        self.answer(200, body, "application/grpc-web+proto", headers)

    # -- dispatch ---------------------------------------------------------------------------
    def do_GET(self):  # noqa: N802
        self.read_body()
        self.answer_json_error(405 if self.route() else 404, "method not allowed" if self.route()
                               else "404 page not found")

    def route(self):
        path = urllib.parse.urlsplit(self.path).path
        ctype = self.headers.get("Content-Type", "")
        if path == "/ingest":
            return "pyroscope"
        if path == "/push.v1.PusherService/Push":
            return "pyroscope-push"
        if path.endswith("/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw") and \
                ctype.startswith("application/grpc"):
            return "grpc-web"
        if path == "/api/profiles/writeraw":
            return "parca-json"
        return None

    def do_POST(self):  # noqa: N802
        self.saved = ()
        kind = self.route()
        try:
            body = self.read_body()
        except HTTPError_ as e:
            self.answer_error(kind or "pyroscope", e)
            return
        except (ValueError, OSError):
            self.close_connection = True
            return
        if kind is None:
            self.answer(404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        fault = self.state.fault()
        if fault:
            if fault[0] == "hang":
                self.hold(kind, body, fault[1], fault[2])
                return
            if fault[0] == "close":
                self.close_connection = True
                return
            _, status, retry_after, message = fault
            headers = [("Retry-After", str(retry_after))] if retry_after is not None else []
            self.answer_error(kind, HTTPError_(status, message or f"scripted status {status}",
                                               "fault"), headers)
            return
        try:
            self.authenticate()
            if kind == "pyroscope":
                self.ingest(body)
            elif kind == "pyroscope-push":
                self.push(body)
            elif kind == "grpc-web":
                self.write_raw_grpc_web(body)
            else:
                self.write_raw_json(body)
        except HTTPError_ as e:
            self.log_message("refused %s: %d %s", kind, e.status, e.message)
            self.answer_error(kind, e,
                              [("WWW-Authenticate", 'Bearer realm="collector"')]
                              if e.status == 401 else [])

    def hold(self, kind, body, gen, store):
        """Hang mode: the request is read (and with "store", stored as if it were answered),
        then held unanswered until the mode changes; then the connection is closed."""
        if store:
            self.mute = True
            try:
                self.authenticate()
                getattr(self, {"pyroscope": "ingest", "pyroscope-push": "push",
                               "grpc-web": "write_raw_grpc_web",
                               "parca-json": "write_raw_json"}[kind])(body)
            except HTTPError_ as e:
                self.muted_status = e.status
        meta = self.common_meta(kind, body)
        meta.update(stored=store and self.muted_status == 200, status=self.muted_status)
        self.store.held(meta)
        self.log_message("holding a %s request (%s)", kind, "stored" if meta["stored"] else
                         "not stored")
        self.state.hang(gen)
        self.close_connection = True  # never answered
        self.log_message("held request closed unanswered")

    # -- auth -------------------------------------------------------------------------------
    def authenticate(self):
        a = self.state.args
        auth = self.headers.get("Authorization", "")
        if a.token or a.basic_auth:
            ok = False
            if a.token and auth == f"Bearer {a.token}":
                ok = True
            if a.basic_auth and auth == "Basic " + base64.b64encode(a.basic_auth.encode()).decode():
                ok = True
            if not ok:
                raise HTTPError_(401, "invalid credentials" if auth else "missing credentials",
                                 "unauthenticated")
        if a.tenant:
            org = self.headers.get("X-Scope-OrgID")
            if not org:
                raise HTTPError_(401, "no org id", "unauthenticated")
            if org != a.tenant:
                raise HTTPError_(401, f"tenant {org!r} is not allowed", "unauthenticated")

    def common_meta(self, protocol, body):
        auth = self.headers.get("Authorization", "")
        return {
            "protocol": protocol,
            "path": self.path,
            "content_type": self.headers.get("Content-Type"),
            "content_encoding": self.headers.get("Content-Encoding"),
            "user_agent": self.headers.get("User-Agent"),
            "auth": auth.split(" ", 1)[0] if auth else None,
            "tenant": self.headers.get("X-Scope-OrgID"),
            "extra_headers": {k: v for k, v in self.headers.items() if k.lower().startswith("x-")},
            "connection": self.conn_id,
            "request_sha256": hashlib.sha256(body).hexdigest(),
            "arrival": time.time(),
        }

    def check_window(self, t_ns, pairs, now_ns):
        a = self.state.args
        lo = now_ns - int(a.reject_older_than * 1e9) if a.reject_older_than else None
        hi = now_ns + int(a.reject_newer_than * 1e9) if a.reject_newer_than else None
        if (lo is None or t_ns > lo) and (hi is None or t_ns < hi):
            return
        if hi is None:
            detail = f"the ingestion window starts at {fmt_millis(lo)}"
        elif lo is None:
            detail = f"the ingestion window ends at {fmt_millis(hi)}"
        else:
            detail = f"the ingestion window starts at {fmt_millis(lo)} and ends at {fmt_millis(hi)}"
        raise HTTPError_(400, f"profile with labels '{label_pairs_string(pairs)}' is outside of "
                         f"ingestion window (profile timestamp: {fmt_millis(t_ns)}, {detail})",
                         "invalid_argument")

    # -- Pyroscope /ingest ------------------------------------------------------------------
    def ingest(self, body):
        now = time.time_ns()
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query, keep_blank_values=True)

        def get(k):
            return q.get(k, [""])[0]

        try:
            labels = parse_name(get("name"))
        except NameError_ as e:
            raise HTTPError_(400, f"name: {e}") from None
        from_ns = parse_attime(get("from"), now) if get("from") else now
        until_ns = parse_attime(get("until"), now) if get("until") else now
        sr = get("sampleRate")
        sample_rate = 100
        if sr and re.fullmatch(r"[+-]?\d+", sr) and int(sr) >= 0:
            sample_rate = int(sr)
        elif sr:
            self.log_message("invalid sample rate: %r", sr)
        spy = get("spyName") or "unknown"
        fmt = get("format")
        ctype = self.headers.get("Content-Type", "")
        if fmt == "pprof":
            profile = body
        elif fmt == "" and "multipart/form-data" in ctype:
            profile = self.multipart_profile(ctype, body)
        else:
            raise HTTPError_(422, f"format {fmt or 'groups'!r} is not decoded by this stand-in")
        if not profile:
            self.log_message("empty profile of %s: ignored", labels["__name__"])
            self.answer(200)
            return
        try:
            facts = pprof_decode(profile, self.state.args.max_profile_bytes)
        except ProtoError as e:
            raise HTTPError_(422, f"pushing IngestInput-pprof failed parsing IngestInput-pprof "
                             f"failed invalid_argument: {e}", "unknown") from None
        t = facts["time_nanos"]
        if t == 0 or time.gmtime(t // 10**9).tm_year == 1970:
            t = from_ns
        app = labels.pop("__name__")
        series = [("__name__", "process_cpu"), ("__delta__", "false"),
                  ("pyroscope_spy", spy), ("service_name", labels.get("service_name", app))]
        series += [(k, v) for k, v in labels.items() if k != "service_name"]
        try:
            self.check_window(t, series, now)
        except HTTPError_ as e:
            raise HTTPError_(422, f"pushing IngestInput-pprof failed invalid_argument: "
                             f"{e.message}", "unknown") from None
        meta = self.common_meta("pyroscope", body)
        meta.update(name=get("name"), app=app, labels=labels, from_ns=from_ns,
                    until_ns=until_ns, sample_rate=sample_rate, spy_name=spy, format=fmt,
                    sha256=hashlib.sha256(profile).hexdigest(), bytes=len(profile), **facts)
        meta = self.save(profile, meta)
        self.log_message("stored %s %s %s", meta["file"], app, meta["sha256"][:12])
        self.answer(200)

    def multipart_profile(self, ctype, body):
        m = re.search(r'boundary="?([^";]+)"?', ctype)
        if not m:
            raise HTTPError_(422, "parsing IngestInput-pprof failed failed to parse pprof "
                             "/ingest multipart form no multipart boundary param in "
                             "Content-Type", "unknown")
        sep = b"--" + m.group(1).encode()
        fields = {}
        for part in body.split(sep)[1:]:
            if part.startswith(b"--"):
                break
            head, _, data = part.partition(b"\r\n\r\n")
            nm = re.search(rb'name="([^"]*)"', head)
            if nm:
                fields[nm.group(1).decode()] = data[:-2] if data.endswith(b"\r\n") else data
        if fields.get("prev_profile"):
            raise HTTPError_(422, "parsing IngestInput-pprof failed failed to parse pprof /ingest "
                             "multipart form unsupported client version. Please update "
                             "github.com/grafana/pyroscope-go to the latest version", "unknown")
        return fields.get("profile", b"")

    # -- Pyroscope push (Connect) -----------------------------------------------------------
    def push(self, body):
        now = time.time_ns()
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip()
        if ctype not in ("application/proto", "application/json"):
            self.answer(415, b"", None, [("Accept-Post", "application/json, application/proto")])
            return
        v = self.headers.get("Connect-Protocol-Version")
        if v is not None and v != "1":
            raise HTTPError_(400, f'connect-protocol-version must be "1": got "{v}"',
                             "invalid_argument")
        enc = self.headers.get("Content-Encoding", "identity")
        if enc == "gzip":
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError, zlib.error) as e:
                raise HTTPError_(400, f"decompress gzip: {e}", "invalid_argument") from None
        elif enc != "identity":
            raise HTTPError_(404, f'unknown compression "{enc}": supported encodings are gzip',
                             "unimplemented")
        try:
            series = self.decode_push(body, ctype)
        except (ProtoError, ValueError, KeyError, TypeError, binascii.Error) as e:
            raise HTTPError_(400, f"unmarshal message: {e}", "invalid_argument") from None
        if not series:
            raise HTTPError_(400, "no profiles received", "invalid_argument")
        saved = []
        for pairs, samples in series:
            d = dict(pairs)
            problem = None
            if not pairs:
                problem = "error at least one label pair is required per profile"
            elif not METRIC_NAME.match(d.get("__name__", "")):
                problem = "invalid metric name"
            elif not d.get("service_name"):
                problem = "service name is not provided"
            else:
                names = [k for k, _ in pairs]
                for k in names:
                    if not LEGACY_LABEL.match(k.replace(".", "_")):
                        problem = f"invalid label name '{k}'"
                        break
                dup = [k for k in set(names) if names.count(k) > 1]
                if not problem and dup:
                    raise HTTPError_(400, f"profile with labels '{label_pairs_string(pairs)}' has "
                                     f"duplicate label name: '{dup[0]}'", "invalid_argument")
            if problem:
                raise HTTPError_(400, f"invalid labels '{label_pairs_string(pairs)}' with error: "
                                 f"{problem}", "invalid_argument")
            for raw, _ in samples:
                try:
                    facts = pprof_decode(raw, self.state.args.max_profile_bytes)
                except PprofInvalid as e:
                    raise HTTPError_(400, str(e), "invalid_argument") from None
                except ProtoError as e:
                    # pprof.RawFromBytesWithLimit's error is no validation error: the
                    # distributor leaves it unwrapped, Connect answers it as unknown (500)
                    raise HTTPError_(500, f"failed to parse profile: {e}", "unknown") from None
                if facts["time_nanos"] > 0:
                    self.check_window(facts["time_nanos"], pairs, now)
                saved.append((pairs, raw, facts))
        for pairs, raw, facts in saved:
            d = dict(pairs)
            meta = self.common_meta("pyroscope-push", body)
            meta.update(app=d["service_name"], metric=d["__name__"],
                        labels={k: v for k, v in pairs if k != "__name__"},
                        sha256=hashlib.sha256(raw).hexdigest(), bytes=len(raw),
                        from_ns=facts["time_nanos"],
                        until_ns=facts["time_nanos"] + facts["duration_nanos"], **facts)
            meta = self.save(raw, meta)
            self.log_message("stored %s %s %s", meta["file"], meta["app"], meta["sha256"][:12])
        self.answer(200, b"", ctype)

    def decode_push(self, body, ctype):
        series = []
        if ctype == "application/json":
            doc = json.loads(body or b"{}")
            for s in doc.get("series") or []:
                pairs = [(l.get("name", ""), l.get("value", "")) for l in s.get("labels") or []]
                samples = [(base64.b64decode(x.get("rawProfile") or x.get("raw_profile") or ""),
                            x.get("ID", "")) for x in s.get("samples") or []]
                series.append((pairs, samples))
            return series
        for num, wt, v in pb_fields(body):
            if num != 1:
                continue
            pb_expect(num, wt, 2, "PushRequest.series")
            pairs, samples = [], []
            for n2, w2, v2 in pb_fields(v):
                if n2 == 1:
                    pb_expect(n2, w2, 2, "RawProfileSeries.labels")
                    pairs.append(pb_label(v2, "LabelPair"))
                elif n2 == 2:
                    pb_expect(n2, w2, 2, "RawProfileSeries.samples")
                    raw, sid = pb_pair(v2, "RawSample")
                    samples.append((raw, pb_string(sid, "RawSample.ID")))
            series.append((pairs, samples))
        return series

    # -- Parca WriteRaw ---------------------------------------------------------------------
    def write_raw_grpc_web(self, body):
        ctype = self.headers.get("Content-Type", "")
        if ctype.startswith("application/grpc-web-text"):
            body = base64.b64decode(body)
        if not ctype.startswith("application/grpc-web"):
            raise HTTPError_(415, f"invalid gRPC request content-type {ctype!r}", "fault")
        if len(body) < 5:
            raise HTTPError_(400, "grpc: received message shorter than the frame header",
                             "internal")
        flag, n = body[0], int.from_bytes(body[1:5], "big")
        if len(body) != 5 + n:
            raise HTTPError_(400, f"grpc: frame length {n} does not match the body ({len(body)})",
                             "internal")
        msg = body[5:]
        if flag & 1:
            enc = self.headers.get("Grpc-Encoding", "")
            if enc != "gzip":
                raise HTTPError_(400, f"grpc: compressed flag set with grpc-encoding {enc!r}",
                                 "internal")
            msg = gzip.decompress(msg)
        self.write_raw(body, msg, "parca-grpc-web")
        self.grpc_web_answer(0, "", b"")

    def write_raw_json(self, body):
        try:
            doc = json.loads(body or b"{}")
            series = []
            for s in doc.get("series") or []:
                ls = (s.get("labels") or {}).get("labels") or []
                pairs = [(l.get("name", ""), l.get("value", "")) for l in ls]
                samples = [base64.b64decode(x.get("rawProfile") or x.get("raw_profile") or "")
                           for x in s.get("samples") or []]
                series.append((pairs, samples))
        except (ValueError, AttributeError, TypeError, binascii.Error) as e:
            raise HTTPError_(400, f"proto: syntax error: {e}", "invalid_argument") from None
        self.write_raw_series(body, series, "parca-json")
        self.answer(200, b"{}", "application/json")

    def write_raw(self, request, msg, protocol):
        try:
            series = []
            for num, wt, v in pb_fields(msg):
                if num != 2:
                    continue
                pb_expect(num, wt, 2, "WriteRawRequest.series")
                pairs, samples = [], []
                for n2, w2, v2 in pb_fields(v):
                    if n2 == 1:
                        pb_expect(n2, w2, 2, "RawProfileSeries.labels")
                        for n3, w3, v3 in pb_fields(v2):
                            if n3 != 1:
                                continue
                            pb_expect(n3, w3, 2, "LabelSet.labels")
                            pairs.append(pb_label(v3, "Label"))
                    elif n2 == 2:
                        pb_expect(n2, w2, 2, "RawProfileSeries.samples")
                        raw = b""
                        for n3, w3, v3 in pb_fields(v2):
                            if n3 == 1:
                                pb_expect(n3, w3, 2, "RawSample.raw_profile")
                                raw = v3
                        samples.append(raw)
                series.append((pairs, samples))
        except ProtoError as e:
            raise HTTPError_(500, f"grpc: error unmarshalling request: {e}", "internal") from None
        self.write_raw_series(request, series, protocol)

    def write_raw_series(self, request, series, protocol):
        saved = []
        for pairs, samples in series:
            name, seen = "", set()
            for k, v in pairs:
                if k == "__name__":
                    name = v
                    continue
                if not LEGACY_LABEL.match(k):
                    raise HTTPError_(400, f"invalid label name: {k}", "invalid_argument")
                if k in seen:
                    raise HTTPError_(400, f"duplicate label name: {k}", "invalid_argument")
                seen.add(k)
            if not name:
                raise HTTPError_(400, "missing __name__ label", "invalid_argument")
            for raw in samples:
                try:
                    facts = pprof_decode(raw, self.state.args.max_profile_bytes)
                except GzipError as e:
                    raise HTTPError_(500, f"decompressing profile: {e}", "unknown") from None
                except PprofInvalid as e:
                    raise HTTPError_(400, f"invalid profile: {e}", "invalid_argument") from None
                except ProtoError as e:
                    raise HTTPError_(400, f"failed to parse profile: {e}",
                                     "invalid_argument") from None
                saved.append((pairs, raw, facts))
        for pairs, raw, facts in saved:
            d = dict(pairs)
            meta = self.common_meta(protocol, request)
            meta.update(app=d.get("service_name") or d.get("job") or d["__name__"],
                        metric=d["__name__"],
                        labels={k: v for k, v in pairs if k != "__name__"},
                        sha256=hashlib.sha256(raw).hexdigest(), bytes=len(raw),
                        from_ns=facts["time_nanos"],
                        until_ns=facts["time_nanos"] + facts["duration_nanos"], **facts)
            meta = self.save(raw, meta)
            self.log_message("stored %s %s %s", meta["file"], meta["app"], meta["sha256"][:12])


# ---------------------------------------------------------------------------------------------
# the control endpoint


class ControlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None

    def log_message(self, fmt, *a):  # noqa: N802
        pass

    def reply(self, status, doc):
        body = (json.dumps(doc) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        self.reply(200, self.state.snapshot())

    def do_POST(self):  # noqa: N802
        n = int(self.headers.get("Content-Length") or 0)
        try:
            self.state.set(json.loads(self.rfile.read(n) or b"{}"))
        except (ValueError, TypeError) as e:
            self.reply(400, {"error": str(e)})
            return
        sys.stderr.write(f"{time.strftime('%H:%M:%S')} control: {self.state.snapshot()}\n")
        self.reply(200, self.state.snapshot())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64
    tls = None

    def finish_request(self, request, client_address):
        if self.tls is not None:
            # The handshake runs on the request's thread: a slow client cannot stall accept().
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as e:
                sys.stderr.write(f"{time.strftime('%H:%M:%S')} TLS handshake failed: {e}\n")
                return
        super().finish_request(request, client_address)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: any free port")
    p.add_argument("--control-port", type=int, default=None, help="0: any free port")
    p.add_argument("--port-file", help="write {\"port\":..,\"control_port\":..} here when ready")
    p.add_argument("--store", required=True)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--token")
    p.add_argument("--basic-auth", help="USER:PASSWORD")
    p.add_argument("--tenant", help="require this X-Scope-OrgID")
    p.add_argument("--reject-older-than", type=float, default=3600.0, help="seconds; 0: off")
    p.add_argument("--reject-newer-than", type=float, default=600.0, help="seconds; 0: off")
    p.add_argument("--max-body-bytes", type=int, default=256 << 20)
    p.add_argument("--max-profile-bytes", type=int, default=4 << 20, help="decompressed")
    p.add_argument("--mode", default="ok", choices=["ok", "hang", "status", "close"])
    p.add_argument("--status", type=int, default=503)
    p.add_argument("--retry-after", type=int, default=None)
    p.add_argument("--count", type=int, default=None)
    args = p.parse_args()

    state = State(args)
    Handler.state = state
    Handler.store = Store(args.store)
    ControlHandler.state = state
    srv = Server((args.bind, args.port), Handler)
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        srv.tls = ctx
    threads = [threading.Thread(target=srv.serve_forever, daemon=True)]
    ports = {"port": srv.server_address[1]}
    ctl = None
    if args.control_port is not None:
        ctl = Server((args.bind, args.control_port), ControlHandler)
        ports["control_port"] = ctl.server_address[1]
        threads.append(threading.Thread(target=ctl.serve_forever, daemon=True))
    for t in threads:
        t.start()
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(ports, f)
        os.rename(tmp, args.port_file)
    sys.stderr.write(f"collector listening: {json.dumps(ports)} tls={bool(args.tls_cert)} "
                     f"store={args.store}\n")
    sys.stderr.flush()

    def stop(*_):
        STOP.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not STOP.wait(0.5):
        pass
    srv.shutdown()
    if ctl:
        ctl.shutdown()


if __name__ == "__main__":
    main()
