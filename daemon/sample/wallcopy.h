/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * wallcopy.h - the daemon's side of wall-clock stack reuse: per Ruby thread (pid, rb_thread_t *),
 * the frames of its last walked stack and the sample (seq) that carried them, which an
 * RP_SAMPLE_SAME record refers to (docs/internals/wall-clock.md, "Reuse and the cursor").
 * Bounded: a copy needed when full evicts one in turn and names it, so the caller can forget it
 * on the BPF side.
 */
#ifndef RP_WALLCOPY_H
#define RP_WALLCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rubyprof.h"
#include "sample/sampler.h"

struct wallcopy;

struct wallcopy_entry {
	pid_t pid;
	uint64_t th;
	uint32_t seq;	/* the sample (rp_sample.seq) the frames came with */
	uint32_t run;	/* the process's run when last stored or used */
	uint32_t flags; /* RP_SAMPLE_* that describe the stack (GC, JIT leaf, truncated) */
	uint32_t truncated;
	size_t n;
	struct rp_frame *frames; /* leaf first; NULL when n is 0 */
	char comm[16];		 /* the thread's name at that sample */
	/* its OpenTelemetry thread context then (sampler_stack.tctx), NULL: none; a thread whose
	 * stack is reused did not run since, so it cannot have switched its context either */
	uint8_t *tctx;
	size_t tctx_len;
	uint32_t tctx_flags;
};

struct wallcopy_counters {
	uint64_t evicted; /* copies evicted at the bound */
	uint64_t failed;  /* copies not made (no memory) */
	uint64_t dropped; /* copies dropped by wallcopy_drop_if */
	size_t entries;
};

/* At most max copies. NULL with errno set. */
struct wallcopy *wallcopy__new(size_t max);
void wallcopy__free(struct wallcopy *c);

/*
 * Keeps frames[0, n) as (pid, th)'s stack of sample seq, replacing its last one, with the
 * thread's name then (16 bytes, or NULL). When the table is full another thread's copy goes:
 * *evicted (if not NULL) gets it (pid 0 when none went). 0 or -ENOMEM (counted).
 */
int wallcopy_keep(struct wallcopy *c, pid_t pid, uint64_t th, uint32_t seq, uint32_t run,
		  const struct rp_frame *frames, size_t n, uint32_t flags, uint32_t truncated,
		  const char *comm, struct wallcopy_entry *evicted);

/* Sets (pid, th)'s copy's thread context (a copy of tctx[0, len); NULL: none). 0, -ENOENT (no
 * copy) or -ENOMEM (counted; the copy then has none). */
int wallcopy_set_tctx(struct wallcopy *c, pid_t pid, uint64_t th, const uint8_t *tctx, size_t len,
		      uint32_t flags);

/* (pid, th)'s copy if it is that of sample seq (its run becomes `run`); NULL otherwise. */
const struct wallcopy_entry *wallcopy_get(struct wallcopy *c, pid_t pid, uint64_t th, uint32_t seq,
					  uint32_t run);

/* Drops every copy for which drop(ctx, pid, run) is true; returns how many. */
size_t wallcopy_drop_if(struct wallcopy *c, bool (*drop)(void *ctx, pid_t pid, uint32_t run),
			void *ctx);

void wallcopy_counters(const struct wallcopy *c, struct wallcopy_counters *out);

/* What wallcopy_on_stack did: visits given a copy's frames, or missed; a thread whose BPF-side
 * entry must go (pid 0: none), its copy being evicted or missing. */
struct wallcopy_reuse {
	uint64_t reused, missed;
	pid_t drop_pid;
	uint64_t drop_th;
};

/*
 * The wall-clock hook's work on a stack of the wall slot (daemon/profile/wall.c's wall_on_stack), pure:
 * an RP_SAMPLE_SAME stack gets the frames of its thread's copy of sample base_seq (none when the
 * copy went: then marked RP_SAMPLE_READ_FAIL), any other whole stack of a known thread becomes
 * that thread's copy. run: the process's run. The frames given point into c until its next
 * change.
 */
void wallcopy_on_stack(struct wallcopy *c, struct sampler_stack *st, uint32_t run,
		       struct wallcopy_reuse *out);

#endif
