// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampler's reassembly of stack records (RP_REC_VERSION 2): chunks root first, deltas of the
 * CPU's previous stack, skipped control frames, and every way a sample can be lost, counted.
 * Records are built here as the BPF side writes them and fed through the real dispatcher.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sampler.h"

#define MAX_FRAMES 4096

/* What the handler saw: the last stack delivered, and how many. */
struct seen {
	int stacks;
	size_t nframes;
	uint32_t flags;
	uint64_t addr[MAX_FRAMES];
	size_t tctx_len; /* the thread context it came with (0: none) */
	uint8_t tctx[RP_TCTX_MAX];
};

static void on_stack(void *ctx, const struct sampler_stack *st)
{
	struct seen *seen = ctx;
	size_t i;

	seen->stacks++;
	seen->nframes = st->nframes;
	seen->flags = st->flags;
	seen->tctx_len = st->tctx ? st->tctx_len : 0;
	if (st->tctx)
		memcpy(seen->tctx, st->tctx, st->tctx_len);
	for (i = 0; i < st->nframes && i < MAX_FRAMES; i++)
		seen->addr[i] = st->frames[i].addr;
}

static struct seen seen;
static struct sampler *s;

static void setup(void)
{
	struct sampler_opts opts = {.frequency = 99, .max_frames = MAX_FRAMES};
	struct sampler_handlers h = {.on_stack = on_stack, .ctx = &seen};

	memset(&seen, 0, sizeof(seen));
	s = sampler__new_offline(&opts, &h, 2);
	cr_assert_not_null(s);
}

static void teardown(void)
{
	sampler__free(s);
}

/* The frame of slot `slot` of stack `gen`: an iseq frame whose address names both. */
static uint64_t addr_of(uint32_t gen, uint32_t slot)
{
	return (uint64_t)gen << 32 | (slot + 1);
}

/*
 * Feeds one record of sample `seq` on CPU 1: slots [first, first + nframes) of a stack of
 * `nslots` slots, each slot's frame from addr_of(gen, slot) (slot % 7 == 3 left empty when
 * `holes`).
 */
static void feed(uint32_t seq, uint16_t chunk, uint32_t first, uint32_t nframes, uint32_t nslots,
		 uint32_t flags, uint32_t base_seq, uint32_t gen, int holes)
{
	size_t size = RP_SAMPLE_HDR_SIZE + (size_t)nframes * sizeof(struct rp_frame);
	struct rp_sample *r = calloc(1, size);
	uint32_t i;

	cr_assert_not_null(r);
	r->hdr.version = RP_REC_VERSION;
	r->hdr.kind = RP_REC_STACK;
	r->hdr.size = (uint32_t)size;
	r->hdr.weight = 1;
	r->hdr.pid = 4242;
	r->cpu = 1;
	r->seq = seq;
	r->flags = flags;
	r->chunk = chunk;
	r->nframes = (uint16_t)nframes;
	r->first = first;
	r->nslots = nslots;
	r->base_seq = base_seq;
	for (i = 0; i < nframes; i++) {
		if (holes && (first + i) % 7 == 3)
			continue;
		r->frames[i].addr = addr_of(gen, first + i);
		r->frames[i].info = RP_FRAME_KIND_ISEQ << RP_FRAME_KIND_SHIFT | 0x1000;
	}
	cr_assert_eq(sampler_feed(s, r, size), 0);
	free(r);
}

static uint64_t incomplete(void)
{
	struct sampler_counters c;

	cr_assert_eq(sampler_counters(s, &c), 0);
	return c.incomplete;
}

/* Leaf first: frame i of the delivered stack is slot nslots - 1 - i. */
static void expect_stack(int stacks, uint32_t nslots, uint32_t lo, uint64_t (*want)(uint32_t slot))
{
	uint32_t slot;
	size_t i = 0;

	cr_assert_eq(seen.stacks, stacks);
	cr_assert_eq(seen.nframes, nslots - lo, "%zu frames, want %u", seen.nframes, nslots - lo);
	for (slot = nslots; slot-- > lo; i++)
		cr_assert_eq(seen.addr[i], want(slot), "frame %zu: %#llx, want %#llx", i,
			     (unsigned long long)seen.addr[i], (unsigned long long)want(slot));
}

static uint64_t gen1(uint32_t slot)
{
	return addr_of(1, slot);
}

/* A delta of gen 1 that changed slots 32 and up: gen 2 there. */
static uint64_t gen1_then_2(uint32_t slot)
{
	return slot < 32 ? addr_of(1, slot) : addr_of(2, slot);
}

/* Sample seq, whole in one record: 40 slots of gen 1. */
static void feed_whole(uint32_t seq)
{
	feed(seq, 0, 0, 40, 40, RP_SAMPLE_LAST, 0, 1, 0);
}

/* Sample seq as a delta of sample base_seq: slots [first, first + nframes) of gen, in one record. */
static void feed_delta(uint32_t seq, uint32_t first, uint32_t nframes, uint32_t nslots,
		       uint32_t base_seq, uint32_t gen)
{
	feed(seq, 0, first, nframes, nslots, RP_SAMPLE_LAST | RP_SAMPLE_DELTA, base_seq, gen, 0);
}

TestSuite(sampler, .init = setup, .fini = teardown);

Test(sampler, whole_stack_is_delivered_leaf_first)
{
	feed_whole(0);
	expect_stack(1, 40, 0, gen1);
	cr_assert_eq(incomplete(), 0);
}

Test(sampler, delta_takes_the_shared_slots_from_the_previous_stack)
{
	feed_whole(0);
	/* deeper now: slots [32, 45) changed, [0, 32) as sample 0 */
	feed_delta(1, 32, 13, 45, 0, 2);
	expect_stack(2, 45, 0, gen1_then_2);
	/* and a delta of that delta */
	feed_delta(2, 32, 13, 45, 1, 2);
	expect_stack(3, 45, 0, gen1_then_2);
	cr_assert_eq(incomplete(), 0);
}

Test(sampler, delta_of_another_base_is_lost_until_a_whole_stack)
{
	feed_whole(0);
	/* the BPF side's base was sample 5, which this reader never had */
	feed_delta(6, 32, 8, 40, 5, 2);
	cr_assert_eq(seen.stacks, 1);
	cr_assert_eq(incomplete(), 1);
	/* the reader has no base any more, even for a delta of sample 0 */
	feed_delta(7, 32, 8, 40, 0, 2);
	cr_assert_eq(seen.stacks, 1);
	cr_assert_eq(incomplete(), 2);
	feed_whole(8);
	expect_stack(2, 40, 0, gen1);
}

Test(sampler, skipped_control_frames_are_left_out)
{
	uint32_t slot;
	size_t n = 0;

	feed(0, 0, 0, 40, 40, RP_SAMPLE_LAST, 0, 1, 1);
	cr_assert_eq(seen.stacks, 1);
	for (slot = 40; slot-- > 0;) {
		if (slot % 7 == 3)
			continue;
		cr_assert_eq(seen.addr[n], addr_of(1, slot));
		n++;
	}
	cr_assert_eq(seen.nframes, n);
}

Test(sampler, chunks_continue_each_other)
{
	feed(0, 0, 0, RP_CHUNK_FRAMES, 1100, 0, 0, 1, 0);
	cr_assert_eq(seen.stacks, 0);
	feed(0, 1, RP_CHUNK_FRAMES, 1100 - RP_CHUNK_FRAMES, 1100, RP_SAMPLE_LAST, 0, 1, 0);
	expect_stack(1, 1100, 0, gen1);
	cr_assert_eq(incomplete(), 0);
}

Test(sampler, a_lost_chunk_loses_the_sample_and_the_base)
{
	feed_whole(0);
	/* sample 1's chunk 1 never came: its chunk 0 rewrote the slots */
	feed(1, 0, 0, RP_CHUNK_FRAMES, 2000, 0, 0, 2, 0);
	feed_delta(2, 32, 8, 40, 0, 2);
	cr_assert_eq(seen.stacks, 1);
	cr_assert_eq(incomplete(), 2);
	/* a chunk that does not start where the previous ended */
	feed(3, 0, 0, RP_CHUNK_FRAMES, 2000, 0, 0, 2, 0);
	feed(3, 1, RP_CHUNK_FRAMES + 16, 2000 - RP_CHUNK_FRAMES - 16, 2000, RP_SAMPLE_LAST, 0, 2,
	     0);
	cr_assert_eq(seen.stacks, 1);
	cr_assert_eq(incomplete(), 3);
}

Test(sampler, a_partial_stack_is_delivered_but_is_no_base)
{
	feed_whole(0);
	/* a read failed at the root end: slots [16, 40) only */
	feed(1, 0, 16, 24, 40, RP_SAMPLE_LAST | RP_SAMPLE_READ_FAIL, 0, 1, 0);
	expect_stack(2, 40, 16, gen1);
	feed_delta(2, 32, 8, 40, 1, 1);
	cr_assert_eq(seen.stacks, 2);
	cr_assert_eq(incomplete(), 1);
}

Test(sampler, a_stackless_sample_keeps_the_base)
{
	feed_whole(0);
	/* a thread without an EC: a header-only record */
	feed(1, 0, 0, 0, 0, RP_SAMPLE_LAST | RP_SAMPLE_NO_EC, 0, 1, 0);
	cr_assert_eq(seen.stacks, 2);
	cr_assert_eq(seen.nframes, 0);
	feed_delta(2, 32, 13, 45, 0, 2);
	expect_stack(3, 45, 0, gen1_then_2);
}

Test(sampler, records_of_another_version_or_malformed_are_counted)
{
	struct sampler_counters c;
	struct rp_sample r;

	memset(&r, 0, sizeof(r));
	r.hdr.version = RP_REC_VERSION - 1;
	r.hdr.kind = RP_REC_STACK;
	r.hdr.size = sizeof(r);
	sampler_feed(s, &r, sizeof(r));
	/* more slots than the frame limit */
	r.hdr.version = RP_REC_VERSION;
	r.nslots = MAX_FRAMES + 1;
	r.flags = RP_SAMPLE_LAST;
	sampler_feed(s, &r, sizeof(r));
	/* frames beyond the record */
	r.nslots = 10;
	r.nframes = 10;
	sampler_feed(s, &r, sizeof(r));
	cr_assert_eq(sampler_counters(s, &c), 0);
	cr_assert_eq(c.bad_records, 3);
	cr_assert_eq(seen.stacks, 0);
}

/* An RP_REC_TCTX record of sample seq on CPU 1 (pid 4242, tid 0) with `attrs` attribute bytes. */
static void feed_tctx(uint32_t seq, uint16_t attrs, size_t size)
{
	struct rp_tctx r;

	memset(&r, 0, sizeof(r));
	r.hdr.version = RP_REC_VERSION;
	r.hdr.kind = RP_REC_TCTX;
	r.hdr.size = (uint32_t)size;
	r.hdr.pid = 4242;
	r.cpu = 1;
	r.seq = seq;
	r.attrs = attrs;
	memset(r.data, 0x5a, sizeof(r.data));
	r.data[24] = 1;
	cr_assert_eq(sampler_feed(s, &r, size), 0);
}

Test(sampler, a_thread_context_goes_with_its_own_sample_only)
{
	struct sampler_counters c;

	feed_tctx(1, 4, RP_TCTX_REC_HDR_SIZE + RP_TCTX_HDR + 4);
	feed_whole(1);
	cr_assert_eq(seen.stacks, 1);
	cr_assert_eq(seen.tctx_len, RP_TCTX_HDR + 4);
	cr_assert_eq(seen.tctx[24], 1);
	cr_assert_eq(seen.tctx[RP_TCTX_HDR + 3], 0x5a);
	/* the next sample has none of its own */
	feed_whole(2);
	cr_assert_eq(seen.tctx_len, 0);
	/* one for sample 5 whose sample was lost: not given to sample 6, counted */
	feed_tctx(5, 0, RP_TCTX_REC_HDR_SIZE + RP_TCTX_HDR);
	feed_whole(6);
	cr_assert_eq(seen.tctx_len, 0);
	cr_assert_eq(sampler_counters(s, &c), 0);
	cr_assert_eq(c.tctx_unpaired, 1);
	cr_assert_eq(c.bad_records, 0);
}

Test(sampler, malformed_thread_contexts_are_counted)
{
	struct sampler_counters c;

	/* a size that is not its attributes', attributes past the record's bound, too short */
	feed_tctx(1, 4, RP_TCTX_REC_HDR_SIZE + RP_TCTX_HDR + 3);
	feed_tctx(1, RP_TCTX_MAX, RP_TCTX_REC_HDR_SIZE + RP_TCTX_HDR);
	feed_tctx(1, 0, RP_TCTX_REC_HDR_SIZE + 4);
	feed_whole(1);
	cr_assert_eq(seen.tctx_len, 0);
	cr_assert_eq(sampler_counters(s, &c), 0);
	cr_assert_eq(c.bad_records, 3);
}
