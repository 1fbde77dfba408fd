/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rthreads.h - the Ruby thread of a sample, as labels: an identity that can be read from outside
 * the process and the thread's name (Thread#name).
 *
 * The identity is the rb_thread_t address the BPF walk read from the sampled EC (thread_ptr). Ruby
 * 3.3+ has a `serial` field in rb_thread_t, but release builds only set it under RUBY_DEBUG_LOG
 * (every thread but the main one keeps 0), and Thread#object_id is assigned lazily: the address is
 * the one identity every version has. It tells apart Ruby threads that share a native thread
 * (M:N threads, 3.3+ with RUBY_MN_THREADS=1). An address can be reused by a later thread once its
 * thread is freed; the name is read again once per interval, and an unnamed thread's more often
 * while it is young (below).
 *
 * Per process, bounded (RTHREAD_MAX_PER_PROC, counted when hit), owned by the collector's target:
 * it dies with the process.
 */
#ifndef RP_RTHREADS_H
#define RP_RTHREADS_H

#include <stdint.h>
#include <sys/types.h>

#include "ruby/offsets.h"

/* Ruby threads cached per process before the cache is dropped and refilled. */
#define RTHREAD_MAX_PER_PROC 4096
/* An unnamed thread's name is read again for this long after its first sight, at most every
 * RTHREAD_REREAD_NS: a thread named just after its start is named from its next sample on. */
#define RTHREAD_YOUNG_NS     2000000000LL
#define RTHREAD_REREAD_NS    20000000LL
/* Longest thread name kept (bytes, NUL included); longer ones are cut. */
#define RTHREAD_NAME_MAX     128

struct rthread_label {
	char id[24];		     /* "0x55db74f1fa90": the rb_thread_t address */
	char name[RTHREAD_NAME_MAX]; /* Thread#name; "" when nil or not readable */
};

/* Counters, shared by every process's cache (the collector owns them). */
struct rthread_stats {
	uint64_t reads;	      /* threads read from the process (first sight in an interval, a young
			       * unnamed thread again: RTHREAD_YOUNG_NS) */
	uint64_t invalid;     /* thread pointers that were not a live Ruby thread */
	uint64_t name_failed; /* thread names that could not be read */
	uint64_t resets;      /* caches dropped at RTHREAD_MAX_PER_PROC */
};

struct rthreads;

/* A process's cache; stats (not NULL) receives its counts. NULL with errno ENOMEM. */
struct rthreads *rthreads__new(pid_t pid, const struct ruby_offsets *off,
			       struct rthread_stats *stats);
void rthreads__free(struct rthreads *r);
/* A new interval: each thread's name is read again on its first sight. */
void rthreads_new_epoch(struct rthreads *r);
/*
 * The labels of the Ruby thread whose rb_thread_t is at `th`, valid until the next call on r.
 * 0; -EINVAL: not a live Ruby thread (its Thread object does not point back at it), counted;
 * -ENOMEM.
 */
int rthreads_get(struct rthreads *r, uint64_t th, const struct rthread_label **out);

#endif
