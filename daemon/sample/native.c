// SPDX-License-Identifier: GPL-2.0-only
/* native.c - user stack copies paired with their Ruby stacks, and unwound. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "sample/native.h"

struct pending {
	bool valid;
	struct rp_ustack hdr;
	uint8_t *data; /* RP_USTACK_PAGES_MAX pages, allocated on the CPU's first record */
};

struct native {
	struct unwinder *unw;
	struct pending *cpus;
	size_t ncpus;
	struct native_stats stats;
};

struct native *native__new(size_t max_procs)
{
	struct native *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->unw = unwinder__new(max_procs);
	if (!n->unw) {
		free(n);
		errno = ENOMEM;
		return NULL;
	}
	return n;
}

void native__free(struct native *n)
{
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n->ncpus; i++)
		free(n->cpus[i].data);
	free(n->cpus);
	unwinder__free(n->unw);
	free(n);
}

static struct pending *cpu_slot(struct native *n, uint32_t cpu)
{
	if (cpu >= NATIVE_MAX_CPUS || array_extend(n->cpus, n->ncpus, (size_t)cpu + 1))
		return NULL;
	if (!n->cpus[cpu].data) {
		n->cpus[cpu].data = malloc((size_t)RP_USTACK_PAGES_MAX * RP_USTACK_PAGE);
		if (!n->cpus[cpu].data)
			return NULL;
	}
	return &n->cpus[cpu];
}

int native_keep(struct native *n, const struct rp_ustack *u, size_t size)
{
	struct pending *p;

	if (size < RP_USTACK_HDR_SIZE || u->len > size - RP_USTACK_HDR_SIZE ||
	    u->len > (size_t)RP_USTACK_PAGES_MAX * RP_USTACK_PAGE) {
		n->stats.bad++;
		return -EINVAL;
	}
	p = cpu_slot(n, u->cpu);
	if (!p) {
		n->stats.bad++;
		return u->cpu >= NATIVE_MAX_CPUS ? -ERANGE : -ENOMEM;
	}
	p->hdr = *u;
	memcpy(p->data, u->data, u->len);
	p->valid = true;
	n->stats.kept++;
	return 0;
}

int native_unwind(struct native *n, pid_t pid, uint32_t cpu, uint32_t seq, uint64_t func,
		  uint8_t *marks, uint64_t *pcs, size_t max, struct unwind_result *res)
{
	struct unwind_input in;
	struct pending *p;
	uint64_t skip;
	int err;

	memset(res, 0, sizeof(*res));
	p = cpu < n->ncpus ? &n->cpus[cpu] : NULL;
	if (!p || !p->valid || p->hdr.seq != seq || p->hdr.hdr.pid != (uint32_t)pid) {
		n->stats.unpaired++;
		return -ENOENT;
	}
	p->valid = false;
	/* the copy starts at sp's page */
	skip = p->hdr.sp & (RP_USTACK_PAGE - 1);
	in = (struct unwind_input){
		.pid = pid,
		.tid = (pid_t)p->hdr.hdr.tid,
		.ip = p->hdr.ip,
		.sp = p->hdr.sp,
		.bp = p->hdr.bp,
		.stack = p->data + (skip < p->hdr.len ? skip : p->hdr.len),
		.stack_len = skip < p->hdr.len ? p->hdr.len - skip : 0,
		.func = func,
		.marks = marks,
	};
	err = unwinder_unwind(n->unw, &in, pcs, max, res);
	if (!err && (res->end == UNWIND_END_STOPPED || res->end == UNWIND_END_MAX))
		n->stats.truncated++;
	return err;
}

int native_symbolize(struct native *n, pid_t pid, uint64_t addr, struct unwind_sym *out)
{
	return unwinder_symbolize(n->unw, pid, addr, out);
}

void native_forget(struct native *n, pid_t pid)
{
	unwinder_forget(n->unw, pid);
}

void native_stats(const struct native *n, struct native_stats *out)
{
	*out = n->stats;
	unwinder_stats(n->unw, &out->unw);
}
