// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_pprofread.c - the pprof reader against our writer (daemon/profile/pprof.c): a profile with known
 * samples, labels, mappings and comments is encoded, then read back field by field; and malformed
 * inputs (truncations, bad references, bounds) are refused with a message naming the byte.
 */
#define ZLIB_CONST
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/pprof.h"
#include "view/pprofread.h"

#define PERIOD_NS 10000000LL

/* Two threads, three distinct stacks; returns the encoded profile (gzip'd or not). */
static uint8_t *encode_known(int gzip, size_t *len)
{
	struct pprof *p = pprof__new();
	uint64_t m, f_main, f_bar, f_c, l_main, l_bar, l_c;
	uint8_t *out = NULL;

	cr_assert_not_null(p);
	pprof_set_period(p, PERIOD_NS);
	pprof_set_time(p, 1700000000000000000LL, 10000000000LL);
	cr_assert_eq(pprof_add_comment(p, "rubyprofd test"), 0);
	m = pprof_mapping(p, 0, 0, 0, "[ruby]", "");
	f_main = pprof_function(p, "<main>", "", "/app/main.rb", 1);
	f_bar = pprof_function(p, "Foo#bar", "", "/app/foo.rb", 10);
	f_c = pprof_function(p, "Integer#times", "", "", 0);
	l_main = pprof_location(p, m, 0, f_main, 3);
	l_bar = pprof_location(p, m, 0, f_bar, 12);
	l_c = pprof_location(p, 0, 0, f_c, 0);
	cr_assert(m && f_main && f_bar && f_c && l_main && l_bar && l_c);
	{
		const uint64_t s1[] = {l_bar, l_main}, s2[] = {l_main}, s3[] = {l_c, l_bar, l_main};
		const int64_t v1[2] = {5, 5 * PERIOD_NS}, v2[2] = {2, 2 * PERIOD_NS},
			      v3[2] = {3, 3 * PERIOD_NS};
		const struct pprof_label l1[] = {{.key = "pid", .num = 42},
						 {.key = "tid", .num = 101},
						 {.key = "thread_name", .str = "worker-1"}};
		const struct pprof_label l3[] = {{.key = "pid", .num = 42},
						 {.key = "tid", .num = 100}};

		cr_assert_eq(pprof_add_sample(p, s1, 2, v1, l1, 3), 0);
		cr_assert_eq(pprof_add_sample(p, s2, 1, v2, l1, 3), 0);
		cr_assert_eq(pprof_add_sample(p, s3, 3, v3, l3, 2), 0);
	}
	cr_assert_eq(pprof_encode(p, gzip, &out, len), 0);
	pprof__free(p);
	return out;
}

static const char *fn_name(const struct pprofread *r, uint64_t loc_id)
{
	const struct pprofread_location *l = pprofread_location(r, loc_id);

	cr_assert_not_null(l);
	cr_assert_eq(l->nlines, 1);
	return pprofread_str(r, pprofread_function(r, l->lines[0].function_id)->name);
}

static const char *label_str(const struct pprofread *r, const struct pprofread_sample *s,
			     const char *key, int64_t *num)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++) {
		if (strcmp(pprofread_str(r, s->labels[i].key), key) == 0) {
			if (num)
				*num = s->labels[i].num;
			return pprofread_str(r, s->labels[i].str);
		}
	}
	return NULL;
}

static void check_known(const struct pprofread *r)
{
	const struct pprofread_profile *p = pprofread_profile(r);
	const struct pprofread_sample *s;
	const struct pprofread_location *l;
	int64_t num = 0;

	cr_assert_eq(p->nsample_types, 2);
	cr_assert_str_eq(pprofread_str(r, p->sample_types[0].type), "samples");
	cr_assert_str_eq(pprofread_str(r, p->sample_types[0].unit), "count");
	cr_assert_str_eq(pprofread_str(r, p->sample_types[1].type), "cpu");
	cr_assert_str_eq(pprofread_str(r, p->sample_types[1].unit), "nanoseconds");
	cr_assert_str_eq(pprofread_str(r, p->period_type.type), "cpu");
	cr_assert_eq(p->period, PERIOD_NS);
	cr_assert_eq(p->time_ns, 1700000000000000000LL);
	cr_assert_eq(p->duration_ns, 10000000000LL);
	cr_assert_eq(p->ncomments, 1);
	cr_assert_str_eq(pprofread_str(r, p->comments[0]), "rubyprofd test");
	cr_assert_eq(p->nsamples, 3);

	s = &p->samples[0];
	cr_assert_eq(s->nlocations, 2);
	cr_assert_str_eq(fn_name(r, s->location_ids[0]), "Foo#bar");
	cr_assert_str_eq(fn_name(r, s->location_ids[1]), "<main>");
	cr_assert_eq(s->values[0], 5);
	cr_assert_eq(s->values[1], 5 * PERIOD_NS);
	cr_assert_str_eq(label_str(r, s, "thread_name", NULL), "worker-1");
	cr_assert_str_eq(label_str(r, s, "tid", &num), "");
	cr_assert_eq(num, 101);

	s = &p->samples[2];
	cr_assert_eq(s->nlocations, 3);
	cr_assert_str_eq(fn_name(r, s->location_ids[0]), "Integer#times");
	cr_assert_eq(s->values[0], 3);
	cr_assert_null(label_str(r, s, "thread_name", NULL));
	label_str(r, s, "pid", &num);
	cr_assert_eq(num, 42);

	l = pprofread_location(r, p->samples[0].location_ids[0]);
	cr_assert_eq(l->lines[0].line, 12);
	cr_assert_str_eq(pprofread_str(r, pprofread_mapping(r, l->mapping_id)->filename), "[ruby]");
	cr_assert_str_eq(pprofread_str(r, pprofread_function(r, l->lines[0].function_id)->filename),
			 "/app/foo.rb");
	cr_assert_eq(pprofread_function(r, l->lines[0].function_id)->start_line, 10);
	cr_assert_null(pprofread_location(r, 0));
	cr_assert_null(pprofread_location(r, 999));
}

/* encode_known's profile, gzipped or not, decoded from memory. */
static void round_trip(int gzip)
{
	char err[256];
	size_t len;
	uint8_t *buf = encode_known(gzip, &len);
	struct pprofread *r = pprofread__new(buf, len, "mem", err, sizeof(err));

	cr_assert_not_null(r, "%s", err);
	check_known(r);
	pprofread__free(r);
	free(buf);
}

Test(pprofread, round_trip_gzip)
{
	round_trip(1);
}

Test(pprofread, round_trip_plain)
{
	round_trip(0);
}

Test(pprofread, round_trip_file)
{
	char path[] = "/tmp/test_pprofread.XXXXXX", err[256];
	size_t len;
	uint8_t *buf = encode_known(1, &len);
	struct pprofread *r;
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
	r = pprofread__open(path, err, sizeof(err));
	unlink(path);
	cr_assert_not_null(r, "%s", err);
	check_known(r);
	pprofread__free(r);
	free(buf);

	r = pprofread__open("/nonexistent/x.pb.gz", err, sizeof(err));
	cr_assert_null(r);
	cr_assert_eq(errno, ENOENT);
	cr_assert_not_null(strstr(err, "/nonexistent/x.pb.gz"), "%s", err);
}

/* Every truncation of a valid message is refused or read without a crash; truncating the gzip
 * stream is always refused, naming the compressed byte. */
Test(pprofread, truncations)
{
	char err[256];
	size_t len, glen, i;
	uint8_t *buf = encode_known(0, &len), *gz = encode_known(1, &glen);
	struct pprofread *r;

	for (i = 0; i < len; i++) {
		r = pprofread__new(buf, i, "cut", err, sizeof(err));
		if (!r)
			cr_assert(strncmp(err, "cut: byte ", 10) == 0, "%zu: %s", i, err);
		pprofread__free(r);
	}
	for (i = 0; i < glen; i++) {
		r = pprofread__new(gz, i, "cut.gz", err, sizeof(err));
		cr_assert_null(r, "a gzip stream cut at %zu was read", i);
		cr_assert(errno == EINVAL, "%zu: errno %d", i, errno);
	}
	r = pprofread__new(gz, glen / 2, "cut.gz", err, sizeof(err));
	cr_assert_not_null(strstr(err, "gzip: "), "%s", err);
	free(buf);
	free(gz);
}

static void expect_error(const uint8_t *msg, size_t len, int err_no, const char *needle)
{
	char err[256];
	struct pprofread *r = pprofread__new(msg, len, "bad.pb", err, sizeof(err));

	cr_assert_null(r, "accepted; wanted \"%s\"", needle);
	cr_assert_eq(errno, err_no, "errno %d, wanted %d (%s)", errno, err_no, err);
	cr_assert_not_null(strstr(err, needle), "\"%s\" not in \"%s\"", needle, err);
	cr_assert(strncmp(err, "bad.pb: byte ", 13) == 0, "%s", err);
}

Test(pprofread, malformed)
{
	/* string_table "" then a sample with location 7, which does not exist */
	const uint8_t no_loc[] = {0x32, 0x00, 0x12, 0x02, 0x08, 0x07};
	/* string_table "" and a function whose name is string 5 */
	const uint8_t bad_str[] = {0x32, 0x00, 0x2a, 0x04, 0x08, 0x01, 0x10, 0x05};
	/* no string table */
	const uint8_t no_strings[] = {0x48, 0x01};
	/* a length running past the end */
	const uint8_t long_len[] = {0x32, 0x00, 0x12, 0x7f, 0x08};
	/* an 11-byte varint */
	const uint8_t long_varint[] = {0x32, 0x00, 0x48, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	/* wire type 3 (groups) */
	const uint8_t group[] = {0x32, 0x00, 0x4b};
	/* one sample type, a sample with two values */
	const uint8_t nvals[] = {0x32, 0x00, 0x0a, 0x00, 0x12, 0x04, 0x12, 0x02, 0x01, 0x02};
	/* two locations with id 1 */
	const uint8_t dup[] = {0x32, 0x00, 0x22, 0x02, 0x08, 0x01, 0x22, 0x02, 0x08, 0x01};
	/* a location naming function 3, absent */
	const uint8_t no_fn[] = {0x32, 0x00, 0x22, 0x06, 0x08, 0x01, 0x22, 0x02, 0x08, 0x03};

	expect_error(no_loc, sizeof(no_loc), EINVAL, "no location 7");
	expect_error(bad_str, sizeof(bad_str), EINVAL, "string index 5");
	expect_error(no_strings, sizeof(no_strings), EINVAL, "string table");
	expect_error(long_len, sizeof(long_len), EINVAL, "past the end");
	expect_error(long_varint, sizeof(long_varint), EINVAL, "varint");
	expect_error(group, sizeof(group), EINVAL, "wire type 3");
	expect_error(nvals, sizeof(nvals), EINVAL, "2 values for 1 sample types");
	expect_error(dup, sizeof(dup), EINVAL, "location id 1 appears twice");
	expect_error(no_fn, sizeof(no_fn), EINVAL, "no function 3");
}

/* A sample deeper than PPROFREAD_MAX_STACK is refused with EFBIG, not truncated. */
Test(pprofread, stack_bound)
{
	size_t n = PPROFREAD_MAX_STACK + 1, len = 0, i;
	uint8_t *msg = malloc(n + 32);
	char err[256];
	struct pprofread *r;

	cr_assert_not_null(msg);
	msg[len++] = 0x32; /* string_table "" */
	msg[len++] = 0x00;
	msg[len++] = 0x12; /* sample: { location_id packed, n x 1 } */
	msg[len++] = (uint8_t)(((n + 4) & 0x7f) | 0x80);
	msg[len++] = (uint8_t)((((n + 4) >> 7) & 0x7f) | 0x80);
	msg[len++] = (uint8_t)((n + 4) >> 14);
	msg[len++] = 0x0a;
	msg[len++] = (uint8_t)((n & 0x7f) | 0x80);
	msg[len++] = (uint8_t)(((n >> 7) & 0x7f) | 0x80);
	msg[len++] = (uint8_t)(n >> 14);
	for (i = 0; i < n; i++)
		msg[len++] = 0x01;
	r = pprofread__new(msg, len, "deep", err, sizeof(err));
	cr_assert_null(r);
	cr_assert_eq(errno, EFBIG, "%s", err);
	cr_assert_not_null(strstr(err, "locations in a sample"), "%s", err);
	free(msg);
}
