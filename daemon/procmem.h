/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * procmem.h - reads another process's memory with process_vm_readv: no ptrace, no stop.
 * Errors: -ESRCH (the process is gone), -EFAULT (unmapped address), -EPERM (needs CAP_SYS_PTRACE).
 */
#ifndef RP_PROCMEM_H
#define RP_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads exactly len bytes at addr. 0 or -errno (a short read is -EFAULT). */
int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int procmem_u64(pid_t pid, uint64_t addr, uint64_t *out);
int procmem_u32(pid_t pid, uint64_t addr, uint32_t *out);

#endif
