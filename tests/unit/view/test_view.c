// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_view.c - rubyprofd report's merged view: profiles written by our writer (pprof.c) with
 * known stacks and labels, read back through pprofread, merged, filtered, and written as folded
 * stacks, top, speedscope and SVG, whose text is checked.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../aggread.h"
#include "lib/fileio.h"
#include "profile/pprof.h"
#include "../tmpdir.h"
#include "view/pprofread.h"
#include "view/report.h"
#include "view/view.h"

#define T0 1700000000000000000LL

/*
 * pid 10, tid 11 "worker": 5 x main;work;Integer#times [c]
 * pid 10, tid 12 "main":   3 x main;work
 * pid 20, tid 21 "other":  2 x main;(garbage collection)
 */
static struct pprofread *make_profile(int64_t time_ns)
{
	struct pprof *p = pprof__new();
	uint64_t mr, mc, mm, fmain, fwork, ftimes, fgc, lmain, lwork, ltimes, lgc;

	cr_assert_not_null(p);
	pprof_set_time(p, time_ns, 10000000000LL);
	mr = pprof_mapping(p, 0, 0, 0, "[ruby]", "");
	mc = pprof_mapping(p, 0, 0, 0, "[ruby cfunc]", "");
	mm = pprof_mapping(p, 0, 0, 0, "[rubyprofd]", "");
	fmain = pprof_function(p, "main", "", "/app/a.rb", 1);
	fwork = pprof_function(p, "work", "", "/app/a.rb", 5);
	ftimes = pprof_function(p, "Integer#times", "", "", 0);
	fgc = pprof_function(p, "(garbage collection)", "", "", 0);
	lmain = pprof_location(p, mr, 0, fmain, 2);
	lwork = pprof_location(p, mr, 0, fwork, 7);
	ltimes = pprof_location(p, mc, 0, ftimes, 0);
	lgc = pprof_location(p, mm, 0, fgc, 0);
	{
		const uint64_t s1[] = {ltimes, lwork, lmain}, s2[] = {lwork, lmain},
			       s3[] = {lgc, lmain};
		const int64_t v1[2] = {5, 50}, v2[2] = {3, 30}, v3[2] = {2, 20};
		const struct pprof_label l1[] = {{.key = "pid", .num = 10},
						 {.key = "tid", .num = 11},
						 {.key = "thread_name", .str = "worker"},
						 {.key = "ruby_thread", .str = "0x1000"},
						 {.key = "ruby_thread_name", .str = "rt-alpha"}};
		const struct pprof_label l2[] = {{.key = "pid", .num = 10},
						 {.key = "tid", .num = 12},
						 {.key = "thread_name", .str = "main"}};
		const struct pprof_label l3[] = {{.key = "pid", .num = 20},
						 {.key = "tid", .num = 21},
						 {.key = "container_id", .str = "abc"}};

		cr_assert_eq(pprof_add_sample(p, s1, 3, v1, l1, 5), 0);
		cr_assert_eq(pprof_add_sample(p, s2, 2, v2, l2, 3), 0);
		cr_assert_eq(pprof_add_sample(p, s3, 2, v3, l3, 3), 0);
	}
	return pprof_reread(p, 1);
}

/* The view of the profile(s) with filter f, written as format into a string. */
static char *render(const struct view_filter *f, const char *format, int nfiles, int64_t *times)
{
	char err[256], *text = NULL;
	size_t len = 0;
	struct view *v = view__new(f, err, sizeof(err));
	struct pprofread *r;
	FILE *out;
	int i;

	cr_assert_not_null(v, "%s", err);
	for (i = 0; i < nfiles; i++) {
		r = make_profile(times ? times[i] : T0);
		cr_assert_geq(view_add_profile(v, r, "mem", err, sizeof(err)), 0, "%s", err);
		pprofread__free(r);
	}
	cr_assert_eq(view_finish(v), 0);
	out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cr_assert_eq(view_write(v, format, out, "test", 10), 0);
	fclose(out);
	view__free(v);
	return text;
}

/* The collapsed view of one file, filtered by f, is want. */
static void collapsed_is(const struct view_filter *f, const char *want)
{
	char *t = render(f, "collapsed", 1, NULL);

	cr_assert_str_eq(t, want);
	free(t);
}

Test(view, collapsed_merged_and_sorted)
{
	struct view_filter f = {0};
	char *t = render(&f, "collapsed", 1, NULL);

	cr_assert_str_eq(t, "main;(garbage collection) 2\n"
			    "main;work 3\n"
			    "main;work;Integer#times 5\n");
	free(t);
	t = render(&f, "collapsed", 2, NULL);
	cr_assert_str_eq(t, "main;(garbage collection) 4\n"
			    "main;work 6\n"
			    "main;work;Integer#times 10\n");
	free(t);
}

Test(view, filters)
{
	struct view_filter f = {.pid = 20};
	char *t;

	collapsed_is(&f, "main;(garbage collection) 2\n");

	memset(&f, 0, sizeof(f));
	f.thread = "worker";
	collapsed_is(&f, "main;work;Integer#times 5\n");
	f.thread = "12";
	collapsed_is(&f, "main;work 3\n");
	/* a Ruby thread, by its Thread#name or its identity (M:N threads share a tid) */
	f.thread = "rt-alpha";
	collapsed_is(&f, "main;work;Integer#times 5\n");
	f.thread = "0x1000";
	collapsed_is(&f, "main;work;Integer#times 5\n");

	memset(&f, 0, sizeof(f));
	f.label_key[0] = "container_id";
	f.label_val[0] = "abc";
	f.nlabels = 1;
	collapsed_is(&f, "main;(garbage collection) 2\n");

	memset(&f, 0, sizeof(f));
	f.focus = "times$";
	collapsed_is(&f, "main;work;Integer#times 5\n");
	f.focus = "a\\.rb";
	t = render(&f, "collapsed", 1, NULL);
	cr_assert_not_null(strstr(t, "main;work 3\n"), "%s", t);
	free(t);
}

Test(view, time_range)
{
	int64_t times[2] = {T0, T0 + 3600000000000LL};
	struct view_filter f = {.since_ns = T0 + 1800000000000LL};
	char *t = render(&f, "collapsed", 2, times);

	/* only the second file (an hour later) is in the range */
	cr_assert_str_eq(t, "main;(garbage collection) 2\n"
			    "main;work 3\n"
			    "main;work;Integer#times 5\n");
	free(t);
	f.since_ns = 0;
	f.until_ns = T0 + 5000000000LL; /* inside the first file's 10 s */
	t = render(&f, "collapsed", 2, times);
	cr_assert_str_eq(t, "main;(garbage collection) 2\n"
			    "main;work 3\n"
			    "main;work;Integer#times 5\n");
	free(t);
}

Test(view, bad_focus)
{
	struct view_filter f = {.focus = "(unclosed"};
	char err[256];

	cr_assert_null(view__new(&f, err, sizeof(err)));
	cr_assert_not_null(strstr(err, "--focus '(unclosed'"), "%s", err);
}

Test(view, top_reuses_the_summary)
{
	struct view_filter f = {.want_top = true};
	char *t = render(&f, "top", 1, NULL);

	cr_assert_not_null(strstr(t, "10 samples in 1 profile"), "%s", t);
	cr_assert_not_null(strstr(t, "50.0%   50.0%        5  Integer#times [c]"), "%s", t);
	cr_assert_not_null(strstr(t, "30.0%   80.0%        3  work  /app/a.rb"), "%s", t);
	free(t);
	f.by_line = true;
	t = render(&f, "top", 1, NULL);
	cr_assert_not_null(strstr(t, "work  /app/a.rb:7"), "%s", t);
	free(t);
}

Test(view, speedscope_and_svg)
{
	struct view_filter f = {0};
	char *t = render(&f, "speedscope", 1, NULL);

	cr_assert_not_null(strstr(t, "\"type\":\"sampled\""), "%s", t);
	cr_assert_not_null(strstr(t, "\"weights\":[2,3,5]"), "%s", t);
	cr_assert_not_null(strstr(t, "{\"name\":\"work\",\"file\":\"/app/a.rb\",\"line\":5}"), "%s",
			   t);
	free(t);
	t = render(&f, "svg", 1, NULL);
	cr_assert_not_null(
		strstr(t, "data-name=\"Integer#times\" data-kind=\"cfunc\" data-samples=\"5\""),
		"%s", t);
	cr_assert_not_null(strstr(t, "data-kind=\"gc\" data-samples=\"2\""), "%s", t);
	free(t);
	t = render(&f, "flamegraph", 1, NULL);
	cr_assert_not_null(strstr(t, "window.__PROFILE={\"title\":\"test\",\"total\":10"), "%.200s",
			   t);
	cr_assert_null(strstr(t, "/*@PROFILE@*/"));
	free(t);
}

/* ---- view files: never through a link, not readable by others (fileio.h) ----------------------- */

static void file_setup(void)
{
	tmpdir_make("test_view");
	cr_redirect_stderr();
}

static void file_teardown(void)
{
	tmpdir_remove();
}

/* SVG text stays XML whatever it holds: bytes that are not UTF-8, and U+FFFE, as U+FFFD (a title
 * from a path was written raw: the document did not parse; found by fuzz_text). */
Test(view, xml_text_is_xml)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	view_put_xml_text(f, "a<b&\"c\x01\x80\xc3\xa9\xef\xbf\xbe");
	fclose(f);
	cr_assert_str_eq(buf, "a&lt;b&amp;&quot;c \xef\xbf\xbd\xc3\xa9\xef\xbf\xbd");
	free(buf);
}

TestSuite(viewfile, .init = file_setup, .fini = file_teardown);

/* tmpdir/name (the caller frees it). */
static char *in_tmp(const char *name)
{
	char *p;

	cr_assert_neq(asprintf(&p, "%s/%s", tmpdir, name), -1);
	return p;
}

/* A profile as --oneshot writes it: tmpdir/prof.pb.gz. */
static char *write_profile(void)
{
	struct pprof *p = pprof__new();
	char *path = in_tmp("prof.pb.gz");
	uint64_t m, f, l;
	const int64_t v[2] = {3, 30};

	cr_assert_not_null(p);
	pprof_set_time(p, T0, 10000000000LL);
	m = pprof_mapping(p, 0, 0, 0, "[ruby]", "");
	f = pprof_function(p, "main", "", "/app/a.rb", 1);
	l = pprof_location(p, m, 0, f, 2);
	cr_assert_eq(pprof_add_sample(p, &l, 1, v, NULL, 0), 0);
	cr_assert_eq(pprof_write_file(p, path), 0);
	pprof__free(p);
	return path;
}

static char *text_of(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = calloc(1, 4096);

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_not_null(s);
	cr_assert_geq(fread(s, 1, 4095, f), 0);
	fclose(f);
	return s;
}

static int report(const char *format, const char *out, const char *in)
{
	char *argv[] = {"report", "-f", (char *)format, "-o", (char *)out, (char *)in, NULL};

	return report_main(6, argv);
}

/* A link at the output is refused (rubyprofd report exits 1); its target stays as it was. */
Test(viewfile, a_link_at_the_output_is_never_followed)
{
	char *prof = write_profile(), *victim = in_tmp("victim"), *out = in_tmp("out.txt");
	char *beside = in_tmp("prof.svg"), *t, path[4096], err[512];
	FILE *f = fopen(victim, "w");
	struct stat st;

	cr_assert_not_null(f);
	fputs("precious", f);
	fclose(f);
	cr_assert_eq(symlink(victim, out), 0);
	cr_assert_eq(report("collapsed", out, prof), 1);
	cr_assert_eq(symlink(victim, beside), 0);
	cr_assert_eq(report_write_beside(prof, "svg", NULL, path, sizeof(path), err, sizeof(err)),
		     -ELOOP);
	cr_assert_str_eq(path, beside);
	cr_assert(strstr(err, "a symbolic link is there (never followed)"), "%s", err);
	t = text_of(victim);
	cr_assert_str_eq(t, "precious");
	free(t);
	cr_assert_eq(lstat(out, &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	cr_assert_eq(lstat(beside, &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	free(prof);
	free(victim);
	free(out);
	free(beside);
}

/* 0640 with the umask at 0 (the code's own mode), over an existing 0644 file too. */
Test(viewfile, views_are_not_readable_by_others)
{
	char *prof, *out = in_tmp("out.txt"), *beside = in_tmp("prof.html");
	char *t, path[4096], err[512];
	struct stat st;

	umask(0);
	prof = write_profile();
	cr_assert_eq(report("collapsed", out, prof), 0);
	cr_assert_eq(stat(out, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	t = text_of(out);
	cr_assert_str_eq(t, "main 3\n");
	free(t);
	cr_assert_eq(chmod(out, 0644), 0);
	cr_assert_eq(report("collapsed", out, prof), 0);
	cr_assert_eq(stat(out, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	cr_assert_eq(
		report_write_beside(prof, "flamegraph", NULL, path, sizeof(path), err, sizeof(err)),
		0, "%s", err);
	cr_assert_str_eq(path, beside);
	cr_assert_eq(stat(beside, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	/* the profile itself */
	cr_assert_eq(stat(prof, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640, "mode %o", st.st_mode & 07777);
	free(prof);
	free(out);
	free(beside);
}

/* The readers' fileio_read_file: the bytes and a NUL after them; a link refused only with
 * FILEIO_NOFOLLOW; a FIFO refused at once (never waited on); the bound to the byte, also for a
 * file that holds more than fstat says. */
Test(viewfile, files_are_read_whole_and_bounded)
{
	char *file = in_tmp("f"), *link = in_tmp("l"), *fifo = in_tmp("p");
	uint8_t *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(file, "w");

	cr_assert_not_null(f);
	fputs("0123456789", f);
	fclose(f);
	cr_assert_eq(symlink(file, link), 0);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(fileio_read_file(file, FILEIO_NOFOLLOW, 10, &buf, &len), 0);
	cr_assert_eq(len, 10);
	cr_assert_str_eq((char *)buf, "0123456789");
	free(buf);
	buf = NULL;
	cr_assert_eq(fileio_read_file(file, 0, 9, &buf, &len), -EFBIG);
	cr_assert_null(buf);
	cr_assert_eq(fileio_read_file(link, FILEIO_NOFOLLOW, 10, &buf, &len), -ELOOP);
	cr_assert_eq(fileio_read_file(link, 0, 10, &buf, &len), 0);
	cr_assert_eq(len, 10);
	free(buf);
	buf = NULL;
	/* fstat says 0 bytes of a /proc file: read on past it, up to the bound */
	cr_assert_eq(fileio_read_file("/proc/self/status", 0, 1 << 16, &buf, &len), 0);
	cr_assert_gt(len, 100);
	cr_assert_eq(strlen((char *)buf), len);
	cr_assert(strstr((char *)buf, "\nPid:"));
	free(buf);
	buf = NULL;
	cr_assert_eq(fileio_read_file("/proc/self/status", 0, 16, &buf, &len), -EFBIG);
	cr_assert_eq(fileio_read_file(fifo, 0, 10, &buf, &len), -EINVAL);
	cr_assert_eq(fileio_read_file(tmpdir, 0, 10, &buf, &len), -EINVAL);
	cr_assert_null(buf);
	free(file);
	free(link);
	free(fifo);
}
