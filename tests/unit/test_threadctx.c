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
static const char *label(const char *out, size_t len, const char *name, size_t *count)
{
	const char *c = out, *found = NULL;
	size_t n = 0;

	while (c < out + len) {
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

Test(threadctx, trace_span_and_attributes_by_the_key_map)
{
	const uint8_t attrs[] = {0, 7, '/', 'o', 'r', 'd', 'e', 'r', 's',
				 1, 3, 'G', 'E', 'T', 2,   2,	'4', '2'};
	uint8_t r[RP_TCTX_MAX];
	char out[THREADCTX_LABELS_MAX];
	struct threadctx_stats st = {0};
	struct procctx_attrs keys;
	size_t n, count;

	key_map(&keys, names, 3);
	n = threadctx_labels(r, record(r, 1, attrs, sizeof(attrs)), 0, &keys, out, &st);
	cr_assert_str_eq(label(out, n, "trace_id", &count), "0102030405060708090a0b0c0d0e0f10");
	cr_assert_str_eq(label(out, n, "span_id", NULL), "a1a2a3a4a5a6a7a8");
	cr_assert_str_eq(label(out, n, "http_route", NULL), "/orders");
	cr_assert_str_eq(label(out, n, "http_method", NULL), "GET");
	cr_assert_str_eq(label(out, n, "user_id", NULL), "42");
	cr_assert_eq(count, 5);
	cr_assert_eq(st.records, 1);
	for (n = 0; n < THREADCTX_BAD_MAX; n++)
		cr_assert_eq(st.bad[n], 0, "bad %s", threadctx_bad_name((enum threadctx_bad)n));
}

Test(threadctx, not_valid_is_no_record)
{
	uint8_t r[RP_TCTX_MAX];
	char out[THREADCTX_LABELS_MAX];
	struct threadctx_stats st = {0};

	cr_assert_eq(threadctx_labels(r, record(r, 0, NULL, 0), 0, NULL, out, &st), 0);
	cr_assert_eq(threadctx_labels(r, record(r, 2, NULL, 0), 0, NULL, out, &st), 0);
	cr_assert_eq(st.records, 0);
	/* shorter than the fixed part */
	cr_assert_eq(threadctx_labels(r, RP_TCTX_HDR - 1, 0, NULL, out, &st), 0);
}

Test(threadctx, zero_ids_are_none_active)
{
	const uint8_t attrs[] = {0, 1, '/'};
	uint8_t r[RP_TCTX_MAX];
	char out[THREADCTX_LABELS_MAX];
	struct threadctx_stats st = {0};
	struct procctx_attrs keys;
	size_t n, count;

	key_map(&keys, names, 1);
	record(r, 1, attrs, sizeof(attrs));
	memset(r, 0, 24);
	n = threadctx_labels(r, RP_TCTX_HDR + sizeof(attrs), 0, &keys, out, &st);
	cr_assert_null(label(out, n, "trace_id", &count));
	cr_assert_null(label(out, n, "span_id", NULL));
	cr_assert_str_eq(label(out, n, "http_route", NULL), "/");
	cr_assert_eq(count, 1);
}

Test(threadctx, last_occurrence_of_a_key_wins)
{
	const uint8_t attrs[] = {0, 2, '/', 'a', 0, 2, '/', 'b'};
	uint8_t r[RP_TCTX_MAX];
	char out[THREADCTX_LABELS_MAX];
	struct threadctx_stats st = {0};
	struct procctx_attrs keys;
	size_t n, count;

	key_map(&keys, names, 1);
	n = threadctx_labels(r, record(r, 1, attrs, sizeof(attrs)), 0, &keys, out, &st);
	cr_assert_str_eq(label(out, n, "http_route", &count), "/b");
	cr_assert_eq(count, 3);
}

Test(threadctx, bad_attributes_are_left_out_and_counted)
{
	/* index 9 outside the map; "pid" (one of ours) and "" (a refused map entry) as names; a
	 * control character; invalid UTF-8; a NUL inside; then an entry longer than the rest */
	const uint8_t attrs[] = {9,    1, 'x', 3,    1,	   'x', 4, 1,	'x', 0, 2, 'a',
				 0x1b, 1, 2,   0xc3, 0x28, 2,	2, 'a', 0,   0, 9, 'z'};
	uint8_t r[RP_TCTX_MAX];
	char out[THREADCTX_LABELS_MAX];
	struct threadctx_stats st = {0};
	struct procctx_attrs keys;
	size_t n, count;

	key_map(&keys, names, 5);
	n = threadctx_labels(r, record(r, 1, attrs, sizeof(attrs)), 0, &keys, out, &st);
	label(out, n, "trace_id", &count);
	cr_assert_eq(count, 2, "only trace_id and span_id: %zu labels", count);
	cr_assert_eq(st.bad[THREADCTX_BAD_KEY], 3);
	cr_assert_eq(st.bad[THREADCTX_BAD_VALUE], 3);
	cr_assert_eq(st.bad[THREADCTX_BAD_ENTRY], 1);
	/* no key map at all: the attributes are left out, the ids kept */
	memset(&st, 0, sizeof(st));
	n = threadctx_labels(r, record(r, 1, (const uint8_t *)"\0\1x", 3), 0, NULL, out, &st);
	label(out, n, "trace_id", &count);
	cr_assert_eq(count, 2);
	cr_assert_eq(st.bad[THREADCTX_BAD_KEY], 1);
}

Test(threadctx, a_size_that_lies_drops_the_attributes)
{
	const uint8_t attrs[] = {0, 1, '/'};
	uint8_t r[RP_TCTX_MAX];
	char out[THREADCTX_LABELS_MAX];
	struct threadctx_stats st = {0};
	struct procctx_attrs keys;
	size_t n, count;

	key_map(&keys, names, 1);
	/* attrs-data-size says 3, 2 bytes came: not the record the BPF side copies */
	n = threadctx_labels(r, record(r, 1, attrs, sizeof(attrs)) - 1, 0, &keys, out, &st);
	cr_assert_null(label(out, n, "http_route", &count));
	cr_assert_eq(count, 2);
	/* the BPF side's flags: past 640 bytes, or the attributes unreadable */
	r[26] = 0xff;
	r[27] = 0xff;
	n = threadctx_labels(r, RP_TCTX_HDR, RP_TCTX_F_OVERSIZE, &keys, out, &st);
	cr_assert_str_eq(label(out, n, "span_id", NULL), "a1a2a3a4a5a6a7a8");
	cr_assert_eq(st.bad[THREADCTX_BAD_SIZE], 1);
	threadctx_labels(r, RP_TCTX_HDR, RP_TCTX_F_ATTRS_FAIL, &keys, out, &st);
	cr_assert_eq(st.bad[THREADCTX_BAD_READ], 1);
}

Test(threadctx, at_most_sixteen_attributes)
{
	static const char *const many[20] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j",
					     "k", "l", "m", "n", "o", "p", "q", "r", "s", "t"};
	uint8_t attrs[60], r[RP_TCTX_MAX];
	char out[THREADCTX_LABELS_MAX];
	struct threadctx_stats st = {0};
	struct procctx_attrs keys;
	size_t n, count, i;

	for (i = 0; i < 20; i++) {
		attrs[3 * i] = (uint8_t)i;
		attrs[3 * i + 1] = 1;
		attrs[3 * i + 2] = 'v';
	}
	key_map(&keys, many, 20);
	n = threadctx_labels(r, record(r, 1, attrs, sizeof(attrs)), 0, &keys, out, &st);
	label(out, n, "trace_id", &count);
	cr_assert_eq(count, 2 + THREADCTX_ATTRS_MAX);
	cr_assert_eq(st.bad[THREADCTX_BAD_MANY], 20 - THREADCTX_ATTRS_MAX);
}
