/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * threadctx.h - the OpenTelemetry thread context (OTEP 4947, followed at
 * open-telemetry/opentelemetry-specification commit 009fafa5e9f252f098697d929cc7faa84dcc5ff7):
 * the record a sampled thread's otel_thread_ctx_v1 pointed to (trace-id[16], span-id[8], valid,
 * trace-flags, attrs-data-size u16, then (key index u8, length u8, value) entries), as the BPF
 * side copied it (RP_REC_TCTX), turned into a sample's labels: `trace_id` and `span_id` in
 * lowercase hex as W3C writes them, and each attribute under its name from the process
 * context's key map (procctx.h), written as collectors take label names (`http.route` is
 * `http_route`).
 *
 * Every byte is the app's: an entry past the record's end, a key index outside the map, a name
 * that is one of rubyprofd's own labels, a value that is not clean UTF-8 are left out and
 * counted (docs/trace-context.md, "Bad input").
 */
#ifndef RP_THREADCTX_H
#define RP_THREADCTX_H

#include <stddef.h>
#include <stdint.h>

#include "proc/procctx.h"

/* Attributes kept per sample (the rest counted as `many`). */
#define THREADCTX_ATTRS_MAX  16
/* Bytes of a sample's packed labels at most: trace_id, span_id and THREADCTX_ATTRS_MAX
 * attributes of a 640-byte record with names of at most PROCCTX_VALUE_MAX bytes. */
#define THREADCTX_LABELS_MAX 4096

enum threadctx_bad {
	THREADCTX_BAD_SIZE, /* attrs-data-size past the OTEP's 640-byte record (attributes dropped) */
	THREADCTX_BAD_READ,  /* the attributes could not be read (attributes dropped) */
	THREADCTX_BAD_ENTRY, /* an entry runs past attrs-data (parsing stopped there) */
	THREADCTX_BAD_KEY,   /* a key index outside the key map, or a name not usable */
	THREADCTX_BAD_VALUE, /* a value that is not UTF-8 without control characters */
	THREADCTX_BAD_MANY,  /* past THREADCTX_ATTRS_MAX attributes */
	THREADCTX_BAD_MAX,
};

struct threadctx_stats {
	uint64_t records; /* records decoded (one per sample that carried one) */
	uint64_t bad[THREADCTX_BAD_MAX];
};

const char *threadctx_bad_name(enum threadctx_bad b);

/*
 * The labels of record rec[0, len) (RP_TCTX_HDR bytes and its attributes; flags RP_TCTX_F_*),
 * attribute names from keys (NULL: no key map, attributes left out): packed as name NUL value
 * NUL ... into out (THREADCTX_LABELS_MAX bytes). Returns the bytes used (0: no label).
 */
size_t threadctx_labels(const uint8_t *rec, size_t len, uint32_t flags,
			const struct procctx_attrs *keys, char *out, struct threadctx_stats *st);

/* Whether name is a label rubyprofd writes itself (an attribute never takes its name). */
int threadctx_reserved(const char *name);

#endif
