/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stackcopy.h - copies a piece of the test's own live stack, as the BPF side copies a sampled
 * thread's: byte by byte and uninstrumented, because AddressSanitizer's redzones between stack
 * frames make any checked read (memcpy's interceptor too) of the live stack an error report;
 * and makes the RP_REC_USTACK record of a sample taken at given registers from it.
 */
#ifndef RP_TEST_STACKCOPY_H
#define RP_TEST_STACKCOPY_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "proc/procs.h"
#include "rubyprof.h"

static __attribute__((unused, noinline, no_sanitize_address)) void
stackcopy(void *dst, uintptr_t src, size_t len)
{
	volatile unsigned char *d = dst;
	const volatile unsigned char *s = (const volatile unsigned char *)src;
	size_t i;

	for (i = 0; i < len; i++)
		d[i] = s[i];
}

/* This function's registers as a sample would find them: where it is, its sp and its bp. */
#define STACKCOPY_REGS(ip, sp, bp)                                                                 \
	__asm__ volatile("lea 0(%%rip), %0\n\t"                                                    \
			 "mov %%rsp, %1\n\t"                                                       \
			 "mov %%rbp, %2"                                                           \
			 : "=r"(ip), "=r"(sp), "=r"(bp))

/*
 * Fills rec (rec_size bytes, room for `pages` pages of data) as the BPF program would for a
 * sample of this thread at ip, sp, bp: the header, and the stack from sp's page up to at most
 * `pages` pages or the end of its mapping. 0, or -1 when this process's maps cannot be read.
 */
static __attribute__((unused)) int stackcopy_record(struct rp_ustack *rec, size_t rec_size,
						    size_t pages, uint64_t ip, uint64_t sp,
						    uint64_t bp, uint32_t cpu, uint32_t seq)
{
	struct proc_maps m = {0};
	uint64_t base, end = 0;
	size_t i, len;

	if (procs_read_maps(getpid(), &m))
		return -1;
	for (i = 0; i < m.n; i++) {
		if (sp >= m.v[i].start && sp < m.v[i].end)
			end = m.v[i].end;
	}
	procs_maps_free(&m);
	base = sp & ~(uint64_t)(RP_USTACK_PAGE - 1);
	len = end - base < pages * RP_USTACK_PAGE ? end - base : pages * RP_USTACK_PAGE;
	rec->hdr.version = RP_REC_VERSION;
	rec->hdr.kind = RP_REC_USTACK;
	rec->hdr.size = (uint32_t)rec_size;
	rec->hdr.pid = (uint32_t)getpid();
	rec->hdr.tid = (uint32_t)gettid();
	rec->cpu = cpu;
	rec->seq = seq;
	rec->ip = ip;
	rec->sp = sp;
	rec->bp = bp;
	rec->len = (uint32_t)len;
	stackcopy(rec->data, (uintptr_t)base, len);
	return 0;
}

#endif
