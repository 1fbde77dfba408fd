/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sampler.h - owns the BPF side: loads the skeleton, attaches cpu-clock perf events on every
 * online CPU, registers Ruby processes, reads the ring buffer and reassembles chunked stacks,
 * reads the statistics, and runs the thread-pointer task iterator.
 */
#ifndef RP_SAMPLER_H
#define RP_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rubyprof.h"

struct sampler;

struct sampler_opts {
	unsigned int frequency;	   /* Hz per CPU */
	unsigned int max_frames;   /* walk limit, <= RP_MAX_FRAMES_LIMIT */
	size_t ringbuf_bytes;	   /* power of two, multiple of the page size */
	bool stacks_mixed;	   /* also copy user registers and stacks (RP_REC_USTACK) */
	unsigned int ustack_bytes; /* mixed: bytes of stack above sp, RP_USTACK_MIN..MAX */
	/* --clock wall: samples are `running` wall samples, only of processes flagged
	 * RP_PROCF_WALL_RUNNING (the others' are dropped and counted, RP_STAT_WALL_MUTED) */
	bool clock_wall;
	bool kernel_stacks;	   /* mixed: the kernel stack of each sample too (RP_REC_KSTACK) */
	unsigned int native_procs; /* mixed: RP_NATIVE_*: processes that are no Ruby sampled too */
	const uint32_t *native_pids; /* RP_NATIVE_LISTED: those (at most RP_MAX_NATIVE_PIDS) */
	size_t nnative_pids;
	/* the daemon's pid namespace (pidns_self): 0 for the initial one, else its inode number,
	 * into which the BPF programs translate every pid (bpf/pidns.bpf.h) */
	uint32_t pidns_ino;
};

/* One complete sample; frames leaf first. `first` is the header of its first chunk. */
struct sampler_stack {
	const struct rp_sample *first;
	const struct rp_frame *frames;
	size_t nframes;
	uint32_t flags;	    /* RP_SAMPLE_* of all chunks */
	uint32_t truncated; /* control frames cut at the root end */
	/* frames[nframes - nshared, nframes) are those of this CPU's stack of sample
	 * first->base_seq, the last complete one delivered before (a delta shares its root end) */
	size_t nshared;
	/* samples/count it stands for: 1, or a wall record's reused visits (0 reads as 1) */
	uint32_t samples;
	/* the thread's OpenTelemetry thread-context record (RP_REC_TCTX's data: RP_TCTX_HDR bytes
	 * and its attributes), NULL when it had none; the app's bytes, not checked yet */
	const uint8_t *tctx;
	size_t tctx_len;
	uint32_t tctx_flags; /* RP_TCTX_F_* */
};

/* What the dispatcher calls for each kind of record. */
struct sampler_handlers {
	void (*on_stack)(void *ctx, const struct sampler_stack *stack);
	void (*on_proc)(void *ctx, const struct rp_proc_event *ev); /* may be NULL */
	/* size: the record's bytes (its copy's length is checked against it); may be NULL */
	void (*on_ustack)(void *ctx, const struct rp_ustack *u, size_t size);
	/* a sample's kernel stack (its size checked); may be NULL */
	void (*on_kstack)(void *ctx, const struct rp_kstack *k);
	void *ctx;
};

/* Userspace-side counters, next to the BPF stats. */
struct sampler_counters {
	uint64_t bpf[RP_STAT_MAX];
	uint64_t incomplete;	/* stacks missing a chunk (a chunk was dropped) */
	uint64_t bad_records;	/* records of an unknown kind or version, or malformed */
	uint64_t ring_bytes;	/* bytes of records read from the ring buffer */
	uint64_t tctx_unpaired; /* thread-context records whose sample never came (it was lost) */
};

/* Opens and loads the BPF object; nothing is attached yet. NULL with errno set; a verifier
 * failure logs the tail of the verifier log. */
struct sampler *sampler__new(const struct sampler_opts *opts, const struct sampler_handlers *h);
void sampler__free(struct sampler *s);

struct bpf_object;
/* Logs (debug) how much of the verifier's limit each loaded program of obj took: the margin a
 * kernel whose verifier explores more (another version, another build) has left. */
void sampler_log_verified(struct bpf_object *obj);
/* The dispatcher and stack reassembly alone, for `ncpus` CPUs, with no BPF object (records come
 * from sampler_feed; tests). NULL with errno set. */
struct sampler *sampler__new_offline(const struct sampler_opts *opts,
				     const struct sampler_handlers *h, int ncpus);
/* Dispatches one ring-buffer record as if read from the ring buffer. 0 or -errno. */
int sampler_feed(struct sampler *s, void *data, size_t size);

/* Starts sampling on every online CPU, and the process life-cycle tracepoints. 0 or -errno. */
int sampler_attach(struct sampler *s);
/* Whether exec/fork/exit events arrive (else the caller must scan /proc more often). */
bool sampler_has_lifecycle(const struct sampler *s);

/* The ring buffer's epoll fd: readable when records wait (see sampler_consume). */
int sampler_fd(const struct sampler *s);
/* Adds a ring buffer whose records only wake the caller (wall.c's wall_wake): readable through
 * sampler_fd, emptied by sampler_consume, its records dropped. 0 or -errno. */
int sampler_add_wake_ring(struct sampler *s, int map_fd);
/* Records one sampler_consume() call delivers at most, and the time it spends at most. */
#define SAMPLER_CONSUME_MAX 4096
#define SAMPLER_CONSUME_NS  (50 * 1000000LL)
/* Delivers waiting records without blocking, at most SAMPLER_CONSUME_MAX, for at most
 * SAMPLER_CONSUME_NS (call again while it returns SAMPLER_CONSUME_MAX: more may wait). Number
 * of records, or -errno. */
int sampler_consume(struct sampler *s);

/* Stops every CPU's sampling event (for good: a run's end), so that what the ring buffer holds
 * then is all there will be. 0 or -errno. */
int sampler_pause(struct sampler *s);

/* Changes the sampling frequency of every CPU's event. 0 or -errno. */
int sampler_set_frequency(struct sampler *s, unsigned int frequency);

/* Enables / disables sampling of a process. 0 or -errno. */
int sampler_set_proc(struct sampler *s, uint32_t pid, const struct rp_proc *proc);
int sampler_del_proc(struct sampler *s, uint32_t pid);
/* Sets the thread-context fields (tctx_*) of pid's entry to tctx's, the rest as it is. 0, -ENOENT
 * (no entry: not profiled any more) or -errno. */
int sampler_set_proc_tctx(struct sampler *s, uint32_t pid, const struct rp_proc *tctx);

int sampler_counters(struct sampler *s, struct sampler_counters *out);

/* Thread pointers (fsbase) of every thread of pid. *n is set to the number found (<= max). */
int sampler_thread_pointers(struct sampler *s, uint32_t pid, struct rp_thread_tp *out, size_t max,
			    size_t *n);

/*
 * What another BPF object that sends records through this sampler needs (daemon/profile/wall.c): the
 * maps it shares, and the reassembly slot of its own (`extra_cpu`: its records carry that cpu).
 */
struct sampler_maps {
	int procs, samples, stats;
	uint32_t extra_cpu;
	uint32_t max_frames, slot_blocks;
	uint64_t rb_wakeup_bytes;
	uint32_t pidns_ino, pidns_level; /* the daemon's pid namespace (0, 0: the initial one) */
};

/* 0, or -ENODEV for an offline sampler (no BPF object). */
int sampler_shared_maps(const struct sampler *s, struct sampler_maps *out);

/*
 * Called with every complete stack of the extra slot (wall-clock records) before on_stack: it
 * may change the stack (an RP_SAMPLE_SAME record gets the frames of the thread's last walked
 * stack from daemon/profile/wall.c's copy) and keeps its own copy of the others. NULL: none.
 */
typedef void (*sampler_extra_hook)(void *ctx, struct sampler_stack *st);
void sampler_set_extra_hook(struct sampler *s, sampler_extra_hook fn, void *ctx);
/* Hands a stack made outside the ring buffer (a wall thread's pending visits, sent by the
 * daemon when its entry goes) to the on_stack handler, as if it had been read. */
void sampler_on_stack(struct sampler *s, const struct sampler_stack *st);

#endif
