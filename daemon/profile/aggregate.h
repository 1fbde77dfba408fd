/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * aggregate.h - counts identical stacks, per interval, with frames interned per process.
 *
 * Each profiled process has an agg_proc: its labels and its interned frames (kind, name, file,
 * lines), kept for the life of the process so that a frame is symbolized once. Stacks are
 * (process, tid, thread name, frame ids leaf first) with a vector of values (the sample types,
 * e.g. [samples, cpu ns]); they belong to the current interval and agg_cut() starts the next one.
 * A process that exited is freed at the cut after its last interval, so its names survive into
 * that interval's profile. Every table is bounded: what is past a bound is counted, never lost
 * silently.
 */
#ifndef RP_AGGREGATE_H
#define RP_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/pprof.h"

#define AGG_MAX_VALUES		4
/* Frames interned per process; past it, new frames are refused (counted) until the next cut,
 * which then starts the process's table over. */
#define AGG_MAX_FRAMES_PER_PROC (1u << 20)

enum agg_frame_kind {
	AGG_FRAME_RUBY = 1,   /* a Ruby method or block */
	AGG_FRAME_CFUNC = 2,  /* a C function called from Ruby */
	AGG_FRAME_MARK = 3,   /* rubyprofd's own marker: truncation, no Ruby context... */
	AGG_FRAME_NATIVE = 4, /* a native function (--stacks mixed); file: its object */
};

/*
 * Where a native frame is in its process, for a server to symbolize what the host could not: the
 * function's entry address, and the object's mapping (its pprof Mapping: memory range, and the
 * file offset mapped at its start).
 */
struct agg_native_addr {
	uint64_t addr;
	uint64_t map_start, map_limit, map_offset;
};

struct agg_frame {
	enum agg_frame_kind kind;
	const char *name;
	const char *file; /* may be "" */
	int64_t start_line;
	int64_t line;
	const char *build_id; /* AGG_FRAME_NATIVE: its object's GNU build id (hex), else NULL */
	struct agg_native_addr at; /* AGG_FRAME_NATIVE: where it is (all 0: unknown) */
};

/* Labels of a process's samples and series. Strings are copied. */
struct agg_proc_info {
	pid_t pid;
	pid_t nspid;		  /* pid in its own namespace (a label when it differs) */
	const char *container;	  /* container id, "" or NULL outside containers */
	const char *service;	  /* the service (app) it belongs to, "" or NULL: none */
	const char *ruby_version; /* "3.1.2" */
	/* from its OpenTelemetry process context (procctx.h), "" or NULL: none */
	const char *service_version; /* service.version (a series label) */
	const char *environment;     /* deployment.environment.name (a series label) */
	const char *instance_id;     /* service.instance.id (a sample label) */
};

struct agg_proc;

struct agg_stack {
	const struct agg_proc *proc;
	pid_t pid, tid;
	const char *thread_name;
	const char *ruby_thread;      /* the Ruby thread's identity, "" when unknown */
	const char *ruby_thread_name; /* Thread#name, "" when nil or unknown */
	const char *state;	      /* wall-clock samples: thread_state label, "" otherwise */
	const char *syscall;	      /* wall-clock samples in blocked_io: the syscall, or "" */
	const uint32_t *frames;	      /* frame ids of `proc`, leaf first */
	size_t nframes;
	const int64_t *values; /* agg's nvalues values */
};

struct agg_stats {
	uint64_t dropped_full;	  /* samples dropped: the interval's stack table was full */
	uint64_t frames_refused;  /* frames refused: a process's frame table was full */
	uint64_t procs;		  /* processes kept (live, and exited within the interval) */
	uint64_t procs_freed;	  /* processes freed after they exited */
	uint64_t frame_resets;	  /* processes whose frame table was started over */
	uint64_t interned_frames; /* frames interned, all processes */
	uint64_t interned_bytes;  /* bytes of interned strings, all processes */
	uint64_t stacks;	  /* distinct stacks in the current interval */
};

struct agg;

/* nvalues: values per sample (<= AGG_MAX_VALUES); max_stacks: distinct stacks per interval. */
struct agg *agg__new(size_t nvalues, size_t max_stacks);
void agg__free(struct agg *a);

/* A new process (a pid that exited and was reused gets a new one). NULL on ENOMEM. */
struct agg_proc *agg_proc__new(struct agg *a, const struct agg_proc_info *info);
/* The process exited: its stacks stay in this interval; it is freed at the next agg_cut(). */
void agg_proc_exit(struct agg *a, struct agg_proc *p);
const struct agg_proc_info *agg_proc_info(const struct agg_proc *p);
/* Bumped when the process's frame table is started over: frame ids cached by a caller are void. */
uint32_t agg_proc_generation(const struct agg_proc *p);
/* How many intervals agg_cut() ended: what a caller checks once per interval changes with it. */
uint32_t agg_cuts(const struct agg *a);

/* Interns a frame of process p; returns its id (> 0), or 0 with errno ENOMEM or ENOSPC (the
 * process's table is full until the next cut). Strings are copied. */
uint32_t agg_frame_id(struct agg_proc *p, enum agg_frame_kind kind, const char *name,
		      const char *file, int64_t start_line, int64_t line);
/* A native frame (AGG_FRAME_NATIVE) of object `file`, whose build id (hex; "" or NULL: unknown)
 * its pprof Mapping carries. As agg_frame_id. */
uint32_t agg_native_frame_id(struct agg_proc *p, const char *name, const char *file,
			     const char *build_id);
/* Sets where native frame `id` is, if it was not set yet (a function has one entry). */
void agg_native_frame_at(struct agg_proc *p, uint32_t id, const struct agg_native_addr *at);
const struct agg_frame *agg_frame_get(const struct agg_proc *p, uint32_t id);

/* Adds values to a stack of p. 0, -ENOSPC (the interval's table is full: counted), -ENOMEM. */
int agg_add(struct agg *a, struct agg_proc *p, pid_t tid, const char *thread_name,
	    const uint32_t *frames, size_t nframes, const int64_t *values);

/* The thread of a sample: native (tid, name) and Ruby (identity, Thread#name; NULL or "": none). */
struct agg_thread {
	pid_t tid;
	const char *name;
	const char *ruby_thread;
	const char *ruby_thread_name;
	const char *state; /* thread_state label (a static string, not copied); NULL or "": none */
	const char *syscall; /* syscall label (static, as state); NULL or "": none */
};

/* agg_add with the sample's Ruby thread: a stack is counted per (native, Ruby) thread. */
int agg_add_thread(struct agg *a, struct agg_proc *p, const struct agg_thread *th,
		   const uint32_t *frames, size_t nframes, const int64_t *values);

/* Every stack of the current interval. */
void agg_foreach(const struct agg *a, void (*fn)(void *ctx, const struct agg_stack *st), void *ctx);
/* Every process kept (live, or exited within the current interval). */
void agg_foreach_proc(const struct agg *a, void (*fn)(void *ctx, const struct agg_proc *p),
		      void *ctx);
/* Sum of values[0] over the interval's stacks. */
uint64_t agg_total(const struct agg *a);
size_t agg_nstacks(const struct agg *a);
void agg_stats(const struct agg *a, struct agg_stats *out);

/*
 * Ends the interval: every stack is forgotten (frames stay interned), exited processes are
 * freed, and full frame tables start over.
 */
void agg_cut(struct agg *a);

/* agg_to_pprof() flags */
/* no thread_name, ruby_thread nor ruby_thread_name label (Pyroscope: one series each) */
#define AGG_PPROF_NO_THREAD_NAME 0x1

/*
 * Adds the interval's stacks to a pprof builder as samples [values[0], values[1]] with pid, tid,
 * thread name and Ruby thread (ruby_thread, ruby_thread_name) labels, and ns_pid, container_id and service_instance_id where the process has them. service: only
 * the stacks of processes of that service (NULL: all); flags: AGG_PPROF_*. 0 or -errno.
 */
int agg_to_pprof(const struct agg *a, struct pprof *p, const char *service, unsigned int flags);

#endif
