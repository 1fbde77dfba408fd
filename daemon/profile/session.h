/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * session.h - one profiling session, shared by --oneshot and the service: the sampler (BPF),
 * the process tracker, the stacks (symbolization) and the aggregate, wired so that each
 * ring-buffer record goes to its one consumer. The modes are loops around session_run().
 */
#ifndef RP_SESSION_H
#define RP_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/bounds.h"
#include "native/checksum.h"
#include "profile/aggregate.h"
#include "profile/stacks.h"
#include "profile/tracker.h"
#include "profile/wall.h"
#include "ruby/discover.h"
#include "sample/native.h"
#include "sample/sampler.h"

/* Decides the service (app) of a validated Ruby, with what its OpenTelemetry process context
 * says (NULL: none): 0, or -ECANCELED to leave it alone. */
typedef int (*session_identify_fn)(void *ctx, const struct ruby_target *t,
				   const struct procctx_attrs *otel, char *service, size_t len);

struct session_opts {
	unsigned int frequency;
	unsigned int max_frames;
	bool stacks_mixed;	     /* native frames too (RP_REC_USTACK, daemon/sample/native.h) */
	unsigned int ustack_bytes;   /* mixed: bytes of user stack copied per sample */
	bool kernel_stacks;	     /* mixed: kernel frames too (RP_REC_KSTACK, kallsyms.h) */
	unsigned int native_procs;   /* mixed: RP_NATIVE_*: processes that are no Ruby too */
	const uint32_t *native_pids; /* RP_NATIVE_LISTED: those */
	size_t nnative_pids;
	const pid_t *pids; /* only these (none: every Ruby) */
	size_t npids;
	bool clock_wall;	      /* --clock wall (wall.h): refused where it cannot load */
	session_identify_fn identify; /* NULL: no service names */
	void *identify_ctx;
};

struct session_counters {
	struct sampler_counters sampler;
	struct stacks_stats stacks;
	struct tracker_stats tracker;
	struct aggregate_stats agg;
	bool native_on; /* --stacks mixed: `native` holds its counters */
	struct native_stats native;
	bool wall_on; /* wall-clock mode: `wall` is filled */
	struct wall_counters wall;
	struct bounds_stats
		bounds; /* objects past a bound (bounds.h): the daemon's, not the session's */
	struct checksum_stats checksum; /* debug-file CRC32s (checksum.h): the daemon's too */
	struct procctx_stats procctx;	/* OpenTelemetry process contexts (procctx.h) */
};

struct session;

/* Loads the BPF side (nothing attached yet). NULL with errno set; failures are logged. */
struct session *session__new(const struct session_opts *opts);
void session__free(struct session *s);

/* Attaches the sampler and the life-cycle tracepoints, then scans /proc once. 0 or -errno. */
int session_start(struct session *s);
/* Only root and its descendants (a command started by the session's owner). */
void session_set_root(struct session *s, pid_t root);

/* The fd to wait on (readable when records wait). */
int session_fd(const struct session *s);
/* Consumes every waiting record and runs the tracker's due checks. 0 or -errno. */
int session_run(struct session *s, int64_t now_ns);
/* Consumes what waits in the ring buffer (bounded), e.g. before an interval's profile is made. */
int session_drain(struct session *s, int64_t now_ns);
/* The end of a run: stops sampling, then consumes all the ring buffer holds, so that every
 * sample counted is in the profile or counted as lost. 0 or -errno (of stopping). */
int session_finish(struct session *s, int64_t now_ns);
/* When session_run next has work without a record waking the fd (CLOCK_MONOTONIC), or
 * INT64_MAX: the tracker's next check, and while a process is profiled the next read of the ring
 * buffer (samples do not wake the fd; see session.c). The caller adds its own deadlines. */
int64_t session_next_due(const struct session *s);
/* How often the ring buffer is read while a process is profiled (ns), from the frequency. */
int64_t session_read_every(const struct session *s);
/* A /proc rescan (the safety net under the life-cycle events). */
void session_scan(struct session *s, int64_t now_ns);
/* Whether process events arrive from the kernel (else scan often). */
bool session_has_lifecycle(const struct session *s);
bool session_all_gone(const struct session *s);
/* Processes there at the start not looked at in full yet (tracker_start_pending). */
size_t session_start_pending(const struct session *s, pid_t *pids, size_t max);
/* Says why each process named by --pid that never became ready was not (oneshot's end). */
void session_report_pending(const struct session *s);

/* Changes the sampling frequency (the caller cuts the interval first). 0 or -errno. */
int session_set_frequency(struct session *s, unsigned int frequency);
unsigned int session_frequency(const struct session *s);

/* The aggregate of the current interval; aggregate_cut() on it starts the next. */
struct aggregate *session_agg(struct session *s);
/* Ruby processes profiled now / ever. */
/*
 * Looks again at every profiled Ruby's OpenTelemetry process context (procctx.h): its header
 * alone while it stays the same, its mapping looked for with a growing delay while it has none.
 * A process whose context changed is named again and labelled anew from now on. The service
 * calls it once per interval.
 */
void session_poll_contexts(struct session *s);
size_t session_active(const struct session *s);
size_t session_profiled(const struct session *s);
void session_counters(struct session *s, struct session_counters *out);

int64_t session_now(void);
/* Whether the session samples wall-clock time (--clock wall). */
bool session_wall(const struct session *s);

#endif
