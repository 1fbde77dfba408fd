// SPDX-License-Identifier: GPL-2.0-only
/* Frame interning, stack counting, the table bound, and the hash map under them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../aggread.h"
#include "lib/hmap.h"
#include "profile/aggregate.h"
#include "view/pprofread.h"

Test(hmap, put_get_grow_clear)
{
	struct hmap h = {0};
	uint64_t v, i;

	for (i = 0; i < 10000; i++)
		cr_assert_eq(hmap_put(&h, i, i * 3, i + 7), 0);
	cr_assert_eq(h.len, 10000);
	for (i = 0; i < 10000; i++) {
		cr_assert(hmap_get(&h, i, i * 3, &v));
		cr_assert_eq(v, i + 7);
	}
	cr_assert_not(hmap_get(&h, 1, 4, &v));
	cr_assert_eq(hmap_put(&h, 5, 15, 99), 0);
	cr_assert_eq(h.len, 10000);
	cr_assert(hmap_get(&h, 5, 15, &v));
	cr_assert_eq(v, 99);
	hmap_clear(&h);
	cr_assert_not(hmap_get(&h, 5, 15, &v));
}

struct sum {
	uint64_t count, stacks;
};

static void add_up(void *ctx, const struct aggregate_stack *st)
{
	struct sum *s = ctx;

	s->count += (uint64_t)st->values[0];
	s->stacks++;
}

static struct aggregate_proc *proc(struct aggregate *a, pid_t pid, const char *service)
{
	struct aggregate_proc_info info = {.pid = pid, .nspid = pid, .service = service};
	struct aggregate_proc *p = aggregate_proc__new(a, &info);

	cr_assert_not_null(p);
	return p;
}

/* An aggregate with one process ("shop", pid 1) and its one frame. */
static struct aggregate *shop_one_frame(struct aggregate_proc **p, uint32_t *fp)
{
	struct aggregate *a = aggregate__new(2, 100);

	cr_assert_not_null(a);
	*p = proc(a, 1, "shop");
	*fp = aggregate_frame_id(*p, AGG_FRAME_RUBY, "x", "/x.rb", 1, 2);
	return a;
}

static const int64_t ONE[2] = {1, 10}, TWO[2] = {2, 20}, FOUR[2] = {4, 40};

Test(aggregate, frames_are_interned_per_process)
{
	struct aggregate *a = aggregate__new(2, 100);
	struct aggregate_proc *p = proc(a, 1, "app"), *q = proc(a, 2, "app");
	uint32_t x, y, z;

	x = aggregate_frame_id(p, AGG_FRAME_RUBY, "foo", "/a.rb", 1, 10);
	y = aggregate_frame_id(p, AGG_FRAME_RUBY, "foo", "/a.rb", 1, 10);
	z = aggregate_frame_id(p, AGG_FRAME_RUBY, "foo", "/a.rb", 1, 11);
	cr_assert_neq(x, 0);
	cr_assert_eq(x, y);
	cr_assert_neq(x, z);
	/* the same name as a C function is another frame */
	cr_assert_neq(aggregate_frame_id(p, AGG_FRAME_CFUNC, "foo", "/a.rb", 1, 10), x);
	cr_assert_str_eq(aggregate_frame_get(p, z)->name, "foo");
	cr_assert_eq(aggregate_frame_get(p, z)->line, 11);
	cr_assert_null(aggregate_frame_get(p, 0));
	/* another process has its own table */
	cr_assert_null(aggregate_frame_get(q, z));
	cr_assert_eq(aggregate_frame_id(q, AGG_FRAME_RUBY, "bar", "/b.rb", 1, 1), 1);
	aggregate__free(a);
}

Test(aggregate, stacks_are_counted_per_thread)
{
	struct aggregate *a = aggregate__new(2, 100);
	struct aggregate_proc *p = proc(a, 10, "app");
	uint32_t f[3];
	struct sum s = {0};

	f[0] = aggregate_frame_id(p, AGG_FRAME_RUBY, "leaf", "/a.rb", 1, 2);
	f[1] = aggregate_frame_id(p, AGG_FRAME_RUBY, "mid", "/a.rb", 5, 6);
	f[2] = aggregate_frame_id(p, AGG_FRAME_RUBY, "<main>", "/a.rb", 0, 9);
	cr_assert_eq(aggregate_add(a, p, 10, "ruby", f, 3, ONE), 0);
	cr_assert_eq(aggregate_add(a, p, 10, "ruby", f, 3, TWO), 0);
	cr_assert_eq(aggregate_add(a, p, 11, "worker", f, 3, ONE), 0);	 /* another thread */
	cr_assert_eq(aggregate_add(a, p, 10, "ruby", f + 1, 2, ONE), 0); /* another stack */
	cr_assert_eq(aggregate_nstacks(a), 3);
	cr_assert_eq(aggregate_total(a), 5);
	aggregate_foreach(a, add_up, &s);
	cr_assert_eq(s.count, 5);
	cr_assert_eq(s.stacks, 3);
	aggregate__free(a);
}

Test(aggregate, full_table_counts_drops)
{
	struct aggregate *a = aggregate__new(2, 2);
	struct aggregate_proc *p = proc(a, 1, "");
	uint32_t f = aggregate_frame_id(p, AGG_FRAME_RUBY, "x", "", 0, 0);
	struct aggregate_stats st;

	cr_assert_eq(aggregate_add(a, p, 1, "", &f, 1, ONE), 0);
	cr_assert_eq(aggregate_add(a, p, 2, "", &f, 1, ONE), 0);
	cr_assert_eq(aggregate_add(a, p, 3, "", &f, 1, FOUR), -ENOSPC);
	aggregate_stats(a, &st);
	cr_assert_eq(st.dropped_full, 4);
	/* existing stacks still count */
	cr_assert_eq(aggregate_add(a, p, 1, "", &f, 1, ONE), 0);
	cr_assert_eq(aggregate_total(a), 3);
	aggregate__free(a);
}

Test(aggregate, many_stacks)
{
	struct aggregate *a = aggregate__new(2, 1u << 20);
	struct aggregate_proc *p = proc(a, 1, "");
	uint32_t f[2];
	struct sum s = {0};
	int i;

	f[1] = aggregate_frame_id(p, AGG_FRAME_RUBY, "root", "/r.rb", 0, 1);
	for (i = 0; i < 5000; i++) {
		f[0] = (uint32_t)(i % 1000) + 1000; /* ids need not be interned for counting */
		cr_assert_eq(aggregate_add(a, p, i / 1000, "t", f, 2, ONE), 0);
	}
	cr_assert_eq(aggregate_nstacks(a), 5000);
	aggregate_foreach(a, add_up, &s);
	cr_assert_eq(s.count, 5000);
	aggregate__free(a);
}

/* An interval ends: counts go, frames stay; an exited process goes after its last interval. */
Test(aggregate, cut_keeps_frames_and_frees_exited)
{
	struct aggregate *a = aggregate__new(2, 100);
	struct aggregate_proc *p = proc(a, 1, "a"), *q = proc(a, 2, "b");
	uint32_t fp = aggregate_frame_id(p, AGG_FRAME_RUBY, "x", "/x.rb", 1, 2);
	uint32_t fq = aggregate_frame_id(q, AGG_FRAME_RUBY, "y", "/y.rb", 1, 2);
	struct aggregate_stats st;

	cr_assert_eq(aggregate_add(a, p, 1, "", &fp, 1, ONE), 0);
	cr_assert_eq(aggregate_add(a, q, 2, "", &fq, 1, TWO), 0);
	aggregate_proc_exit(a, q);
	/* its stacks are still in this interval */
	cr_assert_eq(aggregate_total(a), 3);
	aggregate_stats(a, &st);
	cr_assert_eq(st.procs, 2);
	aggregate_cut(a);
	aggregate_stats(a, &st);
	cr_assert_eq(aggregate_total(a), 0);
	cr_assert_eq(aggregate_nstacks(a), 0);
	cr_assert_eq(st.procs, 1);
	cr_assert_eq(st.procs_freed, 1);
	/* p's frames are still interned under the same id */
	cr_assert_eq(aggregate_frame_id(p, AGG_FRAME_RUBY, "x", "/x.rb", 1, 2), fp);
	cr_assert_eq(aggregate_add(a, p, 1, "", &fp, 1, ONE), 0);
	cr_assert_eq(aggregate_total(a), 1);
	aggregate__free(a);
}

struct count_svc {
	uint64_t n;
};

Test(aggregate, pprof_per_service)
{
	struct aggregate *a = aggregate__new(2, 100);
	struct aggregate_proc *p = proc(a, 1, "shop"), *q = proc(a, 2, "jobs");
	uint32_t fp = aggregate_frame_id(p, AGG_FRAME_RUBY, "x", "/x.rb", 1, 2);
	uint32_t fq = aggregate_frame_id(q, AGG_FRAME_RUBY, "y", "/y.rb", 1, 2);
	struct pprof *pp = pprof__new();
	uint8_t *out = NULL;
	size_t len = 0;

	cr_assert_eq(aggregate_add(a, p, 1, "", &fp, 1, ONE), 0);
	cr_assert_eq(aggregate_add(a, q, 2, "", &fq, 1, TWO), 0);
	cr_assert_eq(aggregate_to_pprof(a, pp, "shop", 0), 0);
	cr_assert_eq(pprof_encode(pp, 0, &out, &len), 0);
	/* only shop's frame is in it */
	cr_assert_not_null(memmem(out, len, "/x.rb", 5));
	cr_assert_null(memmem(out, len, "/y.rb", 5));
	free(out);
	pprof__free(pp);
	aggregate__free(a);
}

/* Thread names are sample labels, unless the caller asks for none (profiles for Pyroscope). */
Test(aggregate, pprof_thread_names)
{
	struct aggregate_proc *p;
	uint32_t fp;
	struct aggregate *a = shop_one_frame(&p, &fp);
	unsigned int flags[] = {0, AGG_PPROF_NO_THREAD_NAME};

	cr_assert_eq(aggregate_add(a, p, 1, "puma srv tp 001", &fp, 1, ONE), 0);
	for (int i = 0; i < 2; i++) {
		struct pprof *pp = pprof__new();
		uint8_t *out = NULL;
		size_t len = 0;

		cr_assert_eq(aggregate_to_pprof(a, pp, NULL, flags[i]), 0);
		cr_assert_eq(pprof_encode(pp, 0, &out, &len), 0);
		cr_assert_eq(memmem(out, len, "thread_name", 11) != NULL, i == 0);
		cr_assert_eq(memmem(out, len, "puma srv tp 001", 15) != NULL, i == 0);
		/* the numeric labels stay */
		cr_assert_not_null(memmem(out, len, "tid", 3));
		free(out);
		pprof__free(pp);
	}
	aggregate__free(a);
}

/*
 * Ruby threads sharing one native thread (M:N) are counted apart and labelled with their
 * identity and name, read back by a pprof decoder; AGG_PPROF_NO_THREAD_NAME drops them as it
 * drops thread_name.
 */
Test(aggregate, pprof_ruby_threads)
{
	struct aggregate_proc *p;
	uint32_t fp;
	struct aggregate *a = shop_one_frame(&p, &fp);
	struct aggregate_thread t1 = {7, "ruby", "0x1000", "worker-1", NULL, NULL, NULL, 0},
				t2 = {7, "ruby", "0x2000", "", NULL, NULL, NULL, 0};
	unsigned int flags[] = {0, AGG_PPROF_NO_THREAD_NAME};
	const struct pprofread_profile *prof;
	const struct pprofread_sample *s;

	cr_assert_eq(aggregate_add_thread(a, p, &t1, &fp, 1, ONE), 0);
	cr_assert_eq(aggregate_add_thread(a, p, &t2, &fp, 1, ONE), 0);
	cr_assert_eq(aggregate_add_thread(a, p, &t1, &fp, 1, ONE), 0);
	cr_assert_eq(aggregate_nstacks(a), 2);
	for (int i = 0; i < 2; i++) {
		struct pprofread *r = aggread(a, flags[i], false);
		size_t j;

		prof = pprofread_profile(r);
		cr_assert_eq(prof->nsamples, 2);
		for (j = 0; j < prof->nsamples; j++) {
			const char *id, *name;

			s = &prof->samples[j];
			id = aggread_label(r, s, "ruby_thread");
			name = aggread_label(r, s, "ruby_thread_name");
			if (i == 1) {
				cr_assert_null(id);
				cr_assert_null(name);
				continue;
			}
			cr_assert_not_null(id);
			if (s->values[0] == 2) {
				cr_assert_str_eq(id, "0x1000");
				cr_assert_str_eq(name, "worker-1");
			} else {
				/* an unnamed thread has no name label */
				cr_assert_str_eq(id, "0x2000");
				cr_assert_null(name);
			}
		}
		pprofread__free(r);
	}
	aggregate__free(a);
}

/* Wall-clock samples: a stack per thread state, each with its thread_state label; the sample
 * and period types say wall/nanoseconds. */
Test(aggregate, pprof_thread_state)
{
	struct aggregate_proc *p;
	uint32_t fp;
	struct aggregate *a = shop_one_frame(&p, &fp);
	struct aggregate_thread run = {7, "ruby", "0x1000", "", "running", NULL, NULL, 0},
				io = {7, "ruby", "0x1000", "", "blocked_io", "poll", NULL, 0},
				cpu = {7, "ruby", "0x1000", "", NULL, NULL, NULL, 0};
	const int64_t wall[2] = {1, 50000000};
	const struct pprofread_profile *prof;
	struct pprofread *r;
	size_t j;
	int seen = 0;

	cr_assert_eq(aggregate_add_thread(a, p, &run, &fp, 1, wall), 0);
	cr_assert_eq(aggregate_add_thread(a, p, &io, &fp, 1, wall), 0);
	cr_assert_eq(aggregate_add_thread(a, p, &run, &fp, 1, wall), 0);
	cr_assert_eq(aggregate_add_thread(a, p, &cpu, &fp, 1, ONE), 0);
	cr_assert_eq(aggregate_nstacks(a), 3);
	r = aggread(a, AGG_PPROF_NO_THREAD_NAME, true);
	prof = pprofread_profile(r);
	cr_assert_eq(prof->nsample_types, 2);
	cr_assert_str_eq(prof->strings[prof->sample_types[1].type], "wall");
	cr_assert_str_eq(prof->strings[prof->sample_types[1].unit], "nanoseconds");
	cr_assert_str_eq(prof->strings[prof->period_type.type], "wall");
	cr_assert_eq(prof->nsamples, 3);
	for (j = 0; j < prof->nsamples; j++) {
		const struct pprofread_sample *s = &prof->samples[j];
		const char *state = aggread_label(r, s, "thread_state");

		if (!state) {
			seen |= 1; /* the cpu-clock sample has none */
		} else if (strcmp(state, "running") == 0) {
			cr_assert_null(aggread_label(r, s, "syscall"));
			cr_assert_eq(s->values[0], 2);
			cr_assert_eq(s->values[1], 100000000);
			seen |= 2;
		} else {
			cr_assert_str_eq(state, "blocked_io");
			cr_assert_str_eq(aggread_label(r, s, "syscall"), "poll");
			cr_assert_eq(s->values[1], 50000000);
			seen |= 4;
		}
	}
	cr_assert_eq(seen, 7);
	pprofread__free(r);
	aggregate__free(a);
}
