// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_spool.c - the on-disk spool, on real directories: names, atomic pairs, sidecars read back
 * by Python's json module, eviction by bytes, age and count, restarts, crash leftovers, and a full
 * disk (a 64 KiB tmpfs, mounted when running as root).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output/spool.h"
#include "../tmpdir.h"

static char spooldir[256];
static bool mounted;

static void setup(void)
{
	tmpdir_make("test_spool");
	snprintf(spooldir, sizeof(spooldir), "%s/spool", tmpdir);
	umask(022);
	mounted = false;
}

static void teardown(void)
{
	if (mounted)
		umount2(tmpdir, MNT_DETACH);
	tmpdir_remove();
}

TestSuite(spool, .init = setup, .fini = teardown);

#define NS 1000000000LL
#define T0 1700000000123456789LL /* 2023-11-14 22:13:20.123456789 UTC */

/* The spool in spooldir, bounded at max_bytes (0: unbounded), no age bound. */
static struct spool *open_spool(uint64_t max_bytes)
{
	struct spool *s = spool__new(spooldir, max_bytes, 0, NULL, 0);

	cr_assert_not_null(s, "spool__new: %s", strerror(errno));
	return s;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static const struct spool_label default_labels[] = {{"service_name", "shop"}, {"host", "h1"}};

static struct spool_meta meta(const char *service, int64_t from)
{
	struct spool_meta m = {
		.service = service,
		.from_ns = from,
		.until_ns = from + 10 * NS,
		.sample_rate = 19,
		.period_ns = 52631578,
		.spy_name = "rubyprofd",
		.labels = default_labels,
		.nlabels = 2,
	};
	return m;
}

/* Writes a profile of len bytes (a pattern) and returns its path's base name. */
static void write_one(struct spool *s, const char *service, int64_t from, size_t len, char *base,
		      size_t baselen)
{
	struct spool_meta m = meta(service, from);
	char path[4096], *buf = malloc(len);
	int err;

	cr_assert_not_null(buf);
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(i * 7);
	err = spool_write(s, &m, buf, len, path, sizeof(path));
	cr_assert_eq(err, 0, "spool_write(%s): %s", service, strerror(-err));
	if (base)
		snprintf(base, baselen, "%s", strrchr(path, '/') + 1);
	free(buf);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* The directory's names, sorted (as `ls`), dot names included when dots; returns the count. */
static size_t list_dir(const char *dir, bool dots, char names[][256], size_t max)
{
	struct dirent **v;
	int n, i;
	size_t k = 0;

	n = scandir(dir, &v, NULL, alphasort);
	cr_assert_geq(n, 0, "scandir %s: %s", dir, strerror(errno));
	for (i = 0; i < n; i++) {
		const char *nm = v[i]->d_name;

		if (strcmp(nm, ".") && strcmp(nm, "..") && (dots || nm[0] != '.')) {
			cr_assert_lt(k, max);
			snprintf(names[k++], 256, "%s", nm);
		}
		free(v[i]);
	}
	free(v);
	return k;
}

static size_t count_dot_files(const char *dir)
{
	char names[64][256];
	size_t n = list_dir(dir, true, names, 64), dots = 0;

	for (size_t i = 0; i < n; i++)
		dots += names[i][0] == '.';
	return dots;
}

static bool exists(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Python's json module reading the file strictly as UTF-8, printed back canonically. */
static char *python_json(const char *path)
{
	char cmd[4096], line[8192];
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; "
		 "print(json.dumps(json.load(open(sys.argv[1], encoding=\"utf-8\")), "
		 "sort_keys=True))' '%s' 2>&1",
		 path);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen: %s", strerror(errno));
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	cr_assert_eq(pclose(p), 0, "python could not read %s as JSON: %s", path, line);
	line[strcspn(line, "\n")] = '\0';
	return strdup(line);
}

Test(spool, names_sort_by_time)
{
	const char *expect[] = {
		"20231114T221320.123Z-zeta-0.pb.gz",	     "20231114T221320.123Z-zeta-1.pb.gz",
		"20231114T221320.124Z-alpha-0.pb.gz",	     "20231114T221325.123Z-b-0.pb.gz",
		"20231114T221421.123Z-web_api_v2_x-0.pb.gz",
	};
	char names[16][256], base[256], path[4096];
	struct spool_entry *v;
	struct spool *s;
	size_t n, i;

	s = open_spool(0);
	/* written out of time order, and twice for one service in one millisecond */
	write_one(s, "b", T0 + 5 * NS, 10, base, sizeof(base));
	cr_assert_str_eq(base, expect[3]);
	write_one(s, "web api/v2\"x", T0 + 61 * NS, 10, base, sizeof(base));
	cr_assert_str_eq(base, expect[4]);
	write_one(s, "zeta", T0, 10, base, sizeof(base));
	cr_assert_str_eq(base, expect[0]);
	write_one(s, "alpha", T0 + 1000000, 10, base, sizeof(base));
	cr_assert_str_eq(base, expect[2]);
	write_one(s, "zeta", T0 + 999, 10, base, sizeof(base));
	cr_assert_str_eq(base, expect[1]);

	/* `ls` order is time order; every profile has its sidecar next to it */
	n = list_dir(spooldir, false, names, 16);
	cr_assert_eq(n, 10);
	for (i = 0; i < 5; i++) {
		char json[256];

		snprintf(json, sizeof(json), "%.*s.json", (int)(strlen(expect[i]) - 6), expect[i]);
		cr_assert_str_eq(names[2 * i], json);
		cr_assert_str_eq(names[2 * i + 1], expect[i]);
	}
	cr_assert_eq(spool_list(s, &v, &n, 0), 0);
	cr_assert_eq(n, 5);
	for (i = 0; i < n; i++) {
		cr_assert_eq(strncmp(v[i].stem, expect[i], strlen(v[i].stem)), 0, "%s", v[i].stem);
		cr_assert_str_eq(expect[i] + strlen(v[i].stem), ".pb.gz");
		if (i)
			cr_assert_geq(v[i].from_ns, v[i - 1].from_ns);
	}
	cr_assert_eq(v[0].from_ns, 1700000000123000000LL, "from the name, to the millisecond");
	cr_assert_eq(spool_profile_path(s, v[4].stem, path, sizeof(path)), 0);
	cr_assert(exists(spooldir, strrchr(path, '/') + 1));
	cr_assert_eq(spool_profile_path(s, v[4].stem, path, 10), -ENAMETOOLONG);
	free(v);
	spool__free(s);
}

Test(spool, pair_is_atomic_and_sidecar_reads_back)
{
	const char *stem = "20231114T221320.123Z-shop-0";
	const char *raw_expect =
		"{\"version\":1,\"service\":\"shop\",\"from_ns\":1700000000123456789,"
		"\"until_ns\":1700000010123456789,\"sample_rate\":19,\"period_ns\":52631578,"
		"\"spy_name\":\"rubyprofd\",\"labels\":{\"service_name\":\"shop\",\"host\":\"h1\"},"
		"\"profile\":\"20231114T221320.123Z-shop-0.pb.gz\",\"bytes\":1000}\n";
	const char *py_expect =
		"{\"bytes\": 1000, \"from_ns\": 1700000000123456789, \"labels\": {\"host\": "
		"\"h1\", "
		"\"service_name\": \"shop\"}, \"period_ns\": 52631578, \"profile\": "
		"\"20231114T221320.123Z-shop-0.pb.gz\", \"sample_rate\": 19, \"service\": "
		"\"shop\", "
		"\"spy_name\": \"rubyprofd\", \"until_ns\": 1700000010123456789, \"version\": 1}";
	char path[4096], sidecar[4096], *raw, *py, *prof;
	struct spool_stats st;
	struct stat sb;
	size_t len;
	struct spool *s = open_spool(1 << 20);

	write_one(s, "shop", T0, 1000, NULL, 0);
	cr_assert_eq(count_dot_files(spooldir), 0, "no temporary file left");

	cr_assert_eq(spool_sidecar_path(s, stem, sidecar, sizeof(sidecar)), 0);
	raw = slurp(sidecar, &len);
	cr_assert_str_eq(raw, raw_expect);
	py = python_json(sidecar);
	cr_assert_str_eq(py, py_expect);

	cr_assert_eq(spool_profile_path(s, stem, path, sizeof(path)), 0);
	prof = slurp(path, NULL);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(prof[i], (char)(i * 7), "profile byte %d", i);
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_size, 1000);
	cr_assert_eq(sb.st_mode & 07777, 0640);
	cr_assert_eq(stat(sidecar, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0640);

	spool_stats(s, &st);
	cr_assert_eq(st.files, 1);
	cr_assert_eq(st.bytes, 1000 + len);
	cr_assert_eq(st.written, 1);
	cr_assert_eq(st.write_errors, 0);
	free(raw);
	free(py);
	free(prof);
	spool__free(s);
}

Test(spool, json_escaping)
{
	/* quotes, backslash, controls, DEL, a stray byte, good UTF-8, a surrogate, an overlong, a
	 * sequence cut at the end */
	const char *value =
		"q\"b\\s\n\t\x01\x7f\xff \xc3\xa9 \xf0\x9f\x98\x80 \xed\xa0\x80 \xc0\xaf "
		"\xe2\x82";
	const char *raw_value =
		"\"q\\\"b\\\\s\\n\\t\\u0001\\u007f\\ufffd \xc3\xa9 \xf0\x9f\x98\x80 "
		"\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\"";
	const char *py_value = "\"q\\\"b\\\\s\\n\\t\\u0001\\u007f\\ufffd \\u00e9 \\ud83d\\ude00 "
			       "\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\"";
	struct spool_label labels[] = {{"k\"\r\x1f", value}};
	struct spool_meta m = meta("caf\xc3\xa9 \"1\"", T0);
	char path[4096], sidecar[4096], expect[1024], *raw, *py;
	struct spool *s = open_spool(0);

	m.labels = labels;
	m.nlabels = 1;
	cr_assert_eq(spool_write(s, &m, "x", 1, path, sizeof(path)), 0);
	/* the name keeps [A-Za-z0-9._-] only; the sidecar keeps the service as given */
	cr_assert_str_eq(strrchr(path, '/') + 1, "20231114T221320.123Z-caf____1_-0.pb.gz");
	cr_assert_eq(
		spool_sidecar_path(s, "20231114T221320.123Z-caf____1_-0", sidecar, sizeof(sidecar)),
		0);
	raw = slurp(sidecar, NULL);
	snprintf(expect, sizeof(expect), "\"labels\":{\"k\\\"\\r\\u001f\":%s}", raw_value);
	cr_assert_not_null(strstr(raw, expect), "%s\nnot in\n%s", expect, raw);
	cr_assert_not_null(strstr(raw, "\"service\":\"caf\xc3\xa9 \\\"1\\\"\""), "%s", raw);

	py = python_json(sidecar);
	snprintf(expect, sizeof(expect), "\"labels\": {\"k\\\"\\r\\u001f\": %s}", py_value);
	cr_assert_not_null(strstr(py, expect), "%s\nnot in\n%s", expect, py);
	cr_assert_not_null(strstr(py, "\"service\": \"caf\\u00e9 \\\"1\\\"\""), "%s", py);
	free(raw);
	free(py);
	spool__free(s);
}

Test(spool, evicts_oldest_pairs_for_bytes)
{
	char first[256], names[32][256];
	struct spool_entry *v;
	struct spool_stats st;
	uint64_t pair;
	struct spool *s;
	size_t n;

	s = open_spool(0);
	/* same digit counts everywhere: every pair has the same size */
	write_one(s, "shop", T0, 1000, first, sizeof(first));
	spool_stats(s, &st);
	pair = st.bytes;
	spool_set_bounds(s, 3 * pair + pair / 2, 0);
	for (int i = 1; i < 6; i++)
		write_one(s, "shop", T0 + i * NS, 1000, NULL, 0);

	spool_stats(s, &st);
	cr_assert_eq(st.files, 3);
	cr_assert_eq(st.bytes, 3 * pair);
	cr_assert_eq(st.written, 6);
	cr_assert_eq(st.evicted_bytes, 3);
	cr_assert_eq(st.evicted_age, 0);
	cr_assert_not(exists(spooldir, first));
	cr_assert_eq(spool_list(s, &v, &n, 0), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(v[0].stem, "20231114T221323.123Z-shop-0", "the three newest stay");
	cr_assert_str_eq(v[2].stem, "20231114T221325.123Z-shop-0");
	cr_assert_eq(v[0].bytes, pair);
	cr_assert_eq(list_dir(spooldir, true, names, 32), 6, "three whole pairs on disk");
	free(v);

	/* lowering the bound at run time applies at once */
	spool_set_bounds(s, pair, 0);
	spool_stats(s, &st);
	cr_assert_eq(st.files, 1);
	cr_assert_eq(st.evicted_bytes, 5);
	cr_assert_eq(list_dir(spooldir, true, names, 32), 2);
	cr_assert_str_eq(names[1], "20231114T221325.123Z-shop-0.pb.gz");
	spool__free(s);
}

Test(spool, refuses_a_write_larger_than_the_bound)
{
	struct spool_meta m = meta("shop", T0);
	char big[2000] = {0}, names[4][256], path[64] = "unchanged";
	struct spool_stats st;
	struct spool *s = open_spool(1500);

	write_one(s, "shop", T0, 100, NULL, 0);
	cr_assert_eq(spool_write(s, &m, big, sizeof(big), path, sizeof(path)), -EFBIG);
	cr_assert_str_eq(path, "");
	spool_stats(s, &st);
	cr_assert_eq(st.refused_too_big, 1);
	cr_assert_eq(st.files, 1, "the spool is not emptied for a write that cannot fit");
	cr_assert_eq(st.evicted_bytes, 0);
	cr_assert_eq(st.written, 1);
	cr_assert_eq(list_dir(spooldir, true, names, 4), 2);
	spool__free(s);
}

Test(spool, evicts_by_age_on_write_expire_and_new_bounds)
{
	int64_t now = now_ns(), h = 3600 * NS;
	struct spool_entry *v;
	struct spool_stats st;
	char names[32][256];
	struct spool *s;
	size_t n;

	s = open_spool(0);
	write_one(s, "a", now - 3 * h, 10, NULL, 0);
	write_one(s, "b", now - 2 * h, 10, NULL, 0);
	write_one(s, "c", now - h / 2, 10, NULL, 0);
	write_one(s, "d", now - h / 6, 10, NULL, 0);

	/* a new max_age (SIGHUP) applies at once: the two older than an hour go */
	spool_set_bounds(s, 0, h);
	spool_stats(s, &st);
	cr_assert_eq(st.evicted_age, 2);
	cr_assert_eq(st.files, 2);

	/* 45 minutes later "c" (started 30 minutes ago) is older than an hour, "d" is not */
	cr_assert_eq(spool_expire(s, now + 3 * h / 4), 0);
	spool_stats(s, &st);
	cr_assert_eq(st.evicted_age, 3);
	cr_assert_eq(st.evicted_bytes, 0);
	cr_assert_eq(spool_list(s, &v, &n, 0), 0);
	cr_assert_eq(n, 1);
	cr_assert_not_null(strstr(v[0].stem, "-d-0"));
	free(v);

	/* a write expires too: an old pair written now is gone at the next write */
	write_one(s, "e", now - 2 * h, 10, NULL, 0);
	spool_stats(s, &st);
	cr_assert_eq(st.files, 2);
	write_one(s, "f", now, 10, NULL, 0);
	spool_stats(s, &st);
	cr_assert_eq(st.evicted_age, 4);
	cr_assert_eq(st.files, 2);
	cr_assert_eq(list_dir(spooldir, true, names, 32), 4);
	cr_assert_not_null(strstr(names[0], "-d-0."));
	cr_assert_not_null(strstr(names[2], "-f-0."));
	spool__free(s);
}

Test(spool, restart_keeps_files_and_counts)
{
	struct spool_entry *v1, *v2;
	struct spool_stats a, b;
	char base[256];
	struct spool *s;
	size_t n1, n2;

	s = open_spool(1 << 20);
	write_one(s, "shop", T0, 300, NULL, 0);
	write_one(s, "shop", T0 + NS, 500, NULL, 0);
	write_one(s, "cart", T0 + 2 * NS, 700, NULL, 0);
	spool_stats(s, &a);
	cr_assert_eq(spool_list(s, &v1, &n1, 0), 0);
	spool__free(s);

	s = spool__new(spooldir, 1 << 20, 0, NULL, 0);
	cr_assert_not_null(s, "spool__new again: %s", strerror(errno));
	spool_stats(s, &b);
	cr_assert_eq(b.files, 3);
	cr_assert_eq(b.bytes, a.bytes);
	cr_assert_eq(b.written, 0, "counters are per process");
	cr_assert_eq(b.temp_removed + b.orphans_removed + b.evicted_bytes + b.evicted_age, 0);
	cr_assert_eq(spool_list(s, &v2, &n2, 0), 0);
	cr_assert_eq(n2, n1);
	for (size_t i = 0; i < n1; i++) {
		cr_assert_str_eq(v2[i].stem, v1[i].stem);
		cr_assert_eq(v2[i].from_ns, v1[i].from_ns);
		cr_assert_eq(v2[i].bytes, v1[i].bytes);
	}
	/* the same service and millisecond after a restart takes the next free name */
	write_one(s, "shop", T0, 10, base, sizeof(base));
	cr_assert_str_eq(base, "20231114T221320.123Z-shop-1.pb.gz");
	free(v1);
	free(v2);
	spool__free(s);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

Test(spool, startup_removes_temporaries_and_half_pairs)
{
	char names[16][256];
	struct spool_stats st;
	struct spool *s = open_spool(0);

	write_one(s, "shop", T0, 100, NULL, 0);
	spool__free(s);
	/* a crash between the two renames, a crash mid-write, a profile whose sidecar was deleted,
	 * and files that are not the spool's */
	put_file(spooldir, "20231114T221321.000Z-shop-0.json", "{\"version\":1}\n");
	put_file(spooldir, ".tmp-4242-7", "half a profi");
	put_file(spooldir, "20231114T221322.000Z-shop-0.pb.gz", "profile");
	put_file(spooldir, "README", "mine");
	put_file(spooldir, "20231399T221322.000Z-shop-0.pb.gz", "not a date");
	put_file(spooldir, ".keep", "");

	s = open_spool(0);
	spool_stats(s, &st);
	cr_assert_eq(st.temp_removed, 1);
	cr_assert_eq(st.orphans_removed, 2);
	cr_assert_eq(st.files, 1);
	cr_assert_eq(list_dir(spooldir, true, names, 16), 5);
	cr_assert_str_eq(names[0], ".keep");
	cr_assert_str_eq(names[1], "20231114T221320.123Z-shop-0.json");
	cr_assert_str_eq(names[2], "20231114T221320.123Z-shop-0.pb.gz");
	cr_assert_str_eq(names[3], "20231399T221322.000Z-shop-0.pb.gz");
	cr_assert_str_eq(names[4], "README");
	spool__free(s);
}

Test(spool, list_and_remove)
{
	struct spool_entry *v;
	struct spool_stats st;
	char names[16][256];
	struct spool *s;
	size_t n;

	s = open_spool(0);
	cr_assert_eq(spool_list(s, &v, &n, 0), 0);
	cr_assert_eq(n, 0);
	cr_assert_null(v);
	write_one(s, "a", T0, 10, NULL, 0);
	write_one(s, "b", T0 + NS, 20, NULL, 0);
	write_one(s, "c", T0 + 2 * NS, 30, NULL, 0);
	cr_assert_eq(spool_list(s, &v, &n, 0), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(spool_remove(s, v[1].stem), 0);
	cr_assert_eq(spool_remove(s, v[1].stem), -ENOENT);
	cr_assert_eq(spool_remove(s, "../etc/passwd"), -ENOENT);
	spool_stats(s, &st);
	cr_assert_eq(st.files, 2);
	cr_assert_eq(st.bytes, v[0].bytes + v[2].bytes);
	cr_assert_eq(list_dir(spooldir, true, names, 16), 4);
	cr_assert_not_null(strstr(names[0], "-a-0."));
	cr_assert_not_null(strstr(names[2], "-c-0."));
	free(v);
	spool__free(s);
}

Test(spool, index_has_a_maximum)
{
	char names[16][256];
	struct spool_stats st;
	struct spool *s = open_spool(0);

	spool_set_max_files(s, 3);
	for (int i = 0; i < 5; i++)
		write_one(s, "shop", T0 + i * NS, 10, NULL, 0);
	spool_stats(s, &st);
	cr_assert_eq(st.files, 3);
	cr_assert_eq(st.evicted_files, 2);
	cr_assert_eq(list_dir(spooldir, true, names, 16), 6);
	cr_assert_str_eq(names[0], "20231114T221322.123Z-shop-0.json");
	spool_set_max_files(s, 1);
	spool_stats(s, &st);
	cr_assert_eq(st.files, 1);
	cr_assert_eq(st.evicted_files, 4);
	spool__free(s);
}

Test(spool, creates_the_directory_and_locks_it)
{
	char deep[512];
	struct spool *s, *s2;
	struct stat sb;

	snprintf(deep, sizeof(deep), "%s/a/b/spool", tmpdir);
	s = spool__new(deep, 0, 0, NULL, 0);
	cr_assert_not_null(s, "spool__new: %s", strerror(errno));
	cr_assert_str_eq(spool_dir(s), deep);
	cr_assert_eq(stat(deep, &sb), 0);
	cr_assert(S_ISDIR(sb.st_mode));
	cr_assert_eq(sb.st_mode & 07777, 0750);
	s2 = spool__new(deep, 0, 0, NULL, 0);
	cr_assert_null(s2, "a second spool on the same directory");
	cr_assert_eq(errno, EBUSY);
	spool__free(s);
	s2 = spool__new(deep, 0, 0, NULL, 0);
	cr_assert_not_null(s2, "free releases the directory: %s", strerror(errno));
	spool__free(s2);
	spool__free(NULL);

	put_file(tmpdir, "file", "x");
	snprintf(deep, sizeof(deep), "%s/file/spool", tmpdir);
	cr_assert_null(spool__new(deep, 0, 0, NULL, 0));
	cr_assert_eq(errno, ENOTDIR);
}

Test(spool, rejects_bad_meta)
{
	struct spool_label many[SPOOL_MAX_LABELS + 1];
	struct spool_meta m;
	char names[4][256];
	struct spool *s;

	char keys[SPOOL_MAX_LABELS + 1][8];

	for (int i = 0; i <= SPOOL_MAX_LABELS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		many[i] = (struct spool_label){keys[i], "v"};
	}
	s = open_spool(0);
	m = meta("", T0);
	cr_assert_eq(spool_write(s, &m, "x", 1, NULL, 0), -EINVAL);
	m = meta("shop", T0);
	m.until_ns = T0 - 1;
	cr_assert_eq(spool_write(s, &m, "x", 1, NULL, 0), -EINVAL);
	m = meta("shop", -1);
	cr_assert_eq(spool_write(s, &m, "x", 1, NULL, 0), -EINVAL);
	m = meta("shop", T0);
	m.labels = many;
	m.nlabels = SPOOL_MAX_LABELS + 1;
	cr_assert_eq(spool_write(s, &m, "x", 1, NULL, 0), -EINVAL);
	/* a key given twice: the sidecar would be a JSON object with a duplicate key */
	many[1].key = "k0";
	m.nlabels = 2;
	cr_assert_eq(spool_write(s, &m, "x", 1, NULL, 0), -EINVAL);
	many[1].key = keys[1];
	m.nlabels = SPOOL_MAX_LABELS;
	cr_assert_eq(spool_write(s, &m, "x", 1, NULL, 0), 0);
	m = meta("shop", T0);
	cr_assert_eq(spool_write(s, &m, "x", 1, names[0], 10), -ENAMETOOLONG);
	cr_assert_eq(list_dir(spooldir, true, names, 4), 2);
	spool__free(s);
}

/* A 64 KiB tmpfs under tmpdir holding the spool directory; skips when it cannot be mounted. */
static void mount_small_fs(void)
{
	if (mount("none", tmpdir, "tmpfs", 0, "size=64k")) {
		cr_skip_test(
			"cannot mount a 64 KiB tmpfs on %s (%s): the full-disk paths need root",
			tmpdir, strerror(errno));
	}
	mounted = true;
}

Test(spool, full_disk_evicts_the_oldest_and_retries)
{
	char first[256], second[256], names[32][256];
	struct spool_stats st;
	struct spool *s;
	size_t i, n;

	mount_small_fs();
	s = open_spool(1 << 20);
	/* 12000 bytes + a sidecar take 4 of the 16 pages: the fifth pair cannot fit */
	write_one(s, "shop", T0, 12000, first, sizeof(first));
	write_one(s, "shop", T0 + NS, 12000, second, sizeof(second));
	for (i = 2; i < 8; i++) {
		write_one(s, "shop", T0 + (int64_t)i * NS, 12000, NULL, 0);
		spool_stats(s, &st);
		if (st.evicted_bytes)
			break;
	}
	cr_assert_lt(i, 8, "the file system never filled up");
	cr_assert_eq(st.evicted_bytes, 1, "one pair evicted, then the retry succeeded");
	cr_assert_eq(st.write_errors, 0);
	cr_assert_eq(st.files, i);
	cr_assert_not(exists(spooldir, first));
	cr_assert(exists(spooldir, second));
	n = list_dir(spooldir, true, names, 32);
	cr_assert_eq(n, 2 * i, "whole pairs only, no temporary file");
	spool__free(s);
}

Test(spool, full_disk_that_stays_full_leaves_nothing)
{
	struct spool_meta m = meta("big", T0 + 100 * NS);
	char names[32][256], path[4096] = "unchanged";
	struct spool_stats st;
	static char big[200000];
	struct spool *s;
	size_t n;
	int err;

	mount_small_fs();
	s = open_spool(1 << 20);
	write_one(s, "shop", T0, 8000, NULL, 0);
	write_one(s, "shop", T0 + NS, 8000, NULL, 0);
	err = spool_write(s, &m, big, sizeof(big), path, sizeof(path));
	cr_assert_eq(err, -ENOSPC, "%s", strerror(-err));
	cr_assert_str_eq(path, "");
	spool_stats(s, &st);
	cr_assert_eq(st.write_errors, 1);
	cr_assert_eq(st.evicted_bytes, 1, "evicted once before the one retry");
	cr_assert_eq(st.files, 1);
	n = list_dir(spooldir, true, names, 32);
	cr_assert_eq(n, 2, "the remaining pair, nothing of the failed write");
	cr_assert_str_eq(names[0], "20231114T221321.123Z-shop-0.json");
	cr_assert_str_eq(names[1], "20231114T221321.123Z-shop-0.pb.gz");

	/* the spool works again once there is room */
	write_one(s, "shop", T0 + 2 * NS, 8000, NULL, 0);
	spool__free(s);
}

/* ---- a directory only root can change (safepath.h) --------------------------------------------- */

static void spool_refused(const char *dir, const char *why)
{
	char err[8192];

	cr_assert_null(spool__new(dir, 0, 0, err, sizeof(err)), "%s: accepted", dir);
	cr_assert_eq(errno, EPERM, "%s", strerror(errno));
	cr_assert_str_eq(err, why);
}

Test(spool, a_directory_others_can_write_is_refused)
{
	char why[8192];
	struct spool *s;

	cr_assert_eq(mkdir(spooldir, 0700), 0);
	cr_assert_eq(chmod(spooldir, 0777), 0);
	snprintf(why, sizeof(why),
		 "'%s' (owner root, mode 0777) can be changed by a user other than root", spooldir);
	spool_refused(spooldir, why);
	cr_assert_eq(chmod(spooldir, 0770), 0);
	snprintf(why, sizeof(why),
		 "'%s' (owner root, mode 0770) can be changed by a user other than root", spooldir);
	spool_refused(spooldir, why);
	/* sticky or not: whoever can create a file in the spool could have it shipped */
	cr_assert_eq(chmod(spooldir, 01777), 0);
	snprintf(why, sizeof(why),
		 "'%s' (owner root, mode 1777) can be changed by a user other than root", spooldir);
	spool_refused(spooldir, why);
	cr_assert_eq(chmod(spooldir, 0750), 0);
	s = spool__new(spooldir, 0, 0, why, sizeof(why));
	cr_assert_not_null(s, "%s", why);
	spool__free(s);
}

Test(spool, a_directory_of_another_user_is_refused)
{
	char why[8192];

	if (geteuid() != 0)
		cr_skip_test("chown needs root");
	cr_assert_eq(mkdir(spooldir, 0750), 0);
	cr_assert_eq(chown(spooldir, 65534, 65534), 0);
	snprintf(why, sizeof(why),
		 "'%s' (owner nobody, mode 0750) can be changed by a user other than root",
		 spooldir);
	spool_refused(spooldir, why);
}

/* A new spool under a directory others can write: created (0750, root's), then refused. */
Test(spool, a_directory_above_others_can_write_is_refused)
{
	char why[8192];

	cr_assert_eq(chmod(tmpdir, 0777), 0);
	snprintf(why, sizeof(why),
		 "'%s': the directory '%s' (owner root, mode 0777) can be changed by a user other "
		 "than root",
		 spooldir, tmpdir);
	spool_refused(spooldir, why);
}

/* A link or a FIFO named as a profile is neither followed nor read: left alone, counted. */
Test(spool, startup_leaves_links_and_fifos_alone)
{
	char target[512], link_path[512], fifo[512], names[16][256];
	struct spool_stats st;
	struct spool *s;
	char *text;
	size_t len;

	s = open_spool(0);
	write_one(s, "shop", T0, 100, NULL, 0);
	spool__free(s);
	put_file(tmpdir, "secret", "root's secret");
	snprintf(target, sizeof(target), "%s/secret", tmpdir);
	snprintf(link_path, sizeof(link_path), "%s/20231114T221321.000Z-shop-0.pb.gz", spooldir);
	cr_assert_eq(symlink(target, link_path), 0);
	put_file(spooldir, "20231114T221321.000Z-shop-0.json", "{\"version\":1}\n");
	snprintf(fifo, sizeof(fifo), "%s/20231114T221322.000Z-shop-0.json", spooldir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	put_file(spooldir, "20231114T221322.000Z-shop-0.pb.gz", "profile");

	s = open_spool(0);
	spool_stats(s, &st);
	cr_assert_eq(st.not_regular, 2);
	cr_assert_eq(st.files, 1);
	/* their other halves are half pairs */
	cr_assert_eq(st.orphans_removed, 2);
	cr_assert_eq(list_dir(spooldir, true, names, 16), 4);
	cr_assert_str_eq(names[2], "20231114T221321.000Z-shop-0.pb.gz");
	cr_assert_str_eq(names[3], "20231114T221322.000Z-shop-0.json");
	text = slurp(target, &len);
	cr_assert_str_eq(text, "root's secret");
	free(text);
	spool__free(s);
}
