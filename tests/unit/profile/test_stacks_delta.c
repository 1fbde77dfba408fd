// SPDX-License-Identifier: GPL-2.0-only
/*
 * The reuse of frame ids by stacks.c for a delta stack (the root end it shares with the CPU's
 * last stack): the profile is the same as when every frame is looked up, the shared frames are
 * not looked up again, and nothing is reused across processes, samples or a failed name. The
 * process is a fake address space (tests/fuzz/fakemem.h) laid out as Ruby 3.1 lays it out.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../../fuzz/fakemem.h"
#include "../offsets_row.h"
#include "profile/stacks.h"

#define DEPTH 12

static struct fakemem_image img;
static struct ruby_target target;

static struct stacks *setup(struct aggregate **agg)
{
	struct stacks *c;

	cr_assert_eq(fakemem_build(&img, offsets_row("3.1.0")), 0);
	fakemem_map_image(&img);
	*agg = aggregate__new(2, 64);
	cr_assert_not_null(*agg);
	c = stacks__new(*agg, 10000000);
	cr_assert_not_null(c);
	memset(&target, 0, sizeof(target));
	target.pid = FAKEMEM_PID;
	target.nspid = FAKEMEM_PID;
	target.off = img.off;
	target.symbols = img.roots[FAKEMEM_SYMBOLS];
	snprintf(target.version, sizeof(target.version), "3.1.2");
	cr_assert_eq(stacks_add(c, &target, "test", NULL), 0);
	return c;
}

/* Ruby frames of the image's block and C function frames of its method entry (leaf first). */
static void frames(struct rp_frame *f, size_t n)
{
	size_t i;

	memset(f, 0, n * sizeof(*f));
	for (i = 0; i < n; i++) {
		if (i % 3 == 1) {
			f[i].addr = img.roots[FAKEMEM_ME];
			f[i].info = RP_FRAME_KIND_CFUNC << RP_FRAME_KIND_SHIFT;
		} else {
			f[i].addr = img.roots[FAKEMEM_ISEQ];
			f[i].info =
				RP_FRAME_KIND_ISEQ << RP_FRAME_KIND_SHIFT | img.roots[FAKEMEM_PC];
			f[i].ep = img.roots[FAKEMEM_EP];
		}
	}
}

/* Sample seq of CPU 1, a delta of sample base with nshared frames at the root end (0: whole). */
static void feed(struct stacks *c, struct rp_frame *f, uint32_t seq, uint32_t base, size_t nshared,
		 pid_t pid)
{
	struct rp_sample s;
	struct sampler_stack st = {.first = &s, .frames = f, .nframes = DEPTH, .nshared = nshared};

	memset(&s, 0, sizeof(s));
	s.hdr.pid = (uint32_t)pid;
	s.hdr.tid = (uint32_t)pid;
	s.hdr.weight = 1;
	s.cpu = 1;
	s.seq = seq;
	s.base_seq = base;
	stacks_on_stack(c, &st);
}

struct seen {
	size_t stacks;
	int64_t samples;
	size_t n;
	char root[64]; /* name of the root frame */
};

static void count(void *ctx, const struct aggregate_stack *st)
{
	struct seen *s = ctx;

	s->stacks++;
	s->samples += st->values[0];
	s->n = st->nframes;
	snprintf(s->root, sizeof(s->root), "%s",
		 aggregate_frame_get(st->proc, st->frames[st->nframes - 1])->name);
}

static uint64_t reused(struct stacks *c)
{
	struct stacks_stats stats;

	stacks_stats(c, &stats);
	return stats.frames_reused;
}

/* A delta of the last stack: the shared frames keep their ids, and it is the same stack. */
Test(stacks_delta, shared_frames_reuse_their_ids)
{
	struct rp_frame f[DEPTH];
	struct seen seen = {0};
	struct aggregate *agg;
	struct stacks *c = setup(&agg);

	frames(f, DEPTH);
	feed(c, f, 1, 0, 0, FAKEMEM_PID);
	cr_assert_eq(reused(c), 0);
	/* the leaf changed (the same frame again here): all but the leaf-most shared frame reuse */
	feed(c, f, 2, 1, DEPTH - 1, FAKEMEM_PID);
	cr_assert_eq(reused(c), DEPTH - 2);
	/* the same stack again: every frame */
	feed(c, f, 3, 2, DEPTH, FAKEMEM_PID);
	cr_assert_eq(reused(c), DEPTH - 2 + DEPTH);
	aggregate_foreach(agg, count, &seen);
	cr_assert_eq(seen.stacks, 1, "%zu stacks: a delta resolved otherwise", seen.stacks);
	cr_assert_eq(seen.samples, 3);
	cr_assert_eq(seen.n, DEPTH);
	cr_assert(strncmp(seen.root, "block in ", 9) == 0, "root frame \"%s\"", seen.root);
	stacks__free(c);
	aggregate__free(agg);
}

/* A delta of another sample than the one kept, or of another process: looked up afresh. */
Test(stacks_delta, other_base_or_process_is_not_reused)
{
	struct rp_frame f[DEPTH];
	struct aggregate *agg;
	struct stacks *c = setup(&agg);

	frames(f, DEPTH);
	feed(c, f, 1, 0, 0, FAKEMEM_PID);
	feed(c, f, 3, 2, DEPTH, FAKEMEM_PID); /* sample 2 was lost */
	cr_assert_eq(reused(c), 0);
	stacks_remove(c, FAKEMEM_PID);
	cr_assert_eq(stacks_add(c, &target, "test", NULL), 0);
	feed(c, f, 4, 3, DEPTH, FAKEMEM_PID); /* a new process with that pid */
	cr_assert_eq(reused(c), 0);
	stacks__free(c);
	aggregate__free(agg);
}

/* A frame that could not be named is looked up again (it may be named later), never reused. */
Test(stacks_delta, unnamed_frame_is_not_reused)
{
	struct rp_frame f[DEPTH];
	struct stacks_stats stats;
	struct aggregate *agg;
	struct stacks *c = setup(&agg);

	frames(f, DEPTH);
	/* the root frame is no iseq ("[unknown Ruby frame]"): nothing is cached from the root */
	f[DEPTH - 1].addr = fakemem_base(3) + 0x10000;
	feed(c, f, 1, 0, 0, FAKEMEM_PID);
	feed(c, f, 2, 1, DEPTH, FAKEMEM_PID);
	cr_assert_eq(reused(c), 0);
	stacks_stats(c, &stats);
	cr_assert_eq(stats.frames_failed, 2, "the unnamed frame was not looked up again");
	stacks__free(c);
	aggregate__free(agg);
}
