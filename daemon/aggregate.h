/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * aggregate.h - counts identical stacks. Frames are interned (kind, name, file, lines) and get a
 * stable id; stacks are (pid, tid, thread name, frame ids leaf first) with a count. The table is
 * bounded: stacks past the limit are counted as dropped, never silently lost.
 */
#ifndef RP_AGGREGATE_H
#define RP_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pprof.h"

enum agg_frame_kind {
	AGG_FRAME_RUBY = 1,  /* a Ruby method or block */
	AGG_FRAME_CFUNC = 2, /* a C function called from Ruby */
	AGG_FRAME_MARK = 3,  /* rubyprofd's own marker: truncation, no Ruby context... */
};

struct agg_frame {
	enum agg_frame_kind kind;
	const char *name;
	const char *file; /* may be "" */
	int64_t start_line;
	int64_t line;
};

struct agg_stack {
	pid_t pid, tid;
	const char *thread_name;
	const uint32_t *frames; /* frame ids, leaf first */
	size_t nframes;
	uint64_t count;
};

struct agg;

/* max_stacks: distinct stacks kept; further new stacks are dropped and counted. */
struct agg *agg__new(size_t max_stacks);
void agg__free(struct agg *a);

/* Interns a frame; returns its id (> 0) or 0 on ENOMEM. Strings are copied. */
uint32_t agg_frame_id(struct agg *a, enum agg_frame_kind kind, const char *name, const char *file,
		      int64_t start_line, int64_t line);
const struct agg_frame *agg_frame_get(const struct agg *a, uint32_t id);

/* Adds count to a stack. 0, -ENOSPC (the table is full: counted in agg_dropped), or -ENOMEM. */
int agg_add(struct agg *a, pid_t pid, pid_t tid, const char *thread_name, const uint32_t *frames,
	    size_t nframes, uint64_t count);

/* Labels of a process's samples: its pid in its own namespace, its container. 0 or -ENOMEM. */
int agg_set_process(struct agg *a, pid_t pid, pid_t nspid, const char *container);

void agg_foreach(const struct agg *a, void (*fn)(void *ctx, const struct agg_stack *st), void *ctx);
uint64_t agg_total(const struct agg *a);
uint64_t agg_dropped(const struct agg *a);
size_t agg_nstacks(const struct agg *a);

/* Adds every stack to a pprof builder as a sample [count, count * period_ns] with pid, tid and
 * thread name labels, and ns_pid and container_id where the process has them. 0 or -errno. */
int agg_to_pprof(const struct agg *a, struct pprof *p, int64_t period_ns);

#endif
