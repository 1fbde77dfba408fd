// SPDX-License-Identifier: GPL-2.0-only
/* privs.c - the capabilities rubyprofd needs: checked at start (capget), the rest dropped after
 * set-up (capset, the bounding set, no_new_privs). */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc/privs.h"

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

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

/* The highest capability this kernel knows (/proc/sys/kernel/cap_last_cap), CAP_CHECKPOINT_RESTORE
 * when it cannot be read. */
static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	int n = CAP_CHECKPOINT_RESTORE;

	if (f) {
		if (fscanf(f, "%d", &n) != 1 || n < 0 || n > 63)
			n = CAP_CHECKPOINT_RESTORE;
		fclose(f);
	}
	return n;
}

static const char *const cap_names[] = {
	[CAP_DAC_OVERRIDE] = "CAP_DAC_OVERRIDE",
	[CAP_KILL] = "CAP_KILL",
	[CAP_DAC_READ_SEARCH] = "CAP_DAC_READ_SEARCH",
	[CAP_SYS_PTRACE] = "CAP_SYS_PTRACE",
	[CAP_SYS_ADMIN] = "CAP_SYS_ADMIN",
	[CAP_SYSLOG] = "CAP_SYSLOG",
	[CAP_PERFMON] = "CAP_PERFMON",
	[CAP_BPF] = "CAP_BPF",
	[CAP_CHECKPOINT_RESTORE] = "CAP_CHECKPOINT_RESTORE",
};

int privs_drop(unsigned int keep_extra, char *kept, size_t len)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	uint64_t permitted, keep, bit;
	size_t used = 0;
	int cap, last = last_cap();

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	permitted = (uint64_t)data[1].permitted << 32 | data[0].permitted;
	keep = 1ULL << CAP_BPF | 1ULL << CAP_PERFMON | 1ULL << CAP_SYS_PTRACE |
	       1ULL << CAP_DAC_READ_SEARCH | 1ULL << CAP_CHECKPOINT_RESTORE;
	if (keep_extra & PRIVS_KEEP_SYSLOG)
		keep |= 1ULL << CAP_SYSLOG;
	if (keep_extra & PRIVS_KEEP_DAC_OVERRIDE)
		keep |= 1ULL << CAP_DAC_OVERRIDE;
	if (keep_extra & PRIVS_KEEP_KILL)
		keep |= 1ULL << CAP_KILL;
	/* a kernel without CAP_BPF and CAP_PERFMON (before 5.8) needs CAP_SYS_ADMIN for both */
	if (!(permitted & (1ULL << CAP_BPF)) || !(permitted & (1ULL << CAP_PERFMON)))
		keep |= 1ULL << CAP_SYS_ADMIN;
	keep &= permitted;
	/* the bounding set first (it takes CAP_SETPCAP, about to go): no exec gets more back */
	if (permitted & (1ULL << CAP_SETPCAP)) {
		for (cap = 0; cap <= last; cap++) {
			if (!(keep & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) &&
			    errno != EINVAL)
				return -errno;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	data[0].effective = data[0].permitted = (uint32_t)keep;
	data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
	data[0].inheritable = data[1].inheritable = 0;
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (len)
		kept[0] = '\0';
	for (bit = 0; bit < 64; bit++) {
		if (!(keep & (1ULL << bit)) || used >= len)
			continue;
		if (bit < sizeof(cap_names) / sizeof(cap_names[0]) && cap_names[bit])
			used += (size_t)snprintf(kept + used, len - used, "%s%s", used ? ", " : "",
						 cap_names[bit]);
		else
			used += (size_t)snprintf(kept + used, len - used, "%scap %u",
						 used ? ", " : "", (unsigned int)bit);
	}
	return 0;
}
