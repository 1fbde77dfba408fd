// SPDX-License-Identifier: GPL-2.0-only
/* procmem.c - process_vm_readv wrappers. */
#include <errno.h>
#include <sys/uio.h>

#include "proc/procmem.h"

int procmem_vm_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Weak, so that a test or fuzz binary can link its own memory source (procmem.h). */
int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
	__attribute__((weak, alias("procmem_vm_read")));

int procmem_u64(pid_t pid, uint64_t addr, uint64_t *out)
{
	return procmem_read(pid, addr, out, sizeof(*out));
}

int procmem_u32(pid_t pid, uint64_t addr, uint32_t *out)
{
	return procmem_read(pid, addr, out, sizeof(*out));
}
