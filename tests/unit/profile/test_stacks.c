// SPDX-License-Identifier: GPL-2.0-only
/*
 * The drop accounting of stacks.c: every sample it receives is either added to the aggregate or
 * counted under a cause. The process is this test itself (a real pid with a real pidfd).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "profile/stacks.h"
#include "ruby/offsets.h"

/* Under AddressSanitizer, a failed allocation must return NULL here, as it does without it. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

static const struct ruby_offsets off;
static struct ruby_target target;

static struct stacks *setup(struct aggregate **agg)
{
	struct stacks *c;

	*agg = aggregate__new(2, 16);
	cr_assert_not_null(*agg);
	c = stacks__new(*agg, 10000000);
	cr_assert_not_null(c);
	target.pid = getpid();
	target.nspid = getpid();
	target.off = &off;
	snprintf(target.version, sizeof(target.version), "3.1.2");
	cr_assert_eq(stacks_add(c, &target, "test", NULL), 0);
	return c;
}

static void sample(struct rp_sample *s, pid_t pid)
{
	memset(s, 0, sizeof(*s));
	s->hdr.pid = (uint32_t)pid;
	s->hdr.tid = (uint32_t)pid;
	s->hdr.weight = 1;
	memcpy(s->comm, "worker", 6);
}

/* A stack too large to hold: dropped, and counted as a failed allocation. */
Test(stacks, dropped_without_memory_is_counted)
{
	struct rp_sample s;
	struct sampler_stack st = {.first = &s, .nframes = SIZE_MAX / 8};
	struct stacks_stats stats;
	struct aggregate *agg;
	struct stacks *c = setup(&agg);

	sample(&s, getpid());
	st.frames = s.frames;
	stacks_on_stack(c, &st);
	stacks_stats(c, &stats);
	cr_assert_eq(stats.stacks, 1);
	cr_assert_eq(stats.dropped_nomem, 1, "the dropped sample was not counted");
	cr_assert_eq(stats.agg_dropped + stats.dropped_error + stats.unknown_pid, 0);

	/* stacks.c still works afterwards: a sample without a Ruby context is added */
	st.nframes = 0;
	st.flags = RP_SAMPLE_NO_EC;
	stacks_on_stack(c, &st);
	stacks_stats(c, &stats);
	cr_assert_eq(stats.stacks, 2);
	cr_assert_eq(stats.no_ec, 1);
	cr_assert_eq(stats.dropped_nomem, 1);
	stacks__free(c);
	aggregate__free(agg);
}

/* A stack of a process that is not kept: counted under unknown_pid, nothing else. */
Test(stacks, unknown_process_is_counted)
{
	struct rp_sample s;
	struct sampler_stack st = {.first = &s, .flags = RP_SAMPLE_NO_EC};
	struct stacks_stats stats;
	struct aggregate *agg;
	struct stacks *c = setup(&agg);

	sample(&s, getpid() + 1);
	stacks_on_stack(c, &st);
	stacks_stats(c, &stats);
	cr_assert_eq(stats.unknown_pid, 1);
	cr_assert_eq(stats.dropped_nomem + stats.agg_dropped + stats.dropped_error, 0);
	stacks__free(c);
	aggregate__free(agg);
}

struct seen {
	const char *ruby_thread, *ruby_thread_name;
	size_t stacks;
};

static void look(void *ctx, const struct aggregate_stack *st)
{
	struct seen *s = ctx;

	s->ruby_thread = st->ruby_thread;
	s->ruby_thread_name = st->ruby_thread_name;
	s->stacks++;
}

/*
 * The sample's rb_thread_t (here in this process's own memory, read as any target's is) becomes
 * the ruby_thread and ruby_thread_name labels; a pointer that is not a Ruby thread gets none, and
 * is counted.
 */
Test(stacks, ruby_thread_labels)
{
	static const struct ruby_offsets o = {
		.th_self = 16, .th_name = 24, .rstring = RSTRING_LEN_FIELD};
	/* a Thread object (T_DATA, data at +32), its rb_thread_t, its name (an embedded String) */
	static uint64_t obj[5], th[4], name[5], junk[5];
	struct rp_sample s;
	struct sampler_stack st = {.first = &s, .flags = RP_SAMPLE_NO_EC};
	struct stacks_stats stats;
	struct seen seen = {0};
	struct aggregate *agg;
	struct stacks *c;
	char want[32];

	obj[0] = 0x0c;
	obj[4] = (uint64_t)(uintptr_t)th;
	th[2] = (uint64_t)(uintptr_t)obj;
	th[3] = (uint64_t)(uintptr_t)name;
	name[0] = 0x05;
	name[2] = 8;
	memcpy(&name[3], "rt-alpha", 8);
	agg = aggregate__new(2, 16);
	c = stacks__new(agg, 10000000);
	target.pid = getpid();
	target.off = &o;
	snprintf(target.version, sizeof(target.version), "3.3.8");
	cr_assert_eq(stacks_add(c, &target, "test", NULL), 0);

	sample(&s, getpid());
	s.ruby_thread = (uint64_t)(uintptr_t)th;
	stacks_on_stack(c, &st);
	aggregate_foreach(agg, look, &seen);
	snprintf(want, sizeof(want), "0x%llx", (unsigned long long)(uintptr_t)th);
	cr_assert_eq(seen.stacks, 1);
	cr_assert_str_eq(seen.ruby_thread, want);
	cr_assert_str_eq(seen.ruby_thread_name, "rt-alpha");

	aggregate_cut(agg);
	s.ruby_thread = (uint64_t)(uintptr_t)junk;
	stacks_on_stack(c, &st);
	seen = (struct seen){0};
	aggregate_foreach(agg, look, &seen);
	cr_assert_eq(seen.stacks, 1);
	cr_assert_str_eq(seen.ruby_thread, "");
	cr_assert_str_eq(seen.ruby_thread_name, "");
	stacks_stats(c, &stats);
	cr_assert_eq(stats.rthread.invalid, 1);
	cr_assert_eq(stats.no_ec, 2);
	stacks__free(c);
	aggregate__free(agg);
}

struct first_frame {
	const struct aggregate_proc *proc;
	uint32_t frame;
	size_t nframes, stacks;
};

static void first_frame(void *ctx, const struct aggregate_stack *st)
{
	struct first_frame *f = ctx;

	f->proc = st->proc;
	f->nframes = st->nframes;
	f->frame = st->nframes ? st->frames[0] : 0;
	f->stacks++;
}

/*
 * A Ruby thread sampled with no control frame (between its start and its first frame, or past
 * its last): its stack read fine but holds nothing. A pprof sample with no location is dropped by
 * pprof's readers (go tool pprof), so the sample gets one frame, the mark, and is counted.
 */
Test(stacks, empty_ruby_stack_is_marked)
{
	struct rp_sample s;
	struct sampler_stack st = {.first = &s};
	struct stacks_stats stats;
	struct first_frame f = {0};
	const struct aggregate_frame *af;
	struct aggregate *agg;
	struct stacks *c = setup(&agg);

	sample(&s, getpid());
	st.frames = s.frames;
	stacks_on_stack(c, &st);
	aggregate_foreach(agg, first_frame, &f);
	cr_assert_eq(f.stacks, 1);
	cr_assert_eq(f.nframes, 1, "an empty Ruby stack kept %zu frames", f.nframes);
	af = aggregate_frame_get(f.proc, f.frame);
	cr_assert_not_null(af);
	cr_assert_str_eq(af->name, "[no Ruby frames]");
	stacks_stats(c, &stats);
	cr_assert_eq(stats.empty_stacks, 1);
	cr_assert_eq(stats.agg_dropped + stats.dropped_nomem + stats.dropped_error, 0);
	stacks__free(c);
	aggregate__free(agg);
}
