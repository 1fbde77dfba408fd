/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * apptitle.h - a process's title (argv joined, as `ps` shows it) and the service that a
 * well-known title names: Puma's, Sidekiq's, Unicorn's and Resque's (docs/service-names.md).
 */
#ifndef RP_APPTITLE_H
#define RP_APPTITLE_H

#include <stdbool.h>
#include <stddef.h>

/* argv (len bytes of /proc/PID/cmdline) joined by single spaces, trailing NULs dropped; malloc'd,
 * NULL when out of memory. */
char *apptitle_of_cmdline(const char *cmd, size_t len);

/* The name a title (the first argv entry: len bytes of t) gives into name (size bytes); false
 * when it is none of the titles known. */
bool apptitle_name(const char *t, size_t len, char *name, size_t size);

#endif
