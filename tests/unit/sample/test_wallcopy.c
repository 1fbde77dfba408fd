// SPDX-License-Identifier: GPL-2.0-only
/*
 * The daemon's copies of each Ruby thread's last walked stack (wall-clock reuse): a copy is
 * given back only for the sample it came with, a thread's newer stack replaces its older one,
 * the bound evicts in turn and names the thread evicted, processes and stale threads are dropped.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "sample/wallcopy.h"

static void frames_of(struct rp_frame *f, size_t n, uint64_t tag)
{
	size_t i;

	for (i = 0; i < n; i++)
		f[i] = (struct rp_frame){.addr = tag * 1000 + i, .info = i, .ep = tag};
}

Test(wallcopy, gives_back_the_stack_of_its_sample_only)
{
	struct wallcopy *c = wallcopy__new(4);
	const struct wallcopy_entry *e;
	struct rp_frame f[30], g[3];

	cr_assert(c);
	frames_of(f, 30, 1);
	cr_assert_eq(wallcopy_keep(c, 100, 0xa000, 7, 1, f, 30, RP_SAMPLE_GC, 0,
				   "worker 7\0\0\0\0\0\0\0\0", NULL),
		     0);
	e = wallcopy_get(c, 100, 0xa000, 7, 2);
	cr_assert(e);
	cr_assert_eq(e->n, 30);
	/* the thread's name then: the pending visits the daemon sends carry it */
	cr_assert_str_eq(e->comm, "worker 7");
	cr_assert_eq(e->flags, RP_SAMPLE_GC);
	cr_assert_eq(e->run, 2);
	cr_assert_arr_eq(e->frames, f, sizeof(f));
	/* another sample's "same as seq 6": not this copy */
	cr_assert_null(wallcopy_get(c, 100, 0xa000, 6, 2));
	/* the same thread address in another process (a forked child) is another thread */
	cr_assert_null(wallcopy_get(c, 101, 0xa000, 7, 2));
	/* a newer walk replaces the stack */
	frames_of(g, 3, 2);
	cr_assert_eq(wallcopy_keep(c, 100, 0xa000, 9, 3, g, 3, 0, 0, NULL, NULL), 0);
	cr_assert_null(wallcopy_get(c, 100, 0xa000, 7, 3));
	e = wallcopy_get(c, 100, 0xa000, 9, 3);
	cr_assert(e);
	cr_assert_eq(e->n, 3);
	cr_assert_arr_eq(e->frames, g, sizeof(g));
	cr_assert_str_eq(e->comm, "");
	/* an empty stack is a stack */
	cr_assert_eq(wallcopy_keep(c, 100, 0xb000, 10, 3, NULL, 0, 0, 0, NULL, NULL), 0);
	e = wallcopy_get(c, 100, 0xb000, 10, 3);
	cr_assert(e);
	cr_assert_eq(e->n, 0);
	wallcopy__free(c);
}

Test(wallcopy, the_bound_evicts_in_turn_and_names_the_thread)
{
	struct wallcopy *c = wallcopy__new(3);
	struct wallcopy_counters cc;
	struct wallcopy_entry gone;
	struct rp_frame f[2];
	uint64_t th;

	frames_of(f, 2, 3);
	for (th = 1; th <= 3; th++) {
		cr_assert_eq(wallcopy_keep(c, 5, th, (uint32_t)th, 1, f, 2, 0, 0, NULL, &gone), 0);
		cr_assert_eq(gone.pid, 0, "nothing evicted below the bound");
	}
	cr_assert_eq(wallcopy_keep(c, 5, 4, 4, 1, f, 2, 0, 0, NULL, &gone), 0);
	cr_assert_eq(gone.pid, 5);
	cr_assert_eq(gone.th, 1);
	cr_assert_null(wallcopy_get(c, 5, 1, 1, 1));
	cr_assert(wallcopy_get(c, 5, 4, 4, 1));
	cr_assert(wallcopy_get(c, 5, 2, 2, 1));
	/* a thread already kept is replaced in place, evicting nobody */
	cr_assert_eq(wallcopy_keep(c, 5, 2, 12, 1, f, 2, 0, 0, NULL, &gone), 0);
	cr_assert_eq(gone.pid, 0);
	wallcopy_counters(c, &cc);
	cr_assert_eq(cc.evicted, 1);
	cr_assert_eq(cc.entries, 3);
	wallcopy__free(c);
}

static bool drop_pid_or_old(void *ctx, pid_t pid, uint32_t run)
{
	(void)ctx;
	return pid == 7 || run < 5;
}

Test(wallcopy, drops_a_process_and_stale_threads)
{
	struct wallcopy *c = wallcopy__new(8);
	struct wallcopy_counters cc;
	struct rp_frame f[4];

	frames_of(f, 4, 4);
	cr_assert_eq(wallcopy_keep(c, 7, 1, 1, 10, f, 4, 0, 0, NULL, NULL), 0);
	cr_assert_eq(wallcopy_keep(c, 7, 2, 2, 10, f, 4, 0, 0, NULL, NULL), 0);
	cr_assert_eq(wallcopy_keep(c, 8, 1, 3, 1, f, 4, 0, 0, NULL, NULL), 0); /* stale */
	cr_assert_eq(wallcopy_keep(c, 8, 2, 4, 1, f, 4, 0, 0, NULL, NULL), 0);
	cr_assert(wallcopy_get(c, 8, 2, 4, 9)); /* used at run 9: not stale */
	cr_assert_eq(wallcopy_drop_if(c, drop_pid_or_old, NULL), 3);
	cr_assert_null(wallcopy_get(c, 7, 1, 1, 10));
	cr_assert_null(wallcopy_get(c, 8, 1, 3, 10));
	cr_assert(wallcopy_get(c, 8, 2, 4, 10));
	/* the slots emptied are used again, below the bound: no eviction */
	cr_assert_eq(wallcopy_keep(c, 9, 1, 5, 1, f, 4, 0, 0, NULL, NULL), 0);
	cr_assert_eq(wallcopy_keep(c, 9, 2, 6, 1, f, 4, 0, 0, NULL, NULL), 0);
	wallcopy_counters(c, &cc);
	cr_assert_eq(cc.dropped, 3);
	cr_assert_eq(cc.evicted, 0);
	cr_assert_eq(cc.entries, 3);
	wallcopy__free(c);
}

Test(wallcopy, refuses_a_zero_bound)
{
	errno = 0;
	cr_assert_null(wallcopy__new(0));
	cr_assert_eq(errno, EINVAL);
	wallcopy__free(NULL);
}

/* The wall hook's work: a whole stack kept, a later RP_SAMPLE_SAME record of that sample given
 * its frames and visits; one of a sample no copy holds gets none, marked, and its entry named. */
Test(wallcopy, same_records_take_the_kept_stack)
{
	struct wallcopy *c = wallcopy__new(4);
	struct rp_frame fr[2] = {{.addr = 1}, {.addr = 2}};
	struct rp_sample hdr = {.hdr = {.pid = 42}, .seq = 7, .ruby_thread = 0x10};
	struct sampler_stack st = {.first = &hdr, .frames = fr, .nframes = 2};
	struct wallcopy_reuse r;

	wallcopy_on_stack(c, &st, 1, &r);
	cr_assert_eq(r.reused + r.missed, 0);
	cr_assert_eq(r.drop_pid, 0);

	hdr.seq = 8;
	hdr.base_seq = 7;
	hdr.visits = 3;
	st = (struct sampler_stack){.first = &hdr, .flags = RP_SAMPLE_SAME};
	wallcopy_on_stack(c, &st, 1, &r);
	cr_assert_eq(r.reused, 3);
	cr_assert_eq(st.samples, 3);
	cr_assert_eq(st.nframes, 2);
	cr_assert_eq(st.frames[1].addr, 2);
	cr_assert_not(st.flags & RP_SAMPLE_SAME);

	hdr.base_seq = 6;
	st = (struct sampler_stack){.first = &hdr, .flags = RP_SAMPLE_SAME};
	wallcopy_on_stack(c, &st, 1, &r);
	cr_assert_eq(r.missed, 3);
	cr_assert_eq(st.nframes, 0);
	cr_assert(st.flags & RP_SAMPLE_READ_FAIL);
	cr_assert_eq(r.drop_pid, 42);
	cr_assert_eq(r.drop_th, 0x10);
	wallcopy__free(c);
}
