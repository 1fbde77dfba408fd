/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * aggregate.h - counts identical stacks, per interval, with frames interned per process.
 *
 * Each profiled process has an aggregate_proc: its labels and its interned frames (kind, name, file,
 * lines), kept for the life of the process so that a frame is symbolized once. Stacks are
 * (process, tid, thread name, frame ids leaf first) with a vector of values (the sample types,
 * e.g. [samples, cpu ns]); they belong to the current interval and aggregate_cut() starts the next one.
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

enum aggregate_frame_kind {
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
struct aggregate_native_addr {
	uint64_t addr;
	uint64_t map_start, map_limit, map_offset;
};

struct aggregate_frame {
	enum aggregate_frame_kind kind;
	const char *name;
	const char *file; /* may be "" */
	int64_t start_line;
	int64_t line;
	const char *build_id; /* AGG_FRAME_NATIVE: its object's GNU build id (hex), else NULL */
	struct aggregate_native_addr at; /* AGG_FRAME_NATIVE: where it is (all 0: unknown) */
};

/* Labels of a process's samples and series. Strings are copied. */
struct aggregate_proc_info {
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

struct aggregate_proc;

struct aggregate_stack {
	const struct aggregate_proc *proc;
	pid_t pid, tid;
	const char *thread_name;
	const char *ruby_thread;      /* the Ruby thread's identity, "" when unknown */
	const char *ruby_thread_name; /* Thread#name, "" when nil or unknown */
	const char *state;	      /* wall-clock samples: thread_state label, "" otherwise */
	const char *syscall;	      /* wall-clock samples in blocked_io: the syscall, or "" */
	/* more string labels, packed as name NUL value NUL ... (the thread context's: trace_id,
	 * span_id, attributes; daemon/proc/threadctx.h), ctx_len bytes (0: none) */
	const char *ctx;
	size_t ctx_len;
	const uint32_t *frames; /* frame ids of `proc`, leaf first */
	size_t nframes;
	const int64_t *values; /* agg's nvalues values */
};

struct aggregate_stats {
	uint64_t dropped_full;	  /* samples dropped: the interval's stack table was full */
	uint64_t frames_refused;  /* frames refused: a process's frame table was full */
	uint64_t procs;		  /* processes kept (live, and exited within the interval) */
	uint64_t procs_freed;	  /* processes freed after they exited */
	uint64_t frame_resets;	  /* processes whose frame table was started over */
	uint64_t interned_frames; /* frames interned, all processes */
	uint64_t interned_bytes;  /* bytes of interned strings, all processes */
	uint64_t stacks;	  /* distinct stacks in the current interval */
};

struct aggregate;

/* nvalues: values per sample (<= AGG_MAX_VALUES); max_stacks: distinct stacks per interval. */
struct aggregate *aggregate__new(size_t nvalues, size_t max_stacks);
void aggregate__free(struct aggregate *a);

/* A new process (a pid that exited and was reused gets a new one). NULL on ENOMEM. */
struct aggregate_proc *aggregate_proc__new(struct aggregate *a,
					   const struct aggregate_proc_info *info);
/* The process exited: its stacks stay in this interval; it is freed at the next aggregate_cut(). */
void aggregate_proc_exit(struct aggregate *a, struct aggregate_proc *p);
const struct aggregate_proc_info *aggregate_proc_info(const struct aggregate_proc *p);
/* Bumped when the process's frame table is started over: frame ids cached by a caller are void. */
uint32_t aggregate_proc_generation(const struct aggregate_proc *p);
/* How many intervals aggregate_cut() ended: what a caller checks once per interval changes with it. */
uint32_t aggregate_cuts(const struct aggregate *a);

/* Interns a frame of process p; returns its id (> 0), or 0 with errno ENOMEM or ENOSPC (the
 * process's table is full until the next cut). Strings are copied. */
uint32_t aggregate_frame_id(struct aggregate_proc *p, enum aggregate_frame_kind kind,
			    const char *name, const char *file, int64_t start_line, int64_t line);
/* A native frame (AGG_FRAME_NATIVE) of object `file`, whose build id (hex; "" or NULL: unknown)
 * its pprof Mapping carries. As aggregate_frame_id. */
uint32_t aggregate_native_frame_id(struct aggregate_proc *p, const char *name, const char *file,
				   const char *build_id);
/* Sets where native frame `id` is, if it was not set yet (a function has one entry). */
void aggregate_native_frame_at(struct aggregate_proc *p, uint32_t id,
			       const struct aggregate_native_addr *at);
const struct aggregate_frame *aggregate_frame_get(const struct aggregate_proc *p, uint32_t id);

/* Adds values to a stack of p. 0, -ENOSPC (the interval's table is full: counted), -ENOMEM. */
int aggregate_add(struct aggregate *a, struct aggregate_proc *p, pid_t tid, const char *thread_name,
		  const uint32_t *frames, size_t nframes, const int64_t *values);

/* The thread of a sample: native (tid, name) and Ruby (identity, Thread#name; NULL or "": none). */
struct aggregate_thread {
	pid_t tid;
	const char *name;
	const char *ruby_thread;
	const char *ruby_thread_name;
	const char *state; /* thread_state label (a static string, not copied); NULL or "": none */
	const char *syscall; /* syscall label (static, as state); NULL or "": none */
	const char *ctx;     /* packed labels (aggregate_stack.ctx), copied; NULL: none */
	size_t ctx_len;
};

/* aggregate_add with the sample's Ruby thread: a stack is counted per (native, Ruby) thread. */
int aggregate_add_thread(struct aggregate *a, struct aggregate_proc *p,
			 const struct aggregate_thread *th, const uint32_t *frames, size_t nframes,
			 const int64_t *values);

/* Every stack of the current interval. */
void aggregate_foreach(const struct aggregate *a,
		       void (*fn)(void *ctx, const struct aggregate_stack *st), void *ctx);
/* Every process kept (live, or exited within the current interval). */
void aggregate_foreach_proc(const struct aggregate *a,
			    void (*fn)(void *ctx, const struct aggregate_proc *p), void *ctx);
/* Sum of values[0] over the interval's stacks. */
uint64_t aggregate_total(const struct aggregate *a);
size_t aggregate_nstacks(const struct aggregate *a);
void aggregate_stats(const struct aggregate *a, struct aggregate_stats *out);

/*
 * Ends the interval: every stack is forgotten (frames stay interned), exited processes are
 * freed, and full frame tables start over.
 */
void aggregate_cut(struct aggregate *a);

/* aggregate_to_pprof() flags */
/* no thread_name, ruby_thread nor ruby_thread_name label (Pyroscope: one series each) */
#define AGG_PPROF_NO_THREAD_NAME 0x1

/*
 * Adds the interval's stacks to a pprof builder as samples [values[0], values[1]] with pid, tid,
 * thread name and Ruby thread (ruby_thread, ruby_thread_name) labels, and ns_pid, container_id and service_instance_id where the process has them. service: only
 * the stacks of processes of that service (NULL: all); flags: AGG_PPROF_*. 0 or -errno.
 */
int aggregate_to_pprof(const struct aggregate *a, struct pprof *p, const char *service,
		       unsigned int flags);

#endif
