// SPDX-License-Identifier: GPL-2.0-only
/*
 * A sample's OpenTelemetry thread-context record (daemon/proc/threadctx.c) turned into labels:
 * records laid out here byte by byte from OTEP 4947's table (not by any writer of the tree), a key
 * map built by hand, and every kind of bad input the reader must leave out and count.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "proc/threadctx.h"
#include "rubyprof.h"

/* trace-id 0x01..0x10, span-id 0xa1..0xa8, valid, flags 1, then the attributes given */
static size_t record(uint8_t *r, uint8_t valid, const uint8_t *attrs, size_t n)
{
	size_t i;

	memset(r, 0, RP_TCTX_MAX);
	for (i = 0; i < 16; i++)
		r[i] = (uint8_t)(i + 1);
	for (i = 0; i < 8; i++)
		r[16 + i] = (uint8_t)(0xa1 + i);
	r[24] = valid;
	r[25] = 1;
	r[26] = (uint8_t)(n & 0xff);
	r[27] = (uint8_t)(n >> 8);
	if (n)
		memcpy(r + RP_TCTX_HDR, attrs, n);
	return RP_TCTX_HDR + n;
}

/* a key map of the names given (index = position) */
static void key_map(struct procctx_attrs *a, const char *const *names, unsigned int n)
{
	static char buf[4096];
	size_t at = 0;
	unsigned int i;

	memset(a, 0, sizeof(*a));
	for (i = 0; i < n; i++) {
		a->key_off[i] = (uint32_t)at;
		strcpy(buf + at, names[i]);
		at += strlen(names[i]) + 1;
	}
	a->keys = buf;
	a->nkeys = n;
}

/* the value of label `name` in packed labels, NULL: none; *count: how many labels */
static const char *label(const char *packed, size_t len, const char *name, size_t *count)
{
	const char *c = packed, *found = NULL;
	size_t n = 0;

	while (c < packed + len) {
		const char *v = c + strlen(c) + 1;

		if (strcmp(c, name) == 0)
			found = v;
		n++;
		c = v + strlen(v) + 1;
	}
	if (count)
		*count = n;
	return found;
}

static const char *const names[] = {"http.route", "http.method", "user id", "pid", ""};

/* One decoding: the record, its labels, the counters, the key map. */
static uint8_t rec[RP_TCTX_MAX];
static char out[THREADCTX_LABELS_MAX];
static struct threadctx_stats st;
static struct procctx_attrs keys;
static size_t out_len;

/* Decodes rec[0, len) with flags, the first nkeys of names as the key map (0: none). */
static void decode(size_t len, uint32_t flags, const char *const *map, unsigned int nkeys)
{
	if (nkeys)
		key_map(&keys, map, nkeys);
	out_len = threadctx_labels(rec, len, flags, nkeys ? &keys : NULL, out, &st);
}

/* the value of label `name` in the last decoding's labels, NULL: none */
static const char *got(const char *name)
{
	return label(out, out_len, name, NULL);
}

/* how many labels the last decoding gave */
static size_t labels(void)
{
	size_t n;

	label(out, out_len, "", &n);
	return n;
}

static void reset(void)
{
	memset(&st, 0, sizeof(st));
}

TestSuite(threadctx, .init = reset);

Test(threadctx, trace_span_and_attributes_by_the_key_map)
{
	const uint8_t attrs[] = {0, 7, '/', 'o', 'r', 'd', 'e', 'r', 's',
				 1, 3, 'G', 'E', 'T', 2,   2,	'4', '2'};
	size_t i;

	decode(record(rec, 1, attrs, sizeof(attrs)), 0, names, 3);
	cr_assert_str_eq(got("trace_id"), "0102030405060708090a0b0c0d0e0f10");
	cr_assert_str_eq(got("span_id"), "a1a2a3a4a5a6a7a8");
	cr_assert_str_eq(got("http_route"), "/orders");
	cr_assert_str_eq(got("http_method"), "GET");
	cr_assert_str_eq(got("user_id"), "42");
	cr_assert_eq(labels(), 5);
	cr_assert_eq(st.records, 1);
	for (i = 0; i < THREADCTX_BAD_MAX; i++)
		cr_assert_eq(st.bad[i], 0, "bad %s", threadctx_bad_name((enum threadctx_bad)i));
}

Test(threadctx, not_valid_is_no_record)
{
	decode(record(rec, 0, NULL, 0), 0, NULL, 0);
	cr_assert_eq(out_len, 0);
	decode(record(rec, 2, NULL, 0), 0, NULL, 0);
	cr_assert_eq(out_len, 0);
	cr_assert_eq(st.records, 0);
	/* shorter than the fixed part */
	decode(RP_TCTX_HDR - 1, 0, NULL, 0);
	cr_assert_eq(out_len, 0);
}

Test(threadctx, zero_ids_are_none_active)
{
	const uint8_t attrs[] = {0, 1, '/'};

	record(rec, 1, attrs, sizeof(attrs));
	memset(rec, 0, 24);
	decode(RP_TCTX_HDR + sizeof(attrs), 0, names, 1);
	cr_assert_null(got("trace_id"));
	cr_assert_null(got("span_id"));
	cr_assert_str_eq(got("http_route"), "/");
	cr_assert_eq(labels(), 1);
}

Test(threadctx, last_occurrence_of_a_key_wins)
{
	const uint8_t attrs[] = {0, 2, '/', 'a', 0, 2, '/', 'b'};

	decode(record(rec, 1, attrs, sizeof(attrs)), 0, names, 1);
	cr_assert_str_eq(got("http_route"), "/b");
	cr_assert_eq(labels(), 3);
}

Test(threadctx, bad_attributes_are_left_out_and_counted)
{
	/* index 9 outside the map; "pid" (one of ours) and "" (a refused map entry) as names; a
	 * control character; invalid UTF-8; a NUL inside; then an entry longer than the rest */
	const uint8_t attrs[] = {9,    1, 'x', 3,    1,	   'x', 4, 1,	'x', 0, 2, 'a',
				 0x1b, 1, 2,   0xc3, 0x28, 2,	2, 'a', 0,   0, 9, 'z'};

	decode(record(rec, 1, attrs, sizeof(attrs)), 0, names, 5);
	cr_assert_eq(labels(), 2, "only trace_id and span_id: %zu labels", labels());
	cr_assert_eq(st.bad[THREADCTX_BAD_KEY], 3);
	cr_assert_eq(st.bad[THREADCTX_BAD_VALUE], 3);
	cr_assert_eq(st.bad[THREADCTX_BAD_ENTRY], 1);
	/* no key map at all: the attributes are left out, the ids kept */
	reset();
	decode(record(rec, 1, (const uint8_t *)"\0\1x", 3), 0, NULL, 0);
	cr_assert_eq(labels(), 2);
	cr_assert_eq(st.bad[THREADCTX_BAD_KEY], 1);
}

Test(threadctx, a_size_that_lies_drops_the_attributes)
{
	const uint8_t attrs[] = {0, 1, '/'};

	/* attrs-data-size says 3, 2 bytes came: not the record the BPF side copies */
	decode(record(rec, 1, attrs, sizeof(attrs)) - 1, 0, names, 1);
	cr_assert_null(got("http_route"));
	cr_assert_eq(labels(), 2);
	/* the BPF side's flags: past 640 bytes, or the attributes unreadable */
	rec[26] = 0xff;
	rec[27] = 0xff;
	decode(RP_TCTX_HDR, RP_TCTX_F_OVERSIZE, names, 1);
	cr_assert_str_eq(got("span_id"), "a1a2a3a4a5a6a7a8");
	cr_assert_eq(st.bad[THREADCTX_BAD_SIZE], 1);
	decode(RP_TCTX_HDR, RP_TCTX_F_ATTRS_FAIL, names, 1);
	cr_assert_eq(st.bad[THREADCTX_BAD_READ], 1);
}

Test(threadctx, at_most_sixteen_attributes)
{
	static const char *const many[20] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j",
					     "k", "l", "m", "n", "o", "p", "q", "r", "s", "t"};
	uint8_t attrs[60];
	size_t i;

	for (i = 0; i < 20; i++) {
		attrs[3 * i] = (uint8_t)i;
		attrs[3 * i + 1] = 1;
		attrs[3 * i + 2] = 'v';
	}
	decode(record(rec, 1, attrs, sizeof(attrs)), 0, many, 20);
	cr_assert_eq(labels(), 2 + THREADCTX_ATTRS_MAX);
	cr_assert_eq(st.bad[THREADCTX_BAD_MANY], 20 - THREADCTX_ATTRS_MAX);
}
