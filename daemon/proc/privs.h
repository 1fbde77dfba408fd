/* SPDX-License-Identifier: GPL-2.0-only */
/* privs.h - checks the capabilities rubyprofd needs and names the missing ones. */
#ifndef RP_PRIVS_H
#define RP_PRIVS_H

#include <stddef.h>

/*
 * Writes the names of the missing capabilities ("CAP_BPF, CAP_PERFMON") into buf.
 * Returns the number missing (0: all there), or -errno when they cannot be read.
 */
int privs_missing(char *buf, size_t len);

/* What privs_drop keeps beside the five it always keeps (if they are there). */
enum {
	PRIVS_KEEP_SYSLOG = 1 << 0,	  /* kernel_stacks: kernel symbol names (kallsyms) */
	PRIVS_KEEP_DAC_OVERRIDE = 1 << 1, /* --oneshot: its output into the caller's directory */
	PRIVS_KEEP_KILL = 1 << 2, /* --oneshot COMMAND: ending the command, whoever it became */
};

/*
 * After set-up: keeps only CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and
 * CAP_CHECKPOINT_RESTORE (CAP_SYS_ADMIN instead of the first two on a kernel without them), and
 * keep_extra's, of those it has; drops every other one from the effective, permitted,
 * inheritable, ambient and bounding sets; sets no_new_privs. The names kept go to kept.
 * 0 or -errno.
 */
int privs_drop(unsigned int keep_extra, char *kept, size_t len);

#endif
