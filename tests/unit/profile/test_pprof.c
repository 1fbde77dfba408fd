// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_pprof.c - the pprof encoder, checked against the real reader: profiles written here are
 * decoded by `go tool pprof` and its text output compared with what was put in.
 */
#define ZLIB_CONST
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "profile/pprof.h"
#include "../tmpdir.h"

/* A per-test temporary directory: profiles, and HOME/GOCACHE for the go tool. */
static void setup(void)
{
	tmpdir_make("test_pprof");
}

static void teardown(void)
{
	tmpdir_remove();
}

TestSuite(pprof, .init = setup, .fini = teardown);

/* Entries of dir, "." and ".." left out. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* Whether an executable `go` is on PATH. */
static bool have_go(void)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL, file[4096];
	bool found = false;

	if (!path)
		return false;
	copy = strdup(path);
	cr_assert_not_null(copy);
	for (dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		snprintf(file, sizeof(file), "%s/go", *dir ? dir : ".");
		found = access(file, X_OK) == 0;
	}
	free(copy);
	return found;
}

/* Skips the test where `go` is missing. */
static void need_go(void)
{
	if (!have_go())
		cr_skip_test("missing: `go` on PATH, the real pprof reader (make deps installs "
			     "golang-go)");
}

/*
 * Runs `go tool pprof ARGS`, ARGS printf-formatted (times in UTC), and returns its output (stdout
 * and stderr); asserts exit status 0.
 */
static __attribute__((format(printf, 1, 2))) char *go_pprof(const char *fmt, ...)
{
	char *args = NULL, *cmd = NULL, *out = NULL;
	size_t len = 0, cap = 0, n;
	va_list ap;
	int status, rc;
	FILE *f;

	va_start(ap, fmt);
	rc = vasprintf(&args, fmt, ap);
	va_end(ap);
	cr_assert_neq(rc, -1);
	cr_assert(asprintf(&cmd, "TZ=UTC HOME=%s GOCACHE=%s/gocache GOFLAGS= go tool pprof %s 2>&1",
			   tmpdir, tmpdir, args) > 0);
	free(args);
	f = popen(cmd, "r");
	cr_assert_not_null(f, "popen: %s", strerror(errno));
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			out = realloc(out, cap);
			cr_assert_not_null(out);
		}
		n = fread(out + len, 1, cap - len - 1, f);
		len += n;
	} while (n);
	out[len] = '\0';
	status = pclose(f);
	cr_assert_eq(status, 0, "`%s` failed (status %d):\n%s", cmd, status, out);
	free(cmd);
	return out;
}

/* Collapses every run of whitespace to one space, so asserts do not depend on column widths. */
static void squeeze(char *s)
{
	char *w = s;
	bool space = false;

	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n') {
			space = true;
			continue;
		}
		if (space && w != s)
			*w++ = ' ';
		space = false;
		*w++ = *s;
	}
	*w = '\0';
}

/* The text between the first `from` and the following `to` (or the end), copied. */
static char *between(const char *text, const char *from, const char *to)
{
	const char *a = strstr(text, from), *b;

	cr_assert_not_null(a, "\"%s\" not in:\n%s", from, text);
	a += strlen(from);
	b = to ? strstr(a, to) : NULL;
	return strndup(a, b ? (size_t)(b - a) : strlen(a));
}

/*
 * The reader renumbers locations (in order of first use), so ids in -raw output are not ours:
 * rewrites each sample's location ids as "[address M=mapping function file:line s=start(sys)]"
 * taken from the Locations section, leaving the rest of the text as it is.
 */
static char *resolve_locations(const char *raw)
{
	char *locs[64] = {0}, *out = NULL, *line, *save = NULL, *copy, *p, *ids;
	const char *loc_sec = strstr(raw, "\nLocations\n"), *map_sec = strstr(raw, "\nMappings\n");
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int id, n;

	cr_assert(loc_sec && map_sec && f, "no Locations/Mappings in:\n%s", raw);
	copy = strndup(loc_sec, (size_t)(map_sec - loc_sec));
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, " %d: %n", &id, &n) == 1 && id > 0 && id < 64)
			locs[id] = strdup(line + n);
	}
	free(copy);

	copy = strdup(raw);
	save = NULL;
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long long v0, v1;

		/* A sample line: "count cpu_ns: id id ..." */
		if (sscanf(line, " %lld %lld:%n", &v0, &v1, &n) == 2) {
			fprintf(f, "%lld %lld:", v0, v1);
			for (p = strtok_r(line + n, " ", &ids); p; p = strtok_r(NULL, " ", &ids)) {
				id = (int)strtol(p, NULL, 10);
				cr_assert(id > 0 && id < 64 && locs[id], "location %s unknown", p);
				fprintf(f, " [%s]", locs[id]);
			}
			fputc('\n', f);
		} else {
			fprintf(f, "%s\n", line);
		}
	}
	free(copy);
	for (id = 0; id < 64; id++)
		free(locs[id]);
	cr_assert_eq(fclose(f), 0);
	return out;
}

#define assert_has(text, needle)                                                                   \
	cr_assert_not_null(strstr((text), (needle)), "\"%s\" not in:\n%s", (needle), (text))
#define assert_lacks(text, needle)                                                                 \
	cr_assert_null(strstr((text), (needle)), "\"%s\" unexpectedly in:\n%s", (needle), (text))

#define PERIOD_NS 10000000LL

/*
 * Three samples on two threads of one process:
 *   worker-1 (tid 101): 5 x [Foo#bar <- <main>], 2 x [<main>]
 *   main     (tid 100): 3 x [Baz.qux <- Foo#bar <- <main>]
 * Foo#bar has a mapped, addressed location; the others are interpreter frames with no mapping.
 */
static struct pprof *build_profile(void)
{
	struct pprof *p = pprof__new();
	uint64_t m, f_main, f_bar, f_qux, l_main, l_bar, l_qux;

	cr_assert_not_null(p);
	pprof_set_period(p, PERIOD_NS);
	pprof_set_time(p, 1700000000000000000LL, 10000000000LL);
	cr_assert_eq(pprof_add_comment(p, "rubyprofd test profile"), 0);
	cr_assert_eq(pprof_add_comment(p, "second comment"), 0);

	m = pprof_mapping(p, 0x400000, 0x500000, 0x1000, "/usr/bin/ruby", "0badc0de");
	f_main = pprof_function(p, "<main>", "main_sys", "/app/main.rb", 1);
	f_bar = pprof_function(p, "Foo#bar", NULL, "/app/foo.rb", 10);
	f_qux = pprof_function(p, "Baz.qux", NULL, "/app/baz.rb", 40);
	cr_assert(m && f_main && f_bar && f_qux);
	l_main = pprof_location(p, 0, 0, f_main, 3);
	l_bar = pprof_location(p, m, 0x401234, f_bar, 12);
	l_qux = pprof_location(p, 0, 0, f_qux, 42);
	cr_assert(l_main && l_bar && l_qux);

	{
		const uint64_t s1[] = {l_bar, l_main}, s2[] = {l_main},
			       s3[] = {l_qux, l_bar, l_main};
		const int64_t v1[2] = {5, 5 * PERIOD_NS}, v2[2] = {2, 2 * PERIOD_NS},
			      v3[2] = {3, 3 * PERIOD_NS};
		const struct pprof_label worker[] = {
			{.key = "pid", .num = 4242},
			{.key = "tid", .num = 101},
			{.key = "thread_name", .str = "worker-1"},
		};
		const struct pprof_label mainthr[] = {
			{.key = "pid", .num = 4242},
			{.key = "tid", .num = 100},
			{.key = "thread_name", .str = "main"},
			{.key = "gc_bytes", .num = 2048, .num_unit = "bytes"},
		};

		cr_assert_eq(pprof_add_sample(p, s1, 2, v1, worker, 3), 0);
		cr_assert_eq(pprof_add_sample(p, s2, 1, v2, worker, 3), 0);
		cr_assert_eq(pprof_add_sample(p, s3, 3, v3, mainthr, 4), 0);
	}
	return p;
}

static char *write_profile(struct pprof *p, const char *name)
{
	char *path = NULL;

	cr_assert(asprintf(&path, "%s/%s", tmpdir, name) > 0);
	cr_assert_eq(pprof_write_file(p, path), 0);
	return path;
}

Test(pprof, go_raw_decodes_everything)
{
	struct pprof *p;
	char *path, *raw, *out, *s1, *s2, *s3, *locs;

	need_go();
	p = build_profile();
	path = write_profile(p, "raw.pb.gz");
	raw = go_pprof("-raw %s", path);
	out = resolve_locations(raw);
	squeeze(out);

	assert_has(out, "PeriodType: cpu nanoseconds");
	assert_has(out, "Period: 10000000 ");
	assert_has(out, "Time: 2023-11-14 22:13:20 +0000 UTC");
	assert_has(out, "Duration: 10s");
	assert_has(out, "Comment: rubyprofd test profile");
	assert_has(out, "Comment: second comment");
	assert_has(out, "Samples: samples/count cpu/nanoseconds ");

	/*
	 * Each sample: its values, its stack leaf first as "[address M=mapping function file:line
	 * s=start_line(system_name)]", then its own labels (and no others).
	 */
	s1 = between(out,
		     " 5 50000000: [0x401234 M=1 Foo#bar /app/foo.rb:12 s=10()]"
		     " [0x0 <main> /app/main.rb:3 s=1(main_sys)] ",
		     " 2 20000000:");
	assert_has(s1, "thread_name:[worker-1]");
	assert_has(s1, "pid:[4242]");
	assert_has(s1, "tid:[101]");
	assert_lacks(s1, "main");
	assert_lacks(s1, "gc_bytes");
	s2 = between(out, " 2 20000000: [0x0 <main> /app/main.rb:3 s=1(main_sys)] ",
		     " 3 30000000:");
	assert_has(s2, "thread_name:[worker-1]");
	assert_has(s2, "tid:[101]");
	s3 = between(out,
		     " 3 30000000: [0x0 Baz.qux /app/baz.rb:42 s=40()]"
		     " [0x401234 M=1 Foo#bar /app/foo.rb:12 s=10()]"
		     " [0x0 <main> /app/main.rb:3 s=1(main_sys)] ",
		     "Locations");
	assert_has(s3, "thread_name:[main]");
	assert_has(s3, "pid:[4242]");
	assert_has(s3, "tid:[100]");
	assert_has(s3, "gc_bytes:[2048 bytes]");

	locs = between(out, "Locations ", "Mappings");
	assert_has(locs, "0x401234 M=1 Foo#bar /app/foo.rb:12 s=10()");
	assert_has(locs, "0x0 <main> /app/main.rb:3 s=1(main_sys)");
	assert_has(locs, "0x0 Baz.qux /app/baz.rb:42 s=40()");
	assert_has(out, "Mappings 1: 0x400000/0x500000/0x1000 /usr/bin/ruby 0badc0de [FN][FL][LN]");

	free(locs);
	free(s3);
	free(s2);
	free(s1);
	free(out);
	free(raw);
	free(path);
	pprof__free(p);
}

/* Flat and cumulative value of `name` in `go tool pprof -top` output; asserts it is listed. */
static void top_row(const char *out, const char *name, char *flat, char *cum)
{
	const char *line, *nl;
	char buf[512], f[64], c[64], fn[256];

	for (line = out; *line; line = *nl ? nl + 1 : nl) {
		nl = strchrnul(line, '\n');
		snprintf(buf, sizeof(buf), "%.*s", (int)(nl - line), line);
		/* flat flat% sum% cum cum% name */
		if (sscanf(buf, "%63s %*s %*s %63s %*s %255[^\n]", f, c, fn) == 3 &&
		    !strcmp(fn, name)) {
			strcpy(flat, f);
			strcpy(cum, c);
			return;
		}
	}
	cr_assert_fail("%s not listed in:\n%s", name, out);
}

Test(pprof, go_top_lists_flat_counts)
{
	char flat[64], cum[64], *path, *out;
	struct pprof *p;

	need_go();
	p = build_profile();
	path = write_profile(p, "top.pb.gz");

	out = go_pprof("-top -sample_index=samples %s", path);
	assert_has(out, "Total samples = 10");
	top_row(out, "Foo#bar", flat, cum);
	cr_expect_str_eq(flat, "5");
	cr_expect_str_eq(cum, "8");
	top_row(out, "<main>", flat, cum);
	cr_expect_str_eq(flat, "2");
	cr_expect_str_eq(cum, "10");
	top_row(out, "Baz.qux", flat, cum);
	cr_expect_str_eq(flat, "3");
	cr_expect_str_eq(cum, "3");
	free(out);

	/* The default sample type is the last one: cpu nanoseconds. */
	out = go_pprof("-top -unit=ns %s", path);
	assert_has(out, "Type: cpu");
	assert_has(out, "Total samples = 100000000ns");
	top_row(out, "Foo#bar", flat, cum);
	cr_expect_str_eq(flat, "50000000ns");
	top_row(out, "Baz.qux", flat, cum);
	cr_expect_str_eq(flat, "30000000ns");

	free(out);
	free(path);
	pprof__free(p);
}

Test(pprof, dedup)
{
	struct pprof *p = pprof__new();
	uint64_t m, f, l;

	cr_assert_not_null(p);
	m = pprof_mapping(p, 0x1000, 0x2000, 0, "/lib/a.so", "b1");
	cr_assert_eq(m, 1);
	cr_assert_eq(pprof_mapping(p, 0x1000, 0x2000, 0, "/lib/a.so", "b1"), m);
	cr_assert_neq(pprof_mapping(p, 0x1000, 0x2000, 0, "/lib/a.so", "b2"), m);
	cr_assert_neq(pprof_mapping(p, 0x1000, 0x3000, 0, "/lib/a.so", "b1"), m);
	cr_assert_neq(pprof_mapping(p, 0x1000, 0x2000, 0x10, "/lib/a.so", "b1"), m);
	cr_assert_neq(pprof_mapping(p, 0x1000, 0x2000, 0, "/lib/b.so", "b1"), m);

	f = pprof_function(p, "a", "a_sys", "a.rb", 1);
	cr_assert_eq(f, 1, "ids start at 1");
	/* Equal contents in other buffers: strings are compared, not pointers. */
	{
		char name[] = "a", sys[] = "a_sys", file[] = "a.rb";

		cr_assert_eq(pprof_function(p, name, sys, file, 1), f);
	}
	cr_assert_neq(pprof_function(p, "b", "a_sys", "a.rb", 1), f);
	cr_assert_neq(pprof_function(p, "a", "b_sys", "a.rb", 1), f);
	cr_assert_neq(pprof_function(p, "a", "a_sys", "b.rb", 1), f);
	cr_assert_neq(pprof_function(p, "a", "a_sys", "a.rb", 2), f);
	/* NULL means "": both spell the same function. */
	cr_assert_eq(pprof_function(p, "c", NULL, "c.rb", 0),
		     pprof_function(p, "c", "", "c.rb", 0));
	/* A name that equals another's file name is still another function. */
	cr_assert_neq(pprof_function(p, "a.rb", "a_sys", "a", 1), f);

	l = pprof_location(p, m, 0x1234, f, 7);
	cr_assert_eq(l, 1);
	cr_assert_eq(pprof_location(p, m, 0x1234, f, 7), l);
	cr_assert_neq(pprof_location(p, 0, 0x1234, f, 7), l);
	cr_assert_neq(pprof_location(p, m, 0x1235, f, 7), l);
	cr_assert_neq(pprof_location(p, m, 0x1234, f + 1, 7), l);
	cr_assert_neq(pprof_location(p, m, 0x1234, f, 8), l);
	pprof__free(p);
}

/* Many entries force the hash tables to grow several times; ids must survive the rehashing. */
Test(pprof, dedup_survives_growth)
{
	enum { NFUNC = 10000, NSAMPLES = 100000 };
	struct pprof *p = pprof__new();
	static uint64_t fids[NFUNC], lids[NFUNC];
	char name[64], file[64];
	uint8_t *buf = NULL;
	size_t len = 0;
	int i;

	cr_assert_not_null(p);
	for (i = 0; i < NFUNC; i++) {
		snprintf(name, sizeof(name), "Mod%d#meth", i);
		snprintf(file, sizeof(file), "/app/f%d.rb", i % 97);
		fids[i] = pprof_function(p, name, NULL, file, i);
		cr_assert_eq(fids[i], (uint64_t)i + 1);
		lids[i] = pprof_location(p, 0, 0, fids[i], i + 1);
		cr_assert_eq(lids[i], (uint64_t)i + 1);
	}
	for (i = 0; i < NFUNC; i++) {
		snprintf(name, sizeof(name), "Mod%d#meth", i);
		snprintf(file, sizeof(file), "/app/f%d.rb", i % 97);
		cr_assert_eq(pprof_function(p, name, NULL, file, i), fids[i]);
		cr_assert_eq(pprof_location(p, 0, 0, fids[i], i + 1), lids[i]);
	}
	for (i = 0; i < NSAMPLES; i++) {
		const uint64_t stack[3] = {lids[i % NFUNC], lids[(i * 7) % NFUNC], lids[0]};
		const int64_t v[2] = {1, PERIOD_NS};
		char tname[32];
		const struct pprof_label l[2] = {
			{.key = "tid", .num = i % 13},
			{.key = "thread_name", .str = tname},
		};

		snprintf(tname, sizeof(tname), "t%d", i % 13);
		cr_assert_eq(pprof_add_sample(p, stack, 3, v, l, 2), 0);
	}
	cr_assert_eq(pprof_encode(p, 1, &buf, &len), 0);
	cr_assert_gt(len, 0);
	free(buf);

	if (have_go()) {
		char *path = write_profile(p, "big.pb.gz"), *out;

		out = go_pprof("-top -sample_index=samples -nodecount=3 %s", path);
		assert_has(out, "of 100000 total");
		free(out);
		free(path);
	}
	pprof__free(p);
}

/* Inflates a gzip stream. */
static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = 1 << 16;
	uint8_t *out = malloc(cap);
	int zret;

	cr_assert_not_null(out);
	cr_assert_eq(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	while ((zret = inflate(&zs, Z_NO_FLUSH)) == Z_OK) {
		if (!zs.avail_out) {
			out = realloc(out, cap * 2);
			cr_assert_not_null(out);
			zs.next_out = out + cap;
			zs.avail_out = (uInt)cap;
			cap *= 2;
		}
	}
	cr_assert_eq(zret, Z_STREAM_END, "inflate: %d", zret);
	cr_assert_eq(zs.avail_in, 0, "trailing bytes after the gzip stream");
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	cr_assert_geq(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

Test(pprof, gzip_inflates_to_raw_encoding)
{
	struct pprof *p = build_profile();
	uint8_t *raw, *gz, *file, *inflated;
	size_t raw_len, gz_len, file_len, inflated_len;
	char *path;

	cr_assert_eq(pprof_encode(p, 0, &raw, &raw_len), 0);
	cr_assert_eq(pprof_encode(p, 1, &gz, &gz_len), 0);
	cr_assert(gz_len >= 2 && gz[0] == 0x1f && gz[1] == 0x8b, "no gzip magic");
	inflated = gunzip(gz, gz_len, &inflated_len);
	cr_assert_eq(inflated_len, raw_len);
	cr_assert_arr_eq(inflated, raw, raw_len);
	free(inflated);

	path = write_profile(p, "gz.pb.gz");
	file = read_file(path, &file_len);
	cr_assert(file_len >= 2 && file[0] == 0x1f && file[1] == 0x8b, "file lacks gzip magic");
	inflated = gunzip(file, file_len, &inflated_len);
	cr_assert_eq(inflated_len, raw_len);
	cr_assert_arr_eq(inflated, raw, raw_len);

	/* string_table[0] must be "": the first string entry (field 6, length 0) is 0x32 0x00. */
	{
		const uint8_t *s = memmem(raw, raw_len, "\x32\x00\x32\x07samples", 11);

		cr_assert_not_null(s, "string table does not start with \"\", \"samples\"");
	}

	free(inflated);
	free(file);
	free(path);
	free(gz);
	free(raw);
	pprof__free(p);
}

Test(pprof, write_file_replaces_atomically)
{
	struct pprof *p = build_profile();
	char *path;
	FILE *f;

	cr_assert(asprintf(&path, "%s/out.pb.gz", tmpdir) > 0);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("old contents", f);
	fclose(f);
	cr_assert_eq(pprof_write_file(p, path), 0);
	{
		size_t len;
		uint8_t *data = read_file(path, &len);

		cr_assert(len >= 2 && data[0] == 0x1f && data[1] == 0x8b, "old file not replaced");
		free(data);
	}
	cr_assert_eq(count_entries(tmpdir), 1, "temporary file left behind");
	free(path);
	pprof__free(p);
}

/* What the file at path holds, as a string. */
static char *slurp_text(const char *path)
{
	size_t len;
	uint8_t *data = read_file(path, &len);
	char *s = malloc(len + 1);

	cr_assert_not_null(s);
	memcpy(s, data, len);
	s[len] = '\0';
	free(data);
	return s;
}

static void put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* A symbolic link at the path (planted in a shared directory, say) is refused, never followed. */
Test(pprof, write_file_refuses_a_link_and_leaves_its_target)
{
	struct pprof *p = build_profile();
	char *path, *victim, *text;
	struct stat st;

	cr_assert(asprintf(&path, "%s/out.pb.gz", tmpdir) > 0);
	cr_assert(asprintf(&victim, "%s/victim", tmpdir) > 0);
	put_text(victim, "precious");
	cr_assert_eq(symlink(victim, path), 0);
	cr_assert_eq(pprof_write_file(p, path), -ELOOP);
	text = slurp_text(victim);
	cr_assert_str_eq(text, "precious");
	free(text);
	cr_assert_eq(lstat(path, &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the link stays as it was");
	cr_assert_eq(count_entries(tmpdir), 2, "temporary file left behind");
	/* a dangling link too: following it would create a file where it points */
	cr_assert_eq(unlink(victim), 0);
	cr_assert_eq(pprof_write_file(p, path), -ELOOP);
	cr_assert_eq(access(victim, F_OK), -1);
	free(victim);
	free(path);
	pprof__free(p);
}

Test(pprof, write_file_refuses_a_fifo_or_a_directory)
{
	struct pprof *p = build_profile();
	char *path;
	struct stat st;

	/* opening a FIFO to write it would wait for a reader: that hangs, and alarm ends it */
	alarm(20);
	cr_assert(asprintf(&path, "%s/out.pb.gz", tmpdir) > 0);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(pprof_write_file(p, path), -EEXIST);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert(S_ISFIFO(st.st_mode));
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_assert_eq(pprof_write_file(p, path), -EISDIR);
	free(path);
	pprof__free(p);
}

/*
 * Mode 0640 whatever the umask allows (0 here: the code's own mode is what is seen), also when
 * a file of mode 0644 was there; a hard link to the old file elsewhere keeps the old text.
 */
Test(pprof, write_file_is_not_readable_by_others)
{
	struct pprof *p = build_profile();
	char *path, *other, *text;
	struct stat st;

	umask(0);
	cr_assert(asprintf(&path, "%s/out.pb.gz", tmpdir) > 0);
	cr_assert(asprintf(&other, "%s/other", tmpdir) > 0);
	cr_assert_eq(pprof_write_file(p, path), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	cr_assert_eq(unlink(path), 0);
	put_text(path, "old");
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(link(path, other), 0);
	cr_assert_eq(pprof_write_file(p, path), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	text = slurp_text(other);
	cr_assert_str_eq(text, "old");
	free(text);
	free(other);
	free(path);
	pprof__free(p);
}

Test(pprof, write_file_missing_dir)
{
	struct pprof *p = build_profile();
	char *path;

	cr_assert(asprintf(&path, "%s/no/such/dir/out.pb.gz", tmpdir) > 0);
	cr_assert_eq(pprof_write_file(p, path), -ENOENT);
	free(path);
	pprof__free(p);
}

Test(pprof, unknown_ids_refused)
{
	struct pprof *p = pprof__new();
	const int64_t v[2] = {1, 1};
	const uint64_t bad[] = {1};
	const struct pprof_label nokey[] = {{.key = NULL, .str = "x"}};
	uint64_t f, l;

	cr_assert_not_null(p);
	errno = 0;
	cr_assert_eq(pprof_location(p, 0, 0, 1, 1), 0, "function 1 does not exist yet");
	cr_assert_eq(errno, EINVAL);
	f = pprof_function(p, "f", NULL, NULL, 0);
	cr_assert_eq(pprof_location(p, 1, 0, f, 1), 0, "mapping 1 does not exist");
	cr_assert_eq(pprof_location(p, 0, 0, 0, 1), 0, "function id 0");
	cr_assert_eq(pprof_add_sample(p, bad, 1, v, NULL, 0), -EINVAL);
	l = pprof_location(p, 0, 0, f, 1);
	cr_assert_eq(l, 1);
	cr_assert_eq(pprof_add_sample(p, bad, 1, v, nokey, 1), -EINVAL);
	cr_assert_eq(pprof_add_sample(p, bad, 1, v, NULL, 0), 0);
	pprof__free(p);
}
