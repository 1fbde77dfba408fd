// SPDX-License-Identifier: GPL-2.0-only
/* privs.c - effective capabilities through capget(2). */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "privs.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static int has_cap(const struct __user_cap_data_struct data[2], int cap)
{
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

int privs_missing(char *buf, size_t len)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	static const struct {
		int cap;
		const char *name;
	} needed[] = {
		/* load BPF programs and maps, attach to perf events */
		{CAP_BPF, "CAP_BPF"},
		{CAP_PERFMON, "CAP_PERFMON"},
		/* read other users' process memory (process_vm_readv) */
		{CAP_SYS_PTRACE, "CAP_SYS_PTRACE"},
		/* read other users' files under /proc/PID/root */
		{CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH"},
		/*
		 * Not required, so not checked: CAP_CHECKPOINT_RESTORE opens /proc/PID/map_files,
		 * needed only for a libruby deleted or replaced on disk after its process started
		 * (without it that process is not profiled). No CAP_KILL: a liveness probe's EPERM
		 * says the process exists. tests/e2e/test_privs.rb runs with exactly these four.
		 */
	};
	size_t i, used = 0;
	int missing = 0;

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	if (len)
		buf[0] = '\0';
	for (i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		/* CAP_SYS_ADMIN covers BPF and perf on kernels before 5.8 and still today */
		if ((needed[i].cap == CAP_BPF || needed[i].cap == CAP_PERFMON) &&
		    has_cap(data, CAP_SYS_ADMIN))
			continue;
		if (has_cap(data, needed[i].cap))
			continue;
		if (used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 missing ? ", " : "", needed[i].name);
		missing++;
	}
	return missing;
}
