/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * native.h - the native half of a mixed sample (--stacks mixed): keeps each CPU's last
 * RP_REC_USTACK record (user registers and stack copy) until the Ruby stack of the same sample
 * (cpu, seq) is complete, then unwinds it with the unwinder (unwinder.h).
 */
#ifndef RP_NATIVE_H
#define RP_NATIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "native/unwinder.h"
#include "rubyprof.h"

/* CPUs whose copies are kept (a record of a higher CPU number is counted and dropped). */
#define NATIVE_MAX_CPUS 4096

struct native;

struct native_stats {
	uint64_t kept;	    /* user stack records kept */
	uint64_t bad;	    /* records whose length does not fit their size */
	uint64_t unpaired;  /* Ruby stacks with no user stack of the same sample (lost, or
			     * replaced by the CPU's next sample first) */
	uint64_t truncated; /* native stacks cut short: unwinding stopped, or the frame bound */
	struct unwinder_stats unw;
};

/* max_procs: processes whose Dwfl is kept at once (0: the unwinder's default). NULL, errno. */
struct native *native__new(size_t max_procs);
void native__free(struct native *n);

/* Keeps a copy of the record (size: bytes received) as its CPU's last. 0 or -errno. */
int native_keep(struct native *n, const struct rp_ustack *u, size_t size);

/*
 * Unwinds the kept copy of sample (cpu, seq) of pid into pcs (leaf first), with `func` and
 * `marks` as unwind_input has them (rb_vm_exec: stop there, or mark its frames). The copy is
 * used once. 0, -ENOENT (no copy of that sample), or unwinder_unwind's -errno.
 */
int native_unwind(struct native *n, pid_t pid, uint32_t cpu, uint32_t seq, uint64_t func,
		  uint8_t *marks, uint64_t *pcs, size_t max, struct unwind_result *res);
int native_symbolize(struct native *n, pid_t pid, uint64_t addr, struct unwind_sym *out);
/* The process is gone: its unwinding state goes. */
void native_forget(struct native *n, pid_t pid);

void native_stats(const struct native *n, struct native_stats *out);

#endif
