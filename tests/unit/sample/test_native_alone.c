// SPDX-License-Identifier: GPL-2.0-only
/*
 * The collector's options of mixed stacks: a lone user stack (RP_USTACK_ALONE, a process that is
 * no Ruby, --native-processes) becomes a whole sample, unwound to its root, with the kernel stack
 * of the same sample (--kernel-stacks) on top, named from a kallsyms fixture. The user stack is
 * this test's own, copied as the BPF side copies it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/procs.h"
#include "profile/aggregate.h"
#include "profile/stacks.h"
#include "sample/native.h"
#include "../stackcopy.h"

#define PAGES 5

static struct rp_ustack *rec;
static size_t rec_size;

/* The record of a sample taken here: registers, and the stack from sp's page up. */
static __attribute__((noinline, noclone)) void alone_test_sample(uint32_t cpu, uint32_t seq)
{
	uint64_t ip, sp, bp;

	STACKCOPY_REGS(ip, sp, bp);
	cr_assert_eq(stackcopy_record(rec, rec_size, PAGES, ip, sp, bp, cpu, seq), 0);
	rec->hdr.state = RP_TSTATE_ON_CPU;
	rec->hdr.weight = 1;
	rec->flags = RP_USTACK_ALONE;
	memcpy(rec->comm, "alone-test", 11);
}

static __attribute__((noinline, noclone)) void alone_test_caller(uint32_t cpu, uint32_t seq)
{
	alone_test_sample(cpu, seq);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

static int identified;

static int identify(void *ctx, pid_t pid, char *service, size_t len)
{
	identified++;
	snprintf(service, len, "svc-%d", (int)pid);
	return 0;
}

struct seen {
	int stacks;
	int64_t samples;
	char names[64][64];
	size_t n;
	char thread[32];
	char service[32];
};

static void on_stack(void *ctx, const struct aggregate_stack *st)
{
	struct seen *s = ctx;
	size_t i;

	s->stacks++;
	s->samples += st->values[0];
	s->n = st->nframes < 64 ? st->nframes : 64;
	for (i = 0; i < s->n; i++)
		snprintf(s->names[i], sizeof(s->names[i]), "%s",
			 aggregate_frame_get(st->proc, st->frames[i])->name);
	snprintf(s->thread, sizeof(s->thread), "%s", st->thread_name);
	snprintf(s->service, sizeof(s->service), "%s", aggregate_proc_info(st->proc)->service);
}

static int find(const struct seen *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->names[i], name) == 0)
			return (int)i;
	}
	return -1;
}

/* Each test's collector, over its aggregate, with native stacks on. */
static struct aggregate *agg;
static struct stacks *col;

static void setup(void)
{
	rec_size = RP_USTACK_HDR_SIZE + PAGES * RP_USTACK_PAGE;
	rec = calloc(1, rec_size);
	cr_assert_not_null(rec);
	identified = 0;
	agg = aggregate__new(2, 1024);
	col = agg ? stacks__new(agg, 10101010) : NULL;
	cr_assert_not_null(col);
	cr_assert_eq(stacks_enable_native(col, 0), 0);
}

static void teardown(void)
{
	stacks__free(col);
	aggregate__free(agg);
	free(rec);
}

/* The kernel stack k, then a sample of this thread on CPU 1; s, the aggregate's stacks after it. */
static void kstack_then_sample(const struct rp_kstack *k, struct seen *s)
{
	stacks_on_kstack(col, k);
	alone_test_caller(1, 0);
	stacks_on_ustack(col, rec, rec_size);
	aggregate_foreach(agg, on_stack, s);
}

TestSuite(alone, .init = setup, .fini = teardown);

Test(alone, a_lone_stack_is_a_whole_sample_with_its_kernel_frames)
{
	struct rp_kstack k = {0};
	struct stacks_stats st;
	struct seen s = {0};
	int leaf, caller;

	cr_assert_eq(stacks_enable_kernel(col, "tests/fixtures/kallsyms.txt"), 0);
	cr_assert_eq(stacks_enable_alone(col, 0, identify, NULL), 0);
	/* the kernel stack of sample (1, 0) of this thread: vfs_read, then two return addresses */
	k.hdr.version = RP_REC_VERSION;
	k.hdr.kind = RP_REC_KSTACK;
	k.hdr.size = sizeof(k);
	k.hdr.pid = (uint32_t)getpid();
	k.hdr.tid = (uint32_t)gettid();
	k.cpu = 1;
	k.n = 3;
	k.ips[0] = 0xffffffff81003010;
	k.ips[1] = 0xffffffff81003401;
	k.ips[2] = 0xffffffff81004001;
	kstack_then_sample(&k, &s);
	cr_assert_eq(s.stacks, 1);
	cr_assert_eq(s.samples, 1);
	cr_assert_eq(identified, 1);
	cr_assert_eq(strncmp(s.service, "svc-", 4), 0);
	cr_assert_str_eq(s.thread, "alone-test");
	/* kernel frames first, leaf first, then this test's own functions, down to its root */
	cr_assert_str_eq(s.names[0], "vfs_read");
	cr_assert_str_eq(s.names[1], "ksys_read");
	cr_assert_str_eq(s.names[2], "entry_SYSCALL_64");
	leaf = find(&s, "alone_test_sample");
	caller = find(&s, "alone_test_caller");
	cr_assert_eq(leaf, 3, "the user leaf follows the kernel frames: %s %s %s %s %s", s.names[3],
		     s.names[4], s.names[5], s.names[6], s.names[7]);
	cr_assert_eq(caller, 4);
	cr_assert_geq(find(&s, "criterion_internal_test_main"), caller);
	/* a second sample of the same process: kept once, no kernel stack this time */
	alone_test_caller(1, 0);
	stacks_on_ustack(col, rec, rec_size);
	cr_assert_eq(identified, 1);
	stacks_stats(col, &st);
	cr_assert_eq(st.alone, 2);
	cr_assert_eq(st.alone_procs, 1);
	cr_assert_eq(st.alone_failed, 0);
	cr_assert_eq(st.kernel_stacks, 1);
	cr_assert_eq(st.kernel_frames, 3);
	cr_assert_eq(st.kernel_unsymbolized, 0);
	/* an exec makes it another program: kept again from its next sample */
	stacks_forget_alone(col, getpid());
	stacks_on_ustack(col, rec, rec_size);
	cr_assert_eq(identified, 2);
	/* alive: kept by a sweep */
	stacks_sweep_alone(col);
	stacks_on_ustack(col, rec, rec_size);
	cr_assert_eq(identified, 2);
}

Test(alone, a_kernel_stack_of_another_sample_is_not_used)
{
	struct rp_kstack k = {0};
	struct stacks_stats st;
	struct seen s = {0};

	/* a hidden table: frames kept unnamed, and said */
	cr_assert_eq(stacks_enable_kernel(col, "tests/fixtures/kallsyms-hidden.txt"), -EACCES);
	cr_assert_eq(stacks_enable_alone(col, 0, NULL, NULL), 0);
	k.hdr.pid = (uint32_t)getpid();
	k.hdr.tid = (uint32_t)gettid() + 1; /* another thread */
	k.cpu = 1;
	k.n = 1;
	k.ips[0] = 0xffffffff81003010;
	kstack_then_sample(&k, &s);
	cr_assert_eq(s.stacks, 1);
	cr_assert_str_eq(s.names[0], "alone_test_sample");
	stacks_stats(col, &st);
	cr_assert_eq(st.kernel_unpaired, 1);
	cr_assert_eq(st.kernel_stacks, 0);
	/* the same thread now: unnamed, one frame for the run of them */
	k.hdr.tid = (uint32_t)gettid();
	k.n = 2;
	k.ips[1] = 0xffffffff81003401;
	stacks_on_kstack(col, &k);
	stacks_on_ustack(col, rec, rec_size);
	memset(&s, 0, sizeof(s));
	aggregate_foreach(agg, on_stack, &s);
	cr_assert_eq(s.stacks, 2);
	stacks_stats(col, &st);
	cr_assert_eq(st.kernel_stacks, 1);
	cr_assert_eq(st.kernel_unsymbolized, 2);
	cr_assert_eq(st.kernel_frames, 1);
}
