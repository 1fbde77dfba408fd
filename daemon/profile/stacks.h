/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stacks.h - the per-sample path in userspace: keeps the Ruby processes being profiled (their
 * discovery result and symbolizer, kept after they exit so that their names survive), turns each
 * sampled stack into interned frames and adds it to the aggregate.
 */
#ifndef RP_STACKS_H
#define RP_STACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "proc/threadctx.h"
#include "profile/aggregate.h"
#include "ruby/discover.h"
#include "ruby/rthreads.h"
#include "ruby/symbolizer.h"
#include "sample/sampler.h"

struct stacks;

struct stacks_stats {
	uint64_t stacks;	/* complete stacks received */
	uint64_t unknown_pid;	/* stacks of a pid no longer known */
	uint64_t frames_failed; /* frames that could not be symbolized */
	uint64_t truncated;	/* stacks with a truncation frame */
	uint64_t no_ec;		/* samples of threads without a Ruby context */
	uint64_t empty_stacks;	/* samples of a Ruby thread with no frame (starting, ending) */
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
	uint64_t frames_reused;	  /* frames of delta stacks given the ids of the CPU's last stack */
	uint64_t kernel_stacks;	  /* --kernel-stacks: kernel stacks put under native frames */
	uint64_t kernel_unpaired; /* kernel stacks whose sample did not follow (lost) */
	uint64_t kernel_frames;	  /* kernel frames added */
	uint64_t kernel_unsymbolized; /* kernel frames without a name (no CAP_SYSLOG, a module
				       * loaded later, or no symbol below the address) */
	uint64_t alone;		      /* --native-processes: native samples of non-Ruby processes */
	uint64_t alone_dropped;	      /* of those: dropped at the bound of such processes kept */
	uint64_t alone_failed;	      /* of those: not unwound (process gone, no modules) */
	uint64_t alone_procs;	      /* non-Ruby processes kept, ever */
	struct threadctx_stats tctx;  /* OpenTelemetry thread contexts decoded (threadctx.h) */
	struct symbolizer_stats sym;  /* the symbolizers', summed over every process ever kept */
	struct rthread_stats rthread; /* the Ruby thread caches', every process */
};

/* period_ns: the second value of a cpu-clock sample (1e9 / frequency). */
struct stacks *stacks__new(struct aggregate *agg, int64_t period_ns);
void stacks__free(struct stacks *c);
void stacks_set_period(struct stacks *c, int64_t period_ns);

/* Starts keeping a validated Ruby process (replacing an earlier process with its pid), under
 * `service`, with its OpenTelemetry process context pc (moved in, *pc left empty; NULL: none
 * yet). 0 or -errno. */
int stacks_add(struct stacks *c, const struct ruby_target *t, const char *service,
	       struct procctx *pc);
/* A forked child of a kept process: kept with its parent's layout until it is validated on its
 * own. *out (may be NULL) receives the derived target. 0, -ENOENT (parent unknown), -ENOMEM. */
int stacks_fork(struct stacks *c, pid_t child, pid_t parent, struct ruby_target *out);
/* Refreshes what is known of a kept process (a fork child validated on its own): its caches
 * and samples stay. 0 or -ENOENT. */
int stacks_update(struct stacks *c, const struct ruby_target *t);
/* The process exited or exec'd: its symbolizer goes now, its samples stay in the aggregate
 * until the interval ends. */
void stacks_remove(struct stacks *c, pid_t pid);
/* Every kept Ruby and its process context (procctx.h; fn may poll it). */
void stacks_foreach_ruby(struct stacks *c,
			 void (*fn)(void *ctx, const struct ruby_target *t, struct procctx *pc),
			 void *ctx);
/* Its service (NULL: the same), or its process context's labels, changed: its samples go under
 * them from now on (those taken so far stay under the old ones in this interval). 0 or -errno. */
int stacks_relabel(struct stacks *c, pid_t pid, const char *service);
/* Processes kept now, and ever. */
size_t stacks_count(const struct stacks *c);
size_t stacks_profiled(const struct stacks *c);

/* sampler_handlers.on_stack: called for each complete stack. ctx is the stacks. */
void stacks_on_stack(void *ctx, const struct sampler_stack *st);

void stacks_stats(const struct stacks *c, struct stacks_stats *out);

struct native_stats;
/* --stacks mixed: unwind native frames (Dwfl of at most max_procs processes, 0: default) and
 * put them on top of each Ruby stack. 0 or -errno. */
int stacks_enable_native(struct stacks *c, size_t max_procs);
/* sampler_handlers.on_ustack: keeps a sample's user stack until its Ruby stack. ctx: the stacks. */
void stacks_on_ustack(void *ctx, const struct rp_ustack *u, size_t size);
/* sampler_handlers.on_kstack: keeps a sample's kernel stack until its user stack. ctx: the stacks. */
void stacks_on_kstack(void *ctx, const struct rp_kstack *k);
/*
 * --kernel-stacks: kernel frames under each sample's native frames, named from /proc/kallsyms
 * (path NULL; a fixture in tests). 0; -EACCES when the file hides its addresses (kptr_restrict:
 * the reader lacks CAP_SYSLOG; kernel frames are then added unnamed); another -errno.
 */
int stacks_enable_kernel(struct stacks *c, const char *kallsyms_path);

/* Decides the service of a process that is no Ruby: 0, or -ECANCELED to leave it alone. */
typedef int (*stacks_identify_fn)(void *ctx, pid_t pid, char *service, size_t len);
/*
 * --native-processes: RP_USTACK_ALONE records (samples of processes that are no Ruby) are
 * unwound as whole stacks, each process kept (at most max_procs at once, 0: a default) under
 * the service `identify` gives. 0 or -errno. Needs stacks_enable_native first.
 */
int stacks_enable_alone(struct stacks *c, size_t max_procs, stacks_identify_fn identify, void *ctx);
/* A process ran exec: a kept non-Ruby process of that pid is a new program. */
void stacks_forget_alone(struct stacks *c, pid_t pid);
/* Forgets the kept non-Ruby processes that exited (their exits are not reported, only a Ruby's):
 * their samples stay in the aggregate until the interval ends. */
void stacks_sweep_alone(struct stacks *c);

/* The native side's counters; false when mixed stacks are off. */
bool stacks_native_stats(const struct stacks *c, struct native_stats *out);

#endif
