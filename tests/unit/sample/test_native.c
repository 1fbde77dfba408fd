// SPDX-License-Identifier: GPL-2.0-only
/*
 * The native half of a mixed sample: RP_REC_USTACK records through the sampler's dispatcher,
 * kept per CPU and paired with the Ruby stack of the same (cpu, seq), then unwound. The record
 * is made from this process's own stack, as the BPF program makes it (from sp's page up).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../aggread.h"
#include "proc/procs.h"
#include "profile/aggregate.h"
#include "profile/pprof.h"
#include "sample/native.h"
#include "sample/sampler.h"
#include "../stackcopy.h"
#include "view/pprofread.h"

#define PAGES 5

static struct rp_ustack *rec;
static size_t rec_size;

/* The record of a sample taken here: registers, and the stack from sp's page up. */
static __attribute__((noinline)) void native_test_sample(uint32_t cpu, uint32_t seq)
{
	uint64_t ip, sp, bp;

	STACKCOPY_REGS(ip, sp, bp);
	cr_assert_eq(stackcopy_record(rec, rec_size, PAGES, ip, sp, bp, cpu, seq), 0);
}

static __attribute__((noinline)) void native_test_caller(uint32_t cpu, uint32_t seq)
{
	native_test_sample(cpu, seq);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

static void setup(void)
{
	rec_size = RP_USTACK_HDR_SIZE + PAGES * RP_USTACK_PAGE;
	rec = calloc(1, rec_size);
	cr_assert_not_null(rec);
}

static void teardown(void)
{
	free(rec);
}

TestSuite(native, .init = setup, .fini = teardown);

struct got {
	int n;
	size_t size;
	uint32_t seq;
};

static void on_stack(void *ctx, const struct sampler_stack *st)
{
}

static void on_ustack(void *ctx, const struct rp_ustack *u, size_t size)
{
	struct got *g = ctx;

	g->n++;
	g->size = size;
	g->seq = u->seq;
}

Test(native, the_dispatcher_hands_over_user_stacks)
{
	struct sampler_opts opts = {.frequency = 99, .max_frames = 64};
	struct sampler_handlers h = {.on_stack = on_stack, .on_ustack = on_ustack};
	struct sampler_counters c;
	struct got g = {0};
	struct sampler *s;

	h.ctx = &g;
	s = sampler__new_offline(&opts, &h, 2);
	cr_assert_not_null(s);
	native_test_caller(1, 7);
	cr_assert_eq(sampler_feed(s, rec, rec_size), 0);
	cr_assert_eq(g.n, 1);
	cr_assert_eq(g.size, rec_size);
	cr_assert_eq(g.seq, 7);
	/* shorter than its header: refused and counted */
	rec->hdr.size = RP_USTACK_HDR_SIZE - 8;
	cr_assert_eq(sampler_feed(s, rec, rec_size), 0);
	cr_assert_eq(g.n, 1);
	cr_assert_eq(sampler_counters(s, &c), 0);
	cr_assert_eq(c.bad_records, 1);
	sampler__free(s);
}

Test(native, a_copy_goes_with_its_own_sample_once)
{
	struct native *n = native__new(0);
	uint64_t pcs[UNWIND_MAX_FRAMES];
	struct unwind_result res;
	struct native_stats st;
	struct unwind_sym sym;

	cr_assert_not_null(n);
	native_test_caller(3, 41);
	cr_assert_eq(native_keep(n, rec, rec_size), 0);
	/* another sample of the CPU, another CPU: not this copy */
	cr_assert_eq(native_unwind(n, getpid(), 3, 40, 0, NULL, pcs, UNWIND_MAX_FRAMES, &res),
		     -ENOENT);
	cr_assert_eq(native_unwind(n, getpid(), 2, 41, 0, NULL, pcs, UNWIND_MAX_FRAMES, &res),
		     -ENOENT);
	cr_assert_eq(native_unwind(n, getpid(), 3, 41, 0, NULL, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_geq(res.n, 3);
	cr_assert_eq(native_symbolize(n, getpid(), pcs[0], &sym), 0);
	cr_assert_str_eq(sym.name, "native_test_sample");
	cr_assert_eq(native_symbolize(n, getpid(), pcs[1] - 1, &sym), 0);
	cr_assert_str_eq(sym.name, "native_test_caller");
	/* used once */
	cr_assert_eq(native_unwind(n, getpid(), 3, 41, 0, NULL, pcs, UNWIND_MAX_FRAMES, &res),
		     -ENOENT);
	native_stats(n, &st);
	cr_assert_eq(st.kept, 1);
	cr_assert_eq(st.unpaired, 3);
	cr_assert_eq(st.unw.unwinds, 1);
	native__free(n);
}

Test(native, malformed_copies_are_refused)
{
	struct native *n = native__new(0);
	struct native_stats st;

	native_test_caller(0, 1);
	/* a length past the record */
	rec->len = PAGES * RP_USTACK_PAGE + 8;
	cr_assert_eq(native_keep(n, rec, rec_size), -EINVAL);
	/* a CPU number past the bound */
	rec->len = 0;
	rec->cpu = NATIVE_MAX_CPUS;
	cr_assert_eq(native_keep(n, rec, rec_size), -ERANGE);
	native_stats(n, &st);
	cr_assert_eq(st.bad, 2);
	cr_assert_eq(st.kept, 0);
	native__free(n);
}

/* In pprof, native frames have a Mapping per object, with the object's build id. */
Test(native, pprof_mapping_per_object_with_build_id)
{
	struct aggregate_proc_info info = {.pid = 1, .nspid = 1, .service = "s"};
	const char *libz = "/usr/lib/libz.so.1", *libc = "/usr/lib/libc.so.6";
	const char *bid = "0123456789abcdef0123456789abcdef01234567";
	const struct pprofread_profile *prof;
	const struct pprofread_mapping *m;
	struct aggregate *a = aggregate__new(2, 100);
	const int64_t one[2] = {1, 10};
	struct pprofread *r;
	struct aggregate_proc *p;
	uint32_t f[3];
	size_t i, seen = 0;

	cr_assert_not_null(a);
	p = aggregate_proc__new(a, &info);
	cr_assert_not_null(p);
	f[0] = aggregate_native_frame_id(p, "deflate", libz, bid);
	f[1] = aggregate_native_frame_id(p, "libz.so.1+0x4970", libz, bid);
	f[2] = aggregate_native_frame_id(p, "__libc_start_main", libc, "");
	cr_assert(f[0] && f[1] && f[2]);
	cr_assert_eq(aggregate_native_frame_id(p, "deflate", libz, bid), f[0]);
	cr_assert_str_eq(aggregate_frame_get(p, f[0])->build_id, bid);
	cr_assert_null(aggregate_frame_get(p, f[2])->build_id);
	cr_assert_eq(aggregate_add(a, p, 1, "", f, 3, one), 0);

	r = aggread(a, 0, false);
	prof = pprofread_profile(r);
	/* one mapping per object: libz's two frames share one */
	cr_assert_eq(prof->nmappings, 2);
	for (i = 0; i < prof->nmappings; i++) {
		m = &prof->mappings[i];
		if (strcmp(pprofread_str(r, m->filename), libz) == 0) {
			cr_assert_str_eq(pprofread_str(r, m->build_id), bid);
			seen++;
		} else {
			cr_assert_str_eq(pprofread_str(r, m->filename), libc);
			cr_assert_str_eq(pprofread_str(r, m->build_id), "");
			seen++;
		}
	}
	cr_assert_eq(seen, 2);
	pprofread__free(r);
	aggregate__free(a);
}
