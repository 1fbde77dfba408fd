// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the collector's handling of BPF records (daemon/sample/sampler.c's dispatcher and per-CPU
 * reassembly, daemon/profile/stacks.c, daemon/sample/wallcopy.c's reuse of wall-clock stacks): the frames a
 * record carries were read from a profiled process's memory (iseq, pc, ep, method entry, its
 * Ruby thread, its thread name, the GC mode), and the symbolizer reads that memory again. The
 * process is the fake one of tests/fuzz/fakemem.h, its Ruby objects built for the row of
 * daemon/ruby/offsets.c that byte 0 picks; byte 1 turns on native and kernel stacks (bit 0) and the
 * wall-clock hook on the extra CPU slot (bit 1). Then records, each a mode byte, a u16 length
 * and its bytes:
 *   mode bit 0 clear: the bytes fed as they are (the dispatcher's checks), but for the weight,
 *   which the BPF side sets (1 for a cpu-clock sample; kept below 2^16 here);
 *   mode bit 0 set: laid over a zeroed record of kind (mode >> 1) & 3 (stack, user stack,
 *   kernel stack) with what the BPF side sets itself put right (version, kind, size, cpu in
 *   range, a weight of 1, or nanoseconds below 2^32 for a wall sample); bit 3: the fake
 *   process's pid; bit 4: frame fields below 8 (addr, pc, ep, the Ruby thread) stand for the
 *   image's roots (tests/fuzz/fakemem.h), so that frames reach real objects.
 * Checked: every stack delivered is counted by the collector (stats.stacks), the aggregate
 * holds at least one sample for each stack not counted as dropped, no more than were sent, and
 * its pprof reads back (daemon/view/pprofread.c) with those samples; no reader loops on garbage
 * (FAKEMEM_MAX_READS).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakemem.h"
#include "fuzz_common.h"
#include "profile/stacks.h"
#include "profile/pprof.h"
#include "sample/sampler.h"
#include "sample/wallcopy.h"
#include "view/pprofread.h"

#define FUZZ_NCPUS	2
#define FUZZ_MAX_FRAMES 64
#define FUZZ_RECORD_MAX 4096

struct fuzz_run {
	struct stacks *c;
	struct wallcopy *copies;
	uint64_t delivered, sent; /* stacks, and the samples they stand for */
};

/* What the sampler hands over: counted here, then the collector's. */
static void on_stack(void *ctx, const struct sampler_stack *st)
{
	struct fuzz_run *r = ctx;
	const struct rp_rec *h = &st->first->hdr;

	r->delivered++;
	r->sent += h->wunit == RP_WEIGHT_NS ? (st->samples ? st->samples : 1) : h->weight;
	stacks_on_stack(r->c, st);
}

static void on_ustack(void *ctx, const struct rp_ustack *u, size_t size)
{
	stacks_on_ustack(((struct fuzz_run *)ctx)->c, u, size);
}

static void on_kstack(void *ctx, const struct rp_kstack *k)
{
	stacks_on_kstack(((struct fuzz_run *)ctx)->c, k);
}

static void on_wall(void *ctx, struct sampler_stack *st)
{
	struct wallcopy_reuse reuse;

	wallcopy_on_stack(ctx, st, 1, &reuse);
}

/* A kernel symbol table for the kernel frames, written once. */
static const char *kallsyms_path(void)
{
	static char path[64];
	FILE *f;

	if (path[0])
		return path;
	snprintf(path, sizeof(path), "/tmp/fuzz_collect.kallsyms.%d", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs("ffffffff81000000 T _stext\nffffffff81001000 T do_syscall_64\n"
	      "ffffffff81002000 t schedule\n",
	      f);
	fclose(f);
	return path;
}

static uint64_t root(const struct fakemem_image *img, uint64_t v)
{
	return v < FAKEMEM_NROOTS ? img->roots[v] : v;
}

/* A stack chunk as the BPF side would have it, fuzzed where the target's memory decides. */
static size_t fix_stack(struct rp_sample *s, size_t len, unsigned int mode,
			const struct fakemem_image *img)
{
	size_t n, i;
	uint64_t pc;

	if (len < RP_SAMPLE_HDR_SIZE)
		len = RP_SAMPLE_HDR_SIZE;
	n = (len - RP_SAMPLE_HDR_SIZE) / sizeof(struct rp_frame);
	if (s->nframes > n)
		s->nframes = (uint16_t)n;
	s->hdr.kind = RP_REC_STACK;
	s->cpu %= FUZZ_NCPUS + 1;
	if (s->hdr.wunit == RP_WEIGHT_NS)
		s->hdr.weight = (s->hdr.weight & 0xffffffff) + 1;
	else
		s->hdr.weight = 1;
	if (mode & 0x10) {
		s->ruby_thread = root(img, s->ruby_thread);
		for (i = 0; i < s->nframes; i++) {
			s->frames[i].addr = root(img, s->frames[i].addr);
			s->frames[i].ep = root(img, s->frames[i].ep);
			pc = rp_frame_pc(&s->frames[i]);
			if (pc < FAKEMEM_NROOTS)
				s->frames[i].info = (s->frames[i].info & ~RP_FRAME_PC_MASK) |
						    (root(img, pc) & RP_FRAME_PC_MASK);
		}
	}
	return RP_SAMPLE_HDR_SIZE + (size_t)s->nframes * sizeof(struct rp_frame);
}

static size_t fix_record(uint8_t *buf, size_t len, unsigned int mode,
			 const struct fakemem_image *img)
{
	struct rp_rec *h = (struct rp_rec *)buf;
	struct rp_ustack *u = (struct rp_ustack *)buf;
	struct rp_kstack *k = (struct rp_kstack *)buf;
	size_t size;

	switch ((mode >> 1) & 3) {
	case 1:
		size = len > RP_USTACK_HDR_SIZE ? len : RP_USTACK_HDR_SIZE;
		h->kind = RP_REC_USTACK;
		u->cpu %= FUZZ_NCPUS;
		if (u->len > size - RP_USTACK_HDR_SIZE)
			u->len = (uint32_t)(size - RP_USTACK_HDR_SIZE);
		break;
	case 2:
		size = sizeof(*k);
		h->kind = RP_REC_KSTACK;
		k->cpu %= FUZZ_NCPUS;
		k->n %= RP_KSTACK_MAX + 1;
		break;
	default:
		size = fix_stack((struct rp_sample *)buf, len, mode, img);
	}
	h->version = RP_REC_VERSION;
	h->size = (uint32_t)size;
	if (mode & 0x08)
		h->pid = FAKEMEM_PID;
	return size;
}

/* The aggregate as a pprof, read back: its samples' first values add up to the total. */
static void check_pprof(const struct aggregate *a)
{
	const struct pprofread_profile *p;
	struct pprof *pp = pprof__new();
	struct pprofread *r;
	uint8_t *bytes = NULL;
	uint64_t total = 0;
	size_t len = 0, i;
	char err[256];

	if (!pp || aggregate_to_pprof(a, pp, NULL, 0) || pprof_encode(pp, 0, &bytes, &len)) {
		pprof__free(pp);
		return; /* out of memory: nothing to check */
	}
	r = pprofread__new(bytes, len, "fuzz", err, sizeof(err));
	if (!r) {
		fprintf(stderr, "fuzz_collect: its own profile does not read back: %s\n", err);
		abort();
	}
	p = pprofread_profile(r);
	for (i = 0; i < p->nsamples; i++)
		total += (uint64_t)p->samples[i].values[0];
	if (p->nsample_types < 1 || total != aggregate_total(a)) {
		fprintf(stderr,
			"fuzz_collect: the profile holds %llu samples, the aggregate %llu\n",
			(unsigned long long)total, (unsigned long long)aggregate_total(a));
		abort();
	}
	pprofread__free(r);
	free(bytes);
	pprof__free(pp);
}

static void check_counts(const struct fuzz_run *r, const struct aggregate *a)
{
	struct stacks_stats st;
	uint64_t dropped, kept;

	stacks_stats(r->c, &st);
	dropped = st.unknown_pid + st.agg_dropped + st.dropped_nomem + st.dropped_error;
	if (st.stacks != r->delivered || dropped > r->delivered) {
		fprintf(stderr, "fuzz_collect: %llu stacks delivered, the collector counts %llu\n",
			(unsigned long long)r->delivered, (unsigned long long)st.stacks);
		abort();
	}
	kept = r->delivered - dropped;
	if (aggregate_total(a) < kept || aggregate_total(a) > r->sent) {
		fprintf(stderr,
			"fuzz_collect: %llu samples in the aggregate for %llu stacks kept "
			"of %llu samples sent\n",
			(unsigned long long)aggregate_total(a), (unsigned long long)kept,
			(unsigned long long)r->sent);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fakemem_image img;
	static unsigned int built = ~0u;
	static uint64_t buf[FUZZ_RECORD_MAX / 8];
	struct sampler_opts opts = {.frequency = 99, .max_frames = FUZZ_MAX_FRAMES};
	struct fuzz_run run = {0};
	struct sampler_handlers h = {.on_stack = on_stack, .ctx = &run};
	struct ruby_target t = {.pid = FAKEMEM_PID, .nspid = 7};
	struct sampler *s = NULL;
	struct aggregate *a;
	size_t pos = 2, len, fed;
	unsigned int mode;

	if (size < 2)
		return 0;
	if (built != data[0]) {
		if (fakemem_build(&img, data[0]))
			return 0;
		built = data[0];
	}
	fakemem_map_image(&img);
	fakemem.max_reads = FAKEMEM_MAX_READS;
	t.off = img.off;
	t.symbols = img.roots[FAKEMEM_SYMBOLS];
	snprintf(t.version, sizeof(t.version), "%s", img.off->first);

	a = aggregate__new(2, 8);
	run.c = a ? stacks__new(a, 10101010) : NULL;
	if (!run.c || stacks_add(run.c, &t, "fuzz", NULL))
		goto cleanup;
	if (data[1] & 1) {
		h.on_ustack = on_ustack;
		h.on_kstack = on_kstack;
		if (stacks_enable_native(run.c, 2))
			goto cleanup;
		(void)stacks_enable_kernel(run.c, kallsyms_path());
	}
	s = sampler__new_offline(&opts, &h, FUZZ_NCPUS);
	if (!s)
		goto cleanup;
	run.copies = data[1] & 2 ? wallcopy__new(2) : NULL;
	if (run.copies)
		sampler_set_extra_hook(s, on_wall, run.copies);
	fakemem_check_bounded("fuzz_collect", "stacks_add");

	while (pos + 3 <= size) {
		mode = data[pos];
		len = (size_t)data[pos + 1] | (size_t)data[pos + 2] << 8;
		pos += 3;
		if (len > size - pos)
			len = size - pos;
		if (len > sizeof(buf))
			len = sizeof(buf);
		memset(buf, 0, sizeof(buf));
		memcpy(buf, data + pos, len);
		pos += len;
		if (mode & 1)
			fed = fix_record((uint8_t *)buf, len, mode, &img);
		else
			fed = len;
		/* the BPF side's own count, whatever else the record holds: 1, or nanoseconds */
		((struct rp_rec *)buf)->weight = (((struct rp_rec *)buf)->weight & 0xffff) | 1;
		(void)sampler_feed(s, buf, fed);
		fakemem_check_bounded("fuzz_collect", "a record");
	}
	check_counts(&run, a);
	check_pprof(a);
cleanup:
	sampler__free(s);
	wallcopy__free(run.copies);
	stacks__free(run.c);
	aggregate__free(a);
	return 0;
}
