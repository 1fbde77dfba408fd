/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * appscript.h - the service that a process's command line names: the script Ruby runs, past
 * ruby's own options and `bundle exec` (docs/service-names.md).
 */
#ifndef RP_APPSCRIPT_H
#define RP_APPSCRIPT_H

#include <stdbool.h>
#include <stddef.h>

#include "proc/span.h"

/*
 * argv from /proc/PID/cmdline (len bytes at cmd) into args (at most max). Trailing empty entries
 * are dropped: Ruby pads a shorter $0 title with NULs. A single entry with spaces is a title set
 * through $0 and is split into words. Returns the count.
 */
size_t appscript_args(const char *cmd, size_t len, struct span *args, size_t max);

/*
 * The name args[0..n) give (the exe's or comm's when there are none) into name (size bytes).
 * False for the bare fallback: ruby -e, a script on stdin, nothing known.
 */
bool appscript_name(const struct span *args, size_t n, const char *exe, const char *comm,
		    char *name, size_t size);

#endif
