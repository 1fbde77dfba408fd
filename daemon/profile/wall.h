/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wall.h - wall-clock mode (--clock wall): every Ruby thread of every profiled process gets a
 * sample per tick, running or not, with its state. Owns the sleepable task iterator of
 * bpf/wall.bpf.c (a pid-filtered link per process) and runs it on the session's clock; its
 * records go through the sampler's ring buffer and dispatcher like CPU samples.
 */
#ifndef RP_WALL_H
#define RP_WALL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ruby/discover.h"
#include "rubyprof.h"
#include "sample/sampler.h"

struct wall;

/* Processes sampled at once; more are refused (counted). */
#define WALL_MAX_PROCS RP_WALL_MAX_PROCS

struct wall_counters {
	uint64_t bpf[RP_WSTAT_MAX];
	uint64_t runs_failed;	  /* iterator runs that could not be made */
	uint64_t ticks_late;	  /* ticks that began a whole period late (the weight stays one) */
	uint64_t refused_version; /* processes of a Ruby without thread-list offsets */
	uint64_t refused_full;	  /* processes refused at WALL_MAX_PROCS */
	/* reuse of unchanged stacks (docs/internals/wall-clock.md, "Reuse and the cursor") */
	uint64_t reused;	 /* RP_SAMPLE_SAME samples given their thread's last stack */
	uint64_t reuse_missed;	 /* ... whose stack the daemon did not have (no frames, counted) */
	uint64_t copies_evicted; /* stack copies evicted at the bound (RP_WALL_CACHE_ENTRIES) */
	uint64_t copies_failed;	 /* stack copies not made (no memory) */
	uint64_t copies_swept;	 /* copies of ended threads or processes dropped */
	uint64_t entries_swept; /* BPF wall_threads entries of ended threads or processes dropped */
	uint64_t pending_swept; /* reused visits the daemon took from the map (flush, sweep) */
	uint64_t pending_lost; /* reused visits lost with their stack's copy (evicted or missing) */
	bool by_syscall; /* runs are BPF_PROG_RUN of a syscall program (6.2+), not iterators */
	bool skip;	 /* still processes' ticks are skipped (the switch hooks are on) */
	uint64_t ticks_skipped; /* ticks of a process skipped: nothing of it switched since */
	uint64_t ticks_slept;	/* ticks the daemon did not wake for: every process was still */
	uint64_t sleeps;	/* times it slept past the next tick */
};

/*
 * Loads the wall program beside the sampler's (sharing its maps). NULL with errno set: ENOTSUP
 * on a kernel older than 6.1 or without sleepable iterators; `why` says what failed.
 */
struct wall *wall__new(struct sampler *smp, unsigned int frequency, char *why, size_t whylen);
void wall__free(struct wall *w);

/* Starts sampling a validated Ruby process. 0, -ENOTSUP (version without offsets), -ENOSPC,
 * or -errno of attaching the iterator. */
int wall_add(struct wall *w, const struct ruby_target *t);
void wall_remove(struct wall *w, pid_t pid);
/* Whether pid's running threads come from the perf samples (RP_PROCF_WALL_RUNNING): it is
 * sampled here and its version lets the iterator find each thread's task (not 2.7). */
bool wall_running_from_perf(const struct wall *w, pid_t pid);

/* When wall_tick next has work (CLOCK_MONOTONIC ns). */
int64_t wall_next_due(const struct wall *w);
/* Runs the iterator of every process if a tick is due. 0, or -EIO when a run failed (each
 * failure is counted in runs_failed; the other processes still ran). */
int wall_tick(struct wall *w, int64_t now_ns);
void wall_set_frequency(struct wall *w, unsigned int frequency);
/* Counts the ticks up to now that the daemon slept through (every process still) as skipped:
 * before a profile is cut (then wall_flush gives their visits). */
void wall_catch_up(struct wall *w, int64_t now_ns);
/*
 * Hands every thread's pending visits to the stacks now (a parked thread's reused visits are
 * summed in BPF and sent later, as one record): before a profile is cut, once the ring buffer
 * has been read, so that their time is in it. Also those of threads that ended since.
 */
void wall_flush(struct wall *w);

void wall_counters(const struct wall *w, struct wall_counters *out);

/* The sampler's hook for wall-clock stacks (sampler_set_extra_hook, set by wall__new): an
 * RP_SAMPLE_SAME sample gets its thread's last walked stack; other stacks are kept for that. */
void wall_on_stack(void *ctx, struct sampler_stack *st);

/* The label of an RP_TSTATE_* ("running", "gvl_wait", ...); NULL for none. */
const char *wall_state_name(unsigned int state);

/* The name of a wall sample's syscall (rp_sample.syscall: number + 1, x86_64); NULL for 0,
 * "other" for a number not in the table. */
const char *wall_syscall_name(uint32_t syscall);

/* Whether this kernel (uname release) is at least major.minor. */
int wall_kernel_at_least(const char *release, int major, int minor);

#endif
