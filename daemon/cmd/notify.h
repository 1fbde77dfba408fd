/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * notify.h - systemd's notify protocol (sd_notify(3)) spoken directly, without libsystemd: one
 * datagram of newline-separated VAR=value assignments to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or an abstract socket when it starts with '@').
 *
 * No state: every call reads the environment afresh. When $NOTIFY_SOCKET is unset or empty (not
 * started by systemd, or Type=simple) every call does nothing and returns 0. Sends never block:
 * a full socket queue is -EAGAIN and the caller tries again at its next tick.
 * Errors are -errno; -EAFNOSUPPORT for a socket address that is neither a path nor '@'.
 */
#ifndef RP_NOTIFY_H
#define RP_NOTIFY_H

#include <stdint.h>

/* Longest STATUS= text; a longer one is refused with -EMSGSIZE rather than sent cut. */
#define NOTIFY_MAX_STATUS 512

/* Sends state as it is (e.g. "READY=1\nSTATUS=sampling"). Empty state: -EINVAL. */
int notify_send(const char *state);
int notify_ready(void);	   /* READY=1 */
int notify_stopping(void); /* STOPPING=1 */
/* RELOADING=1 with MONOTONIC_USEC=<now>, which Type=notify-reload (systemd 253+) requires and
 * older systemd ignores. Send notify_ready() when the reload is done. */
int notify_reloading(void);
/* STATUS=<text>; a newline in the text becomes a space, so data cannot forge another assignment. */
int notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int notify_watchdog(void); /* WATCHDOG=1 */
struct session;
/* STATUS=profiling N Ruby process(es) at F Hz: the session's processes and frequency now. */
int notify_profiling(const struct session *s);
/*
 * The watchdog interval from $WATCHDOG_USEC, in microseconds; 0 when there is none: unset, not a
 * positive decimal number, or $WATCHDOG_PID is set and names another process (the variables were
 * inherited from our parent). Ping at half this interval.
 */
uint64_t notify_watchdog_usec(void);

#endif
