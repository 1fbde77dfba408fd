/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * procmem.h - reads another process's memory with process_vm_readv: no ptrace, no stop.
 * Errors: -ESRCH (the process is gone), -EFAULT (unmapped address), -EPERM (needs CAP_SYS_PTRACE).
 *
 * The seam for tests and fuzzers: every reader of a target's memory (rvalue.c, symbolizer.c,
 * discover.c, gcstate.c) goes through procmem_read; procmem_u64/u32 call it too. In procmem.o it
 * is a weak alias of procmem_vm_read, so a test or fuzz binary that links its own (strong)
 * procmem_read replaces it at link time for every caller, and may call procmem_vm_read for the
 * pids it does not fake (tests/fuzz/fakemem.h serves a fake address space this way). The daemon
 * links no other definition: the call is the same direct call it always was, at no cost.
 */
#ifndef RP_PROCMEM_H
#define RP_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads exactly len bytes at addr. 0 or -errno (a short read is -EFAULT). Weak: see above. */
int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
/* The process_vm_readv implementation behind procmem_read, always the real one. */
int procmem_vm_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int procmem_u64(pid_t pid, uint64_t addr, uint64_t *out);
int procmem_u32(pid_t pid, uint64_t addr, uint32_t *out);

#endif
