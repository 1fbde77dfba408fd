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

#endif
