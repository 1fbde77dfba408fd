// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon/ruby/rthreads.c on a fake address space (tests/fuzz/fakemem.h): for every row of
 * daemon/ruby/offsets.c, rb_thread_t structs laid out with that row (self, name) are turned into
 * labels (on the rows of versions no end-to-end test runs, self-consistency only: offsets_row.h); pointers that are not a live Ruby thread are refused and counted; a rename
 * is seen in the next interval, a young unnamed thread's first name at once; the cache keeps its
 * bound.
 */
#include <criterion/criterion.h>
#include <unistd.h>

#include "../../fuzz/fakemem.h"
#include "../offsets_row.h"
#include "ruby/rthreads.h"

static struct fakemem_image img;

static void start(unsigned int row)
{
	const struct ruby_offsets *rows;
	unsigned int nrows;

	rows = offsets_all(&nrows);
	memset(&img, 0, sizeof(img));
	img.row = row % nrows;
	img.off = &rows[img.row];
}

/* A Ruby thread: its rb_thread_t (in FM_STRUCT) and its Thread object, a T_DATA pointing back. */
static uint64_t fm_thread(uint64_t name)
{
	uint64_t th = fm_alloc(&img, FM_STRUCT, 512), self = fm_alloc(&img, FM_OBJ, 40);

	fm_w64(&img, self, 0x0c);
	fm_w64(&img, self + 32, th);
	fm_w64(&img, th + img.off->th_self, self);
	if (img.off->th_name)
		fm_w64(&img, th + img.off->th_name, name);
	return th;
}

/* What the test's thread reader counts (each test runs in a process of its own). */
static struct rthread_stats stats;

/* Maps the image and opens a thread reader over it, counting into stats. */
static struct rthreads *open_threads(void)
{
	struct rthreads *r;

	cr_assert_not(img.overflow);
	fakemem_map_image(&img);
	r = rthreads__new(FAKEMEM_PID, img.off, &stats);
	cr_assert_not_null(r);
	return r;
}

static void names_and_identities(bool tested)
{
	const struct rthread_label *lab;
	const struct ruby_offsets *o;
	uint64_t named, unnamed, nil;
	unsigned int row, n = 0;
	struct rthreads *r;
	char want[32];

	for (row = 0; (o = offsets_row_next(tested, &row)); row++) {
		n++;
		start(row);
		/* nil, or any special constant: no name */
		nil = 0x08;
		named = fm_thread(fm_string(&img, "worker-1"));
		unnamed = fm_thread(nil);
		r = open_threads();
		cr_assert_eq(rthreads_get(r, named, &lab), 0, "%s", offsets_row_what(o));
		snprintf(want, sizeof(want), "0x%llx", (unsigned long long)named);
		cr_assert_str_eq(lab->id, want);
		/* the versions whose rb_thread_t.name offset is known (checked on a live Ruby) */
		cr_assert_str_eq(lab->name, img.off->th_name ? "worker-1" : "", "%s: \"%s\"",
				 offsets_row_what(o), lab->name);
		cr_assert_eq(rthreads_get(r, unnamed, &lab), 0);
		cr_assert_str_eq(lab->name, "");
		cr_assert_str_neq(lab->id, want);
		rthreads__free(r);
	}
	cr_assert_gt(n, 0);
	cr_assert_eq(stats.invalid, 0);
	cr_assert_eq(stats.name_failed, 0);
}

Test(rthread, names_and_identities_of_the_tested_versions)
{
	names_and_identities(true);
}

/* 2.6, 3.0, 3.2, 4.0: the threads are laid out from the row they are read with (offsets_row.h) */
Test(rthread, names_and_identities_of_the_others_self_consistency_only)
{
	names_and_identities(false);
}

Test(rthread, the_measured_versions_know_the_name)
{
	const struct ruby_offsets *rows;
	unsigned int nrows = 0, i, known = 0;
	bool exact;

	static const char *const measured[] = {"2.7.4", "3.1.2", "3.3.8", "3.4.11"};
	for (i = 0; i < 4; i++)
		cr_assert_neq(offsets_find(measured[i], &exact)->th_name, 0, "%s", measured[i]);
	rows = offsets_all(&nrows);
	for (i = 0; i < nrows; i++)
		known += rows[i].th_name != 0;
	cr_assert_geq(known, 4);
}

Test(rthread, not_a_thread_is_refused_and_counted)
{
	const struct rthread_label *lab;
	uint64_t th, other, str;
	struct rthreads *r;

	start(3); /* 3.1 */
	th = fm_thread(0x08);
	other = fm_thread(0x08);
	/* th's Thread object points at another rb_thread_t: a freed and reused struct */
	fm_w64(&img, fm_r64(&img, th + img.off->th_self) + 32, other);
	str = fm_string(&img, "not a Thread");
	r = open_threads();
	cr_assert_eq(rthreads_get(r, th, &lab), -EINVAL);
	cr_assert_null(lab);
	cr_assert_eq(rthreads_get(r, 0, &lab), -EINVAL);
	cr_assert_eq(rthreads_get(r, 0x123450, &lab), -EINVAL); /* unmapped */
	/* a String where a Thread should be */
	cr_assert_eq(rthreads_get(r, str - img.off->th_self, &lab), -EINVAL);
	cr_assert_eq(stats.invalid, 3);
	/* refused once per interval, not at every sample */
	cr_assert_eq(rthreads_get(r, th, &lab), -EINVAL);
	cr_assert_eq(stats.invalid, 3);
	rthreads_new_epoch(r);
	cr_assert_eq(rthreads_get(r, th, &lab), -EINVAL);
	cr_assert_eq(stats.invalid, 4);
	cr_assert_eq(rthreads_get(r, other, &lab), 0);
	rthreads__free(r);
}

Test(rthread, a_rename_is_seen_next_interval)
{
	const struct rthread_label *lab;
	uint64_t th, name, bad;
	struct rthreads *r;

	start(6); /* 3.4 */
	cr_assert_neq(img.off->th_name, 0);
	th = fm_thread(fm_string(&img, "first"));
	name = fm_string(&img, "renamed");
	bad = fm_alloc(&img, FM_OBJ, 40); /* a heap object that is no String */
	fm_w64(&img, bad, RUBY_T_ARRAY);
	r = open_threads();
	cr_assert_eq(rthreads_get(r, th, &lab), 0);
	cr_assert_str_eq(lab->name, "first");
	fm_w64(&img, th + img.off->th_name, name);
	usleep(RTHREAD_REREAD_NS / 1000 + 5000);
	cr_assert_eq(rthreads_get(r, th, &lab), 0);
	cr_assert_str_eq(lab->name, "first", "a named thread is read once per interval");
	cr_assert_eq(stats.reads, 1);
	rthreads_new_epoch(r);
	cr_assert_eq(rthreads_get(r, th, &lab), 0);
	cr_assert_str_eq(lab->name, "renamed");
	fm_w64(&img, th + img.off->th_name, bad);
	rthreads_new_epoch(r);
	cr_assert_eq(rthreads_get(r, th, &lab), 0);
	cr_assert_str_eq(lab->name, "");
	cr_assert_eq(stats.name_failed, 1);
	rthreads__free(r);
}

/* Thread.new { Thread.current.name = "worker" } sampled before the name is set */
Test(rthread, a_young_thread_named_after_its_first_sight_is_named_at_once)
{
	const struct rthread_label *lab;
	uint64_t th, ended, late, worker, named_late;
	struct rthreads *r;

	start(6);	      /* 3.4 */
	th = fm_thread(0x04); /* nil */
	ended = fm_thread(0x04);
	late = fm_thread(0x04);
	worker = fm_string(&img, "worker");
	named_late = fm_string(&img, "named-late");
	r = open_threads();
	cr_assert_eq(rthreads_get(r, th, &lab), 0);
	cr_assert_str_eq(lab->name, "");
	cr_assert_eq(rthreads_get(r, ended, &lab), 0);
	cr_assert_eq(rthreads_get(r, late, &lab), 0);
	cr_assert_eq(stats.reads, 3);
	fm_w64(&img, th + img.off->th_name, worker);
	/* the thread ends: its Thread object no longer points back */
	fm_w64(&img, ended + img.off->th_self, 0);
	cr_assert_eq(rthreads_get(r, th, &lab), 0);
	cr_assert_str_eq(lab->name, "", "read again every RTHREAD_REREAD_NS at most");
	cr_assert_eq(stats.reads, 3);
	usleep(RTHREAD_REREAD_NS / 1000 + 5000);
	cr_assert_eq(rthreads_get(r, th, &lab), 0);
	cr_assert_str_eq(lab->name, "worker");
	cr_assert_eq(stats.reads, 4);
	/* an ended thread keeps the label its samples had (its last visits may come later) */
	cr_assert_eq(rthreads_get(r, ended, &lab), 0);
	cr_assert_str_eq(lab->name, "");
	cr_assert_eq(stats.reads, 5);
	/* named: not read again; nor an unnamed thread past RTHREAD_YOUNG_NS (until the interval) */
	usleep(RTHREAD_YOUNG_NS / 1000);
	fm_w64(&img, late + img.off->th_name, named_late);
	cr_assert_eq(rthreads_get(r, th, &lab), 0);
	cr_assert_eq(rthreads_get(r, late, &lab), 0);
	cr_assert_str_eq(lab->name, "");
	cr_assert_eq(stats.reads, 5);
	rthreads_new_epoch(r);
	cr_assert_eq(rthreads_get(r, late, &lab), 0);
	cr_assert_str_eq(lab->name, "named-late");
	rthreads__free(r);
}

Test(rthread, the_cache_keeps_its_bound)
{
	const struct rthread_label *lab;
	struct rthreads *r;
	uint64_t i;

	start(3);
	r = open_threads();
	/* unreadable pointers are cached too (refused for the interval) */
	for (i = 1; i <= RTHREAD_MAX_PER_PROC + 10; i++)
		cr_assert_eq(rthreads_get(r, 0x7f0000000000 + i * 8, &lab), -EINVAL);
	cr_assert_eq(stats.resets, 1);
	cr_assert_eq(stats.invalid, RTHREAD_MAX_PER_PROC + 10);
	rthreads__free(r);
}
