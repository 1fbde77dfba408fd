/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * collect.h - the per-sample path in userspace: keeps the Ruby processes being profiled (their
 * discovery result and symbolizer, kept after they exit so that their names survive), turns each
 * sampled stack into interned frames and adds it to the aggregate.
 */
#ifndef RP_COLLECT_H
#define RP_COLLECT_H

#include <stdbool.h>
#include <stdint.h>

#include "aggregate.h"
#include "discover.h"
#include "rthread.h"
#include "sampler.h"
#include "symbolize.h"

struct collector;

struct collector_stats {
	uint64_t stacks;	/* complete stacks received */
	uint64_t unknown_pid;	/* stacks of a pid no longer known */
	uint64_t frames_failed; /* frames that could not be symbolized */
	uint64_t truncated;	/* stacks with a truncation frame */
	uint64_t no_ec;		/* samples of threads without a Ruby context */
	uint64_t failed_reads;	/* samples whose stack could not be read in BPF */
	uint64_t agg_dropped;	/* samples dropped by a full table (stacks, or the process's
				 * frames) */
	uint64_t dropped_nomem; /* samples dropped: memory could not be allocated */
	uint64_t dropped_error; /* samples dropped: the aggregate refused them otherwise */
	uint64_t gc;		/* samples in garbage collection */
	uint64_t jit_leaf;	/* samples whose leaf is JIT code */
	uint64_t
		cache_resets; /* frame caches dropped at their bound (refilled from the symbolizer) */
	uint64_t no_pidfd;    /* processes kept without a pidfd (reads not checked for pid reuse) */
	uint64_t frames_reused; /* frames of delta stacks given the ids of the CPU's last stack */
	struct symbolizer_stats sym;  /* the symbolizers', summed over every process ever kept */
	struct rthread_stats rthread; /* the Ruby thread caches', every process */
};

/* period_ns: the second value of a cpu-clock sample (1e9 / frequency). */
struct collector *collector__new(struct agg *agg, int64_t period_ns);
void collector__free(struct collector *c);
void collector_set_period(struct collector *c, int64_t period_ns);

/* Starts keeping a validated Ruby process (replacing an earlier process with its pid), under
 * `service`. 0 or -errno. */
int collector_add(struct collector *c, const struct ruby_target *t, const char *service);
/* A forked child of a kept process: kept with its parent's layout until it is validated on its
 * own. *out (may be NULL) receives the derived target. 0, -ENOENT (parent unknown), -ENOMEM. */
int collector_fork(struct collector *c, pid_t child, pid_t parent, struct ruby_target *out);
/* Refreshes what is known of a kept process (a fork child validated on its own): its caches
 * and samples stay. 0 or -ENOENT. */
int collector_update(struct collector *c, const struct ruby_target *t);
/* The process exited or exec'd: its symbolizer goes now, its samples stay in the aggregate
 * until the interval ends. */
void collector_remove(struct collector *c, pid_t pid);
const struct ruby_target *collector_find(const struct collector *c, pid_t pid);
/* Processes kept now, and ever. */
size_t collector_count(const struct collector *c);
size_t collector_profiled(const struct collector *c);

/* sampler_handlers.on_stack: called for each complete stack. ctx is the collector. */
void collector_on_stack(void *ctx, const struct sampler_stack *st);

void collector_stats(const struct collector *c, struct collector_stats *out);

struct native_stats;
/* --stacks mixed: unwind native frames (Dwfl of at most max_procs processes, 0: default) and
 * put them on top of each Ruby stack. 0 or -errno. */
int collector_enable_native(struct collector *c, size_t max_procs);
/* sampler_handlers.on_ustack: keeps a sample's user stack until its Ruby stack. ctx: collector. */
void collector_on_ustack(void *ctx, const struct rp_ustack *u, size_t size);
/* The native side's counters; false when mixed stacks are off. */
bool collector_native_stats(const struct collector *c, struct native_stats *out);

#endif
