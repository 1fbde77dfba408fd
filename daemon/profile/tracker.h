/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tracker.h - which processes are Ruby, and their life cycle: exec, fork, exit and pid reuse.
 *
 * The tracker learns of processes from the kernel (exec, fork and exit events from the BPF
 * tracepoints) and from scans of /proc (at start, and then now and then as a safety net). A new
 * program is looked at within milliseconds of its exec and again, with a growing delay, while
 * its Ruby boots; a fork of a profiled Ruby is profiled at once with its parent's layout and then
 * validated on its own. Every entry dies with its process; the table is bounded.
 */
#ifndef RP_TRACKER_H
#define RP_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ruby/discover.h"
#include "rubyprof.h"

/* What the tracker asks of its owner (the session). */
struct tracker_ops {
	/* A validated Ruby: profile it (-ECANCELED: a configuration rule says to ignore it). `fresh` is false when the process was already profiled
	 * (a fork child, now validated on its own). 0 or -errno (it is then refused). */
	int (*enable)(void *ctx, const struct ruby_target *t, bool fresh);
	/* A fork of a profiled process, sampled by BPF with its parent's entry. 0 or -errno. */
	int (*fork)(void *ctx, pid_t child, pid_t parent);
	/* Stop profiling pid: it exited, exec'd, or failed validation. */
	void (*disable)(void *ctx, pid_t pid);
	/* Thread pointers of pid (the sampler's task iterator), for discovery. */
	discover_threads_fn threads;
	void *ctx;
};

struct tracker_opts {
	const pid_t *pids; /* only these processes (none: every process) */
	size_t npids;
	pid_t root;	     /* only this process and its descendants (0: every process) */
	bool quiet_not_ruby; /* do not warn about a named pid that is not Ruby */
};

/* Why processes were not profiled (metrics label "reason"). */
enum tracker_refusal {
	TRACKER_REFUSED_UNSUPPORTED, /* a Ruby that cannot be profiled (version, validation) */
	TRACKER_REFUSED_NOT_READY,   /* a Ruby that never finished booting within the retries */
	TRACKER_REFUSED_NO_ACCESS,   /* its memory or files could not be read */
	TRACKER_REFUSED_IGNORED,     /* a configuration rule said so */
	TRACKER_REFUSED_ERROR,	     /* out of memory, BPF map full */
	TRACKER_REFUSED_MAX,
};

struct tracker_stats {
	uint64_t active;      /* Ruby processes profiled now */
	uint64_t entries;     /* processes the tracker has an entry for */
	uint64_t enabled;     /* processes ever enabled */
	uint64_t forks;	      /* fork children profiled from their parent's entry */
	uint64_t execs;	      /* exec events */
	uint64_t exits;	      /* exits of profiled processes */
	uint64_t reused;      /* pids found reused by another process */
	uint64_t discoveries; /* discovery attempts */
	uint64_t deferred;    /* checks due but put off to the next turn: the tick's time was up */
	uint64_t slow_discoveries; /* discoveries that took more than 100 ms */
	uint64_t loading;	   /* looks before the loader had mapped a library: again later */
	uint64_t log_held;	   /* per-process lines past the log budget: at debug level only */
	uint64_t discovery_ns_max; /* the longest discovery */
	uint64_t scans;		   /* /proc scans */
	uint64_t table_full;	   /* processes not tracked: the table was full */
	uint64_t refused[TRACKER_REFUSED_MAX];
};

struct tracker;

struct tracker *tracker__new(const struct tracker_opts *opts, const struct tracker_ops *ops);
void tracker__free(struct tracker *tr);

/* A process event from the ring buffer. */
void tracker_on_event(struct tracker *tr, const struct rp_proc_event *ev, int64_t now_ns);
/* Scans /proc for processes it does not know (or whose pid was reused), and forgets exited ones. */
void tracker_scan(struct tracker *tr, int64_t now_ns);
/* Looks at the processes whose check is due. */
void tracker_tick(struct tracker *tr, int64_t now_ns);
/* When tracker_tick next has work (CLOCK_MONOTONIC ns), or INT64_MAX. */
int64_t tracker_next_due(const struct tracker *tr);
/* Only root and its descendants from now on (a command started after the tracker). */
void tracker_set_root(struct tracker *tr, pid_t root);
void tracker_stats(const struct tracker *tr, struct tracker_stats *out);
const char *tracker_refusal_name(enum tracker_refusal r);
/* Whether the only processes of interest (the named pids, or the root and its descendants) are
 * all gone: a named run can end. */
bool tracker_all_gone(const struct tracker *tr);
/* How many processes that the first scan found are still to be looked at in full (not yet
 * profiled, refused, given up or found not to be Ruby); up to max of their pids in pids. */
size_t tracker_start_pending(const struct tracker *tr, pid_t *pids, size_t max);
/* Logs, for each process named by --pid that never became ready, the last reason it was not. */
void tracker_report_pending(const struct tracker *tr);

#endif
