/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rubyprof.h - the one header shared by the BPF programs and the daemon.
 *
 * Everything that crosses the kernel/user boundary is defined here with fixed-width fields and
 * explicit padding; sizes are checked with _Static_assert so that both compilers (clang -target bpf
 * and gcc) agree on the layout.
 */
#ifndef RUBYPROF_H
#define RUBYPROF_H

#ifdef __BPF__
/* vmlinux.h provides __u8.. __u64 */
#else
#include <linux/types.h>
#endif

/* ---- limits ------------------------------------------------------------------------------- */

/*
 * Frames of a 24 KiB ring-buffer record of bench/floor.bpf.c's shipping reference, which sends a
 * whole stack the way rubyprofd did before stacks travelled as deltas (RP_REC_VERSION 1); also
 * the most frames one RP_REC_STACK record carries.
 */
#define RP_CHUNK_FRAMES	      1024
/*
 * The BPF side keeps each CPU's last stack root first in blocks of RP_SLOT_BLOCK frames (the
 * `slots` map), and a stack record starts at a block boundary: the unit in which a new stack is
 * compared with the last one and shipped.
 */
#define RP_SLOT_BLOCK	      16
/* A stack is shipped whole at least every RP_FULL_EVERY samples of a CPU (see RP_SAMPLE_DELTA). */
#define RP_FULL_EVERY	      256
/* Control frames copied with one bpf_probe_read_user: 8 x 64 bytes = 512 bytes. */
#define RP_CFP_BATCH	      8
/* Largest sizeof(rb_control_frame_t) of any supported Ruby (3.1/3.2: 64). */
#define RP_CFP_MAX_SIZE	      64
/* Default and hard limits of the configurable frame limit (--max-frames). */
#define RP_MAX_FRAMES_DEFAULT 4096
#define RP_MAX_FRAMES_LIMIT   65536
/* Ruby processes the BPF side can know at once. */
#define RP_MAX_PROCS	      8192

/* ---- frames ------------------------------------------------------------------------------- */

/*
 * One Ruby frame as the BPF walk found it: raw addresses only, symbolized in userspace.
 *   RP_FRAME_ISEQ:  addr = cfp->iseq (rb_iseq_t *), pc = cfp->pc
 *   RP_FRAME_CFUNC: addr = method entry (ep[VM_ENV_DATA_INDEX_ME_CREF]), pc = 0
 * The kind and flags live in the top byte of `info`; the low 56 bits are the pc. `ep` is the
 * frame's environment pointer, which leads to the method entry of a Ruby frame (its owner class,
 * for Ruby 3.4's qualified labels); it comes free with the control frame, and userspace follows
 * it only the first time a method is seen.
 */
struct rp_frame {
	__u64 addr;
	__u64 info;
	__u64 ep;
};

#define RP_FRAME_PC_MASK     0x00ffffffffffffffULL
#define RP_FRAME_KIND_SHIFT  56
#define RP_FRAME_KIND_ISEQ   0x01ULL
#define RP_FRAME_KIND_CFUNC  0x02ULL
/* The control frame carries a JIT return address (cfp->jit_return != 0): its pc is unreliable. */
#define RP_FRAME_FLAG_JIT    0x80ULL
/*
 * A Ruby frame whose environment is local (a method's own frame, not a block's): `ep` holds its
 * ep[-2] as read at the sample, the method entry (or the svar or cref holding it). A short
 * method's frame is gone by the time userspace could read it, and with it the method's owner.
 */
#define RP_FRAME_FLAG_ME     0x40ULL
/*
 * --stacks mixed only: the control frame is flagged VM_FRAME_FLAG_FINISH, the first frame of a VM
 * invocation (rb_vm_exec): where the native frames of the C code that invoked it go.
 */
#define RP_FRAME_FLAG_FINISH 0x20ULL

#define rp_frame_kind(f) (((f)->info >> RP_FRAME_KIND_SHIFT) & 0x1f)
#define rp_frame_pc(f)	 ((f)->info & RP_FRAME_PC_MASK)

/* ---- records in the ring buffer ----------------------------------------------------------- */

/*
 * Every record in the ring buffer starts with struct rp_rec: a kind, its size and a weight, so that
 * Ruby stacks, process events and the kinds of later work (native stack copies, wall-clock samples
 * with a thread state) share one buffer and one dispatcher in the daemon. A reader skips kinds it
 * does not know (by `size`) and refuses a version it does not know.
 */
#define RP_REC_VERSION 2 /* 2: stacks root first, as deltas of the CPU's last stack */

#define RP_REC_STACK  1 /* struct rp_sample: one chunk of a sampled Ruby stack */
#define RP_REC_PROC   2 /* struct rp_proc_event: exec, fork or exit of a process */
#define RP_REC_USTACK 3 /* struct rp_ustack: user registers and stack copy (--stacks mixed) */
#define RP_REC_KSTACK 4 /* struct rp_kstack: kernel stack of a sample (--kernel-stacks) */
#define RP_REC_TCTX   5 /* struct rp_tctx: the OpenTelemetry thread context of a sample */

/* rp_rec.wunit: what `weight` counts */
#define RP_WEIGHT_COUNT 0 /* samples */
#define RP_WEIGHT_NS	1 /* nanoseconds (wall-clock and off-CPU samples) */

/* rp_rec.state: the sampled thread's state (0 for records that are not samples) */
#define RP_TSTATE_NONE	     0
#define RP_TSTATE_ON_CPU     1 /* a cpu-clock sample: the thread was running */
/* Wall-clock samples (--clock wall): the Ruby thread's state (docs/internals/wall-clock.md §3) */
#define RP_TSTATE_RUNNING    2 /* holds the GVL (or runs outside it on a CPU) */
#define RP_TSTATE_GVL_WAIT   3 /* runnable, waiting for the GVL */
#define RP_TSTATE_SLEEPING   4 /* sleep, Queue#pop, ConditionVariable#wait, Mutex#lock, join */
#define RP_TSTATE_BLOCKED_IO 5 /* in a blocking region (I/O, select, DNS), or an M:N I/O wait */
#define RP_TSTATE_STOPPED    6 /* stopped or traced task, or a killed Ruby thread */
#define RP_TSTATE_UNKNOWN    7 /* fits no row (a torn read) */

struct rp_rec {
	__u8 version;  /* RP_REC_VERSION */
	__u8 kind;     /* RP_REC_* */
	__u8 state;    /* RP_TSTATE_* */
	__u8 wunit;    /* RP_WEIGHT_* */
	__u32 size;    /* bytes of this record, this header included */
	__u64 weight;  /* the sample's value in `wunit` (1 for a cpu-clock sample) */
	__u64 time_ns; /* bpf_ktime_get_ns() */
	__u32 pid;     /* tgid, in the initial pid namespace */
	__u32 tid;
};

/* rp_sample.flags */
#define RP_SAMPLE_LAST	    0x01  /* last chunk of this sample */
#define RP_SAMPLE_TRUNCATED 0x02  /* the walk stopped at max_frames; see `truncated` */
#define RP_SAMPLE_NO_EC	    0x04  /* a thread of a Ruby process with no Ruby execution context */
#define RP_SAMPLE_BAD_EC    0x08  /* the EC failed its shape check; no frames */
#define RP_SAMPLE_NOT_GVL   0x10  /* Ruby < 3.0: the global EC belongs to another thread */
#define RP_SAMPLE_READ_FAIL 0x20  /* a frame batch could not be read; the stack is partial */
#define RP_SAMPLE_GC	    0x40  /* the VM was in garbage collection, run by this thread */
#define RP_SAMPLE_JIT_LEAF  0x80  /* the leaf frame is JIT code (cfp->jit_return set) */
#define RP_SAMPLE_DELTA	    0x100 /* slots [0, first) are those of sample base_seq of this CPU */
/* wall: no frames sent, the stack is the one of this Ruby thread's sample base_seq (unchanged) */
#define RP_SAMPLE_SAME	    0x200

/*
 * RP_REC_STACK: one chunk of one sampled stack. The stack is an array of `nslots` slots, one per
 * walked control frame, ROOT FIRST (slot nslots - 1 is the leaf); a slot whose frame kind is 0 is
 * a control frame Ruby's backtrace skips (ifunc, dummy). A sample is the sequence of chunks with
 * the same (cpu, seq), chunk = 0, 1, ..., the last flagged RP_SAMPLE_LAST; chunk k carries slots
 * [first, first + nframes), each chunk continuing where the previous one ended, up to nslots.
 *
 * Consecutive samples of a thread share most of their stack (all but a few frames at the leaf
 * end), so the BPF side compares each new stack with the last one of its CPU and ships only
 * from the first differing block on: with RP_SAMPLE_DELTA, slots [0, first) of chunk 0 are
 * those of the CPU's previous complete stack, sample `base_seq`, which the reader keeps.
 * Without it, slots [0, first) are unknown (a read failed at the root end: a partial stack).
 * Only the header and `nframes` frames are sent (hdr.size says how many bytes).
 */
struct rp_sample {
	struct rp_rec hdr;
	__u32 cpu;
	__u32 seq;     /* per-CPU sample counter */
	__u32 flags;   /* RP_SAMPLE_* */
	__u16 chunk;   /* index of this chunk */
	__u16 nframes; /* frames (slots) in this record, <= RP_CHUNK_FRAMES */
	union {
		__u32 truncated; /* control frames left unwalked at the root end (last chunk) */
		__u32 visits;	 /* RP_SAMPLE_SAME: the wall visits this record stands for (>= 1) */
	};
	__u32 gc_mode;	/* RP_SAMPLE_GC: objspace mode (1 marking, 2 sweeping, 3 compacting) */
	__u32 first;	/* slot of frames[0] */
	__u32 nslots;	/* slots of the whole stack */
	__u32 base_seq; /* RP_SAMPLE_DELTA: the sample whose slots [0, first) this one shares */
	__u32 syscall;	/* wall samples: the task's syscall number + 1 (0: none, or not known) */
	char comm[16];	/* thread name at sample time */
	/*
	 * The sampled EC's thread_ptr (rb_thread_t *): which Ruby thread ran, told apart even where
	 * Ruby threads share a native thread (M:N, 3.3+). 0 when no valid EC was read.
	 */
	__u64 ruby_thread;
	/* zero-length, not flexible: the header is embedded in the BPF side's scratch space */
	struct rp_frame frames[0];
};

#define RP_SAMPLE_HDR_SIZE 96

/* RP_REC_PROC events */
#define RP_PROC_EXEC 1 /* the process (hdr.pid) ran execve: a new program */
#define RP_PROC_FORK 2 /* hdr.pid is a new process, forked from `ppid` (a profiled Ruby) */
#define RP_PROC_EXIT 3 /* the last thread of hdr.pid exited */

/* rp_proc_event.flags */
#define RP_PROC_F_PROFILED                                                                         \
	0x1 /* exec/exit: its procs entry was removed; fork: copied to the child */

/*
 * RP_REC_PROC: a process life-cycle event from the scheduler tracepoints. The BPF side already
 * acted on it (an exec or exit removes the procs entry, a fork of a profiled Ruby copies it), so
 * that no sample is attributed to a program or process the daemon has not validated.
 * Sent for every exec (a new Ruby is found within milliseconds), and for forks and exits of
 * profiled processes only.
 */
struct rp_proc_event {
	struct rp_rec hdr;
	__u32 event; /* RP_PROC_* */
	__u32 flags; /* RP_PROC_F_* */
	__u32 ppid;  /* RP_PROC_FORK: the parent's tgid */
	__u32 pad;
	__u64 start_time; /* the process's start time (task->start_time, ns): its identity with pid */
	char comm[16];
};

/*
 * RP_REC_USTACK (--stacks mixed only): the sampled thread's user registers and a copy of its
 * user stack, for the daemon to unwind native frames with CFI. Sent just before the Ruby stack
 * of the same sample, whose (cpu, seq) it carries. The copy starts at sp rounded down to its
 * page and is made page by page, so that a stack whose end is nearer than the configured size
 * gives what exists instead of nothing: data[sp & 4095, len) are the bytes from sp upward.
 */
#define RP_USTACK_PAGE	    4096
#define RP_USTACK_MIN	    8192 /* --ustack-bytes limits */
#define RP_USTACK_MAX	    32768
#define RP_USTACK_DEFAULT   16384
/* pages of a record: the configured bytes above sp, plus the page sp is in */
#define RP_USTACK_PAGES_MAX (RP_USTACK_MAX / RP_USTACK_PAGE + 1)

/* rp_ustack.flags */
#define RP_USTACK_SHORT 0x1 /* a page could not be read: the copy ends before the size */
/* A sample of a process that is not a profiled Ruby (--native-processes): no Ruby stack follows,
 * the record is the whole sample and carries its weight. */
#define RP_USTACK_ALONE 0x2

struct rp_ustack {
	struct rp_rec hdr;
	__u32 cpu;
	__u32 seq; /* the RP_REC_STACK sample (rp_sample.seq) of this CPU it belongs to */
	__u64 ip, sp, bp;
	__u32 len;     /* bytes of data copied, from sp rounded down to its page */
	__u32 flags;   /* RP_USTACK_* */
	char comm[16]; /* the thread's name at the sample (RP_USTACK_ALONE: no Ruby stack has it) */
	/* zero-length: the record is reserved at its full size in the ring buffer */
	__u8 data[0];
};

#define RP_USTACK_HDR_SIZE 88

/*
 * RP_REC_KSTACK (--kernel-stacks only): the kernel stack of a sample whose tick found the thread
 * in the kernel (a system call, a page fault, an interrupt), as bpf_get_stack gives it: ips[0]
 * the interrupted address, then return addresses, leaf first. Sent before the sample's
 * RP_REC_USTACK, with its (cpu, seq). A tick in user mode sends none.
 */
#define RP_KSTACK_MAX 64 /* kernel frames kept per sample (deeper: the root end is cut) */

struct rp_kstack {
	struct rp_rec hdr;
	__u32 cpu;
	__u32 seq;
	__u32 n;     /* frames in ips */
	__u32 flags; /* 0 */
	__u64 ips[RP_KSTACK_MAX];
};

#define RP_KSTACK_HDR_SIZE 48

/*
 * RP_REC_TCTX: the sampled thread's OpenTelemetry thread context (OTEP 4947,
 * docs/trace-context.md), sent just before the sample's Ruby stack with its (cpu, seq), only when
 * the thread's otel_thread_ctx_v1 points to a record whose `valid` byte is 1. `data` is the
 * record as the app wrote it: trace-id[16], span-id[8], valid, trace-flags, attrs-data-size
 * (u16), then attrs-data, of which `attrs` bytes are copied (attrs-data-size, or 0 when that
 * is past RP_TCTX_MAX: RP_TCTX_F_OVERSIZE). Decoded (and every byte checked) in userspace.
 */
#define RP_TCTX_HDR	     28	 /* the record's fixed part */
#define RP_TCTX_MAX	     640 /* the OTEP's bound on a whole record */
#define RP_TCTX_F_OVERSIZE   0x1 /* attrs-data-size was past RP_TCTX_MAX - RP_TCTX_HDR */
#define RP_TCTX_F_ATTRS_FAIL 0x2 /* the attributes could not be read */

struct rp_tctx {
	struct rp_rec hdr;
	__u32 cpu;
	__u32 seq;   /* the RP_REC_STACK sample of this CPU it belongs to */
	__u16 attrs; /* bytes of attrs-data in data (after the RP_TCTX_HDR bytes) */
	__u16 flags; /* RP_TCTX_F_* */
	__u32 pad;
	__u8 data[RP_TCTX_MAX];
};

#define RP_TCTX_REC_HDR_SIZE 48

/* --native-processes: which processes that are no profiled Ruby get native samples */
#define RP_NATIVE_RUBY	   0 /* none (the default) */
#define RP_NATIVE_ALL	   1 /* every user process */
#define RP_NATIVE_LISTED   2 /* the tgids of the native_pids map */
#define RP_MAX_NATIVE_PIDS 1024

/* ---- per-process configuration (procs map, keyed by tgid) --------------------------------- */

/* How the sampled thread's rb_execution_context_t is found. */
#define RP_EC_TLS_STATIC   1 /* ec = *(fsbase + tls_off) */
#define RP_EC_TLS_DTV	   2 /* ec = *(dtv[tls_modid].pointer + tls_block_off), dtv = *(fsbase + 8) */
#define RP_EC_GLOBAL	   3 /* ec = *ec_global (Ruby < 3.0); checked against the thread's pthread id */
/* musl: ec = *(dtv[tls_modid] + tls_block_off), dtv = *(fsbase + 8), 8-byte entries, dtv[0] = count */
#define RP_EC_TLS_DTV_MUSL 4

/* How the sampled thread's otel_thread_ctx_v1 (a pointer to its thread-context record) is found. */
#define RP_TCTX_NONE   0 /* the process publishes none (no read at all) */
#define RP_TCTX_STATIC 1 /* ptr = *(fsbase + tctx_off) */
#define RP_TCTX_DTV    2 /* ptr = *(dtv[tctx_modid].pointer + tctx_block_off), glibc's DTV */

/* Offsets of the VM structures that the BPF walk reads; filled from daemon/ruby/offsets.c. */
struct rp_vm_offsets {
	__u16 ec_vm_stack;
	__u16 ec_vm_stack_size;
	__u16 ec_cfp;
	__u16 ec_thread_ptr;
	__u16 cfp_size;
	__u16 cfp_pc;
	__u16 cfp_iseq;
	__u16 cfp_ep;
	__u16 cfp_jit_return; /* 0: the field does not exist in this version */
	__u16 th_thread_id;   /* rb_thread_t -> pthread_t (<= 3.1) or -> nt (3.2+) */
	__u16 nt_thread_id;   /* rb_native_thread -> pthread_t (3.2+), 0 otherwise */
	__u16 cfp_self; /* the frame's receiver: tells apart two calls of one iseq (walk.bpf.h) */
};

/* rp_proc.flags */
/*
 * --clock wall: the perf program's samples of this process are its running threads' wall
 * samples (relabelled RP_TSTATE_RUNNING), and the iterator leaves a thread on a CPU to them. Set
 * only where the iterator can find a thread's task (not 2.7: no tid); without it, in wall mode,
 * the perf program drops the process's samples (the iterator walks every thread).
 */
#define RP_PROCF_WALL_RUNNING 0x1

struct rp_proc {
	__u32 ec_mode;	     /* RP_EC_* */
	__u32 flags;	     /* RP_PROCF_* */
	__s64 tls_off;	     /* RP_EC_TLS_STATIC */
	__u64 tls_modid;     /* RP_EC_TLS_DTV */
	__u64 tls_block_off; /* RP_EC_TLS_DTV: st_value of ruby_current_ec */
	__u64 ec_global;     /* RP_EC_GLOBAL: address of ruby_current_execution_context_ptr */
	__u64 gc_flags;	     /* address of the objspace flags word (during_gc, mode); 0: unknown */
	__u64 gc_running_ec; /* address of the main ractor's running EC (3.0+); 0: not checked */
	/* task->start_time of the process this entry was validated for: a sample of another
	 * process that got the same pid is never walked with it (0: not checked). */
	__u64 start_time;
	struct rp_vm_offsets off;
	/* the OpenTelemetry thread context (RP_TCTX_*), found after its process context said so */
	__u32 tctx_mode;
	__u32 tctx_pad;
	__s64 tctx_off;	      /* RP_TCTX_STATIC */
	__u64 tctx_modid;     /* RP_TCTX_DTV */
	__u64 tctx_block_off; /* RP_TCTX_DTV: st_value of otel_thread_ctx_v1 */
};

/* ---- wall-clock mode (bpf/wall.bpf.c) -------------------------------------------------- */

/* Ruby threads of one process walked per tick at most (the rest is cut and counted). */
#define RP_MAX_WALL_THREADS 1024

/*
 * Where the Ruby thread list and each thread's state are, per Ruby version
 * (docs/internals/wall-clock.md §1.2 - §1.4); 0 where a field does not exist. "anchor" is
 * th->ractor (3.x) or th->vm (2.7).
 */
struct rp_wall_offsets {
	__u16 th_anchor; /* rb_thread_t -> anchor */
	__u16 list_head; /* anchor + : living threads (ccan list head) */
	__u16 owner;	 /* anchor + : the GVL owner (rb_thread_t *) */
	__u16 th_ec;	 /* rb_thread_t -> ec */
	__u16 th_status; /* status byte (bits 0-1) */
	__u16 th_brb;	 /* blocking_region_buffer */
	__u16 th_ubf;	 /* unblock.func */
	__u16 th_lm;	 /* locking_mutex */
	__u16 th_nt;	 /* rb_thread_t -> nt (3.2+) */
	__u16 nt_tid;	 /* nt -> tid (3.2+) */
	__u16 th_tid;	 /* rb_thread_t -> tid (3.0, 3.1) */
	__u16 th_wr;	 /* sched.waiting_reason.flags (3.3+) */
};

/*
 * Per Ruby thread, what the iterator saw when it last walked it (bpf/wall.bpf.c, map
 * wall_threads): while the thread's task has not been switched in since, and its header is the
 * same, its stack is the same, and it is sent as an RP_SAMPLE_SAME record instead of walked.
 */
#define RP_WALL_CACHE_ENTRIES 8192 /* threads remembered, all processes; more are counted */
/* Ticks a stack is reused at most before the thread is walked again (bounds what a lost record
 * or an evicted daemon-side copy can cost). */
#define RP_WALL_REUSE_MAX     64
/* Ticks of weight one cursor-sampled thread carries at most (docs/internals/wall-clock.md). */
#define RP_WALL_LAG_MAX	      256

struct rp_wall_key {
	__u64 th; /* rb_thread_t * */
	__u32 tgid;
	__u32 pad;
};

struct rp_wall_thread {
	__u64 switches; /* task nvcsw + nivcsw */
	__u64 cfp;	/* th->ec->cfp */
	__u64 ec;	/* th->ec (the fiber the thread runs) */
	__u64 hdr[6];	/* status byte, brb, ubf, locking_mutex, nt (3.2+), waiting_reason (3.3+) */
	__u32 tid;
	__u32 seq;   /* the sample that carried the stack (rp_sample.seq, cpu wall_cpu) */
	__u32 run;   /* rp_wall_params.run of the last visit */
	__u32 reuse; /* visits since the stack was last walked */
	__u32 valid; /* the reader has that stack whole */
	/*
	 * Reused visits not sent yet: they are summed here and sent as one RP_SAMPLE_SAME record
	 * (its `visits`) when the state changes or before the thread is walked again; the daemon
	 * takes the rest from the map before it cuts a profile, or when the entry goes.
	 */
	__u32 pend_visits;
	__u64 pend_weight;  /* their summed weight (ns) */
	__u32 pend_state;   /* their RP_TSTATE_* */
	__u32 pend_syscall; /* their rp_sample.syscall */
	/* For a visit without the header copy (bpf/wall.bpf.c, wall_quiet): the thread's list
	 * successor and its task's __state at the last visit. */
	__u64 next;
	__u32 kstate;
	__u32 pad2;
};

/* The iterator's target, in its .bss, set by the daemon before each run. */
struct rp_wall_params {
	__u32 tgid;
	__u32 max_threads; /* <= RP_MAX_WALL_THREADS */
	__u64 period_ns;   /* weight of each sample */
	struct rp_wall_offsets off;
	/* The cursor: the list node to start at (0: the head), from the last run's `next` */
	__u64 cursor;
	__u32 run;   /* this process's run number (1, 2, ...) */
	__u32 lap;   /* runs the last full lap of the list took (1: all threads every run) */
	__u32 reuse; /* 0: walk every thread (the bench's "before"), 1: reuse unchanged stacks */
	/* Ticks the daemon skipped since this process's last run, none of its threads having been
	 * switched in or out since (rp_wall_switch): each thread off a CPU at that run was so, with
	 * that stack and state, all along (docs/internals/wall-clock.md, "Skipped ticks"). */
	__u32 skipped;
	/* The list's anchor (the main ractor, or the VM on 2.7) from an earlier run of this
	 * process (rp_wall_out.anchor), 0: found from the main thread's EC. It lives as long as
	 * the process, and a forked child has it at the same address. */
	__u64 anchor;
	/* The list's head (next, prev) and thread count at the last run (rp_wall_out.list): while
	 * they are the same no thread was added or removed, and a parked thread's successor is the
	 * one its entry keeps. All 0: not known. */
	__u64 list[3];
	__u32 slot;	     /* the process's wall_gen slot (< RP_WALL_MAX_PROCS) */
	__u32 skipped_taken; /* of `skipped`, the ticks whose visits the daemon took (wall_flush) */
};

/* Processes sampled in wall mode at once (the daemon refuses more, counted). */
#define RP_WALL_MAX_PROCS 1024

/* What a run leaves for the daemon, in the iterator's .bss. */
struct rp_wall_out {
	__u64 next;	/* node the next run starts at: 0 when this run reached the list's end */
	__u32 walked;	/* threads this run visited */
	__u32 wrapped;	/* 1: this run started at the head */
	__u64 anchor;	/* the list's anchor this run used (0: none found) */
	__u64 list[3];	/* the list's head and count this run saw (0: not read) */
	__u32 untasked; /* threads visited without a task of their own (M:N, 2.7, a tid not found) */
	__u32 listed;	/* 1: the run reached the thread list (and gave the skipped ticks) */
};

/* Wall-mode statistics (the wall program's own array, index = RP_WSTAT_*) */
#define RP_WSTAT_RUNS	     0	/* iterator runs that walked a thread list */
#define RP_WSTAT_THREADS     1	/* Ruby threads sampled */
#define RP_WSTAT_CUT	     2	/* threads left unwalked: max_threads reached */
#define RP_WSTAT_BAD_NODE    3	/* list walks ended by a node that failed validation */
#define RP_WSTAT_READ_FAILED 4	/* reads of the list, a thread or the anchor that failed */
#define RP_WSTAT_UNKNOWN     5	/* threads whose state fit no row */
#define RP_WSTAT_NO_PROC     6	/* runs for a pid the procs map does not know */
#define RP_WSTAT_RUN_NS	     7	/* time spent in the iterator (ns) */
#define RP_WSTAT_ON_CPU	     8	/* thread samples left to the perf samples (time on a CPU) */
#define RP_WSTAT_CREDIT_CUT  9	/* off-CPU credit cut at its bound (a thread always on a CPU) */
#define RP_WSTAT_REUSED	     10 /* threads sent as RP_SAMPLE_SAME (not walked) */
#define RP_WSTAT_CACHE_MISS  11 /* threads with no wall_threads entry (first visit, or evicted) */
#define RP_WSTAT_CACHE_FULL  12 /* threads not remembered: wall_threads was full */
#define RP_WSTAT_CURSOR	     13 /* runs that started at a cursor, not the head (> max_threads) */
#define RP_WSTAT_PEND_SENT   14 /* RP_SAMPLE_SAME records sent, each for one or more reused visits */
#define RP_WSTAT_QUIET	     15 /* visits of a parked thread made without copying its header */
#define RP_WSTAT_NO_TASK     16 /* runs for a pid without a task (ended), or not its main task */
#define RP_WSTAT_SKIPPED     17 /* visits of skipped ticks added to a thread's pending ones */
#define RP_WSTAT_WAKE_LOST   18 /* wake-ups of a sleeping daemon not sent (wall_wake full) */
#define RP_WSTAT_MAX	     19

/* ---- statistics (per-CPU array, index = RP_STAT_*) ---------------------------------------- */

#define RP_STAT_SAMPLES	     0	/* perf_event samples taken */
#define RP_STAT_RUBY_SAMPLES 1	/* samples of a known Ruby process */
#define RP_STAT_RUBY_STACKS  2	/* samples that produced a Ruby stack */
#define RP_STAT_NO_EC	     3	/* Ruby process, thread without an EC */
#define RP_STAT_READ_FAILED  4	/* a user-memory read failed */
#define RP_STAT_BAD_EC	     5	/* EC shape check failed */
#define RP_STAT_RB_DROPPED   6	/* ring-buffer output failed (full) */
#define RP_STAT_TRUNCATED    7	/* stacks cut at max_frames */
#define RP_STAT_NOT_GVL	     8	/* Ruby < 3.0: sample of a thread that does not hold the GVL */
#define RP_STAT_FRAMES	     9	/* frames of the stacks taken (shipped or shared) */
#define RP_STAT_GC	     10 /* samples taken while this thread ran the garbage collector */
#define RP_STAT_PROC_EVENTS  11 /* process events sent */
#define RP_STAT_EVENTS_LOST  12 /* process events lost (ring buffer full) */
#define RP_STAT_STALE_PID    13 /* samples of a pid whose procs entry was for an earlier process */
#define RP_STAT_FORK_COPIED  14 /* procs entries copied to a forked child */
#define RP_STAT_RUN_NS	     15 /* time spent in the sampling program (ns, measured inside it) */
#define RP_STAT_SHIPPED	     16 /* frames (slots) shipped: the rest was the CPU's previous stack */
#define RP_STAT_USTACKS	     17 /* mixed mode: user stacks copied */
#define RP_STAT_USTACK_LOST  18 /* mixed mode: user stack records lost (ring buffer full) */
#define RP_STAT_USTACK_SHORT 19 /* mixed mode: copies that ended at an unreadable page */
#define RP_STAT_WALL_MUTED   20 /* wall mode: samples of a process without RP_PROCF_WALL_RUNNING */
#define RP_STAT_KSTACKS	     21 /* --kernel-stacks: kernel stacks sent */
#define RP_STAT_KSTACK_LOST  22 /* --kernel-stacks: kernel stack records lost (ring buffer full) */
#define RP_STAT_NATIVE_ALONE 23 /* --native-processes: samples of processes that are no Ruby */
#define RP_STAT_OTHER_NS     24 /* samples of tasks outside the daemon's pid namespace (not taken) */
#define RP_STAT_TCTX	     25 /* thread-context records sent (a valid record was attached) */
#define RP_STAT_TCTX_FAILED                                                                        \
	26 /* thread-context reads that failed (pointer, record or attributes) */
#define RP_STAT_TCTX_INVALID 27 /* records whose valid byte was not 1, or misaligned (not sent) */
#define RP_STAT_TCTX_LOST    28 /* thread-context records lost (ring buffer full) */
#define RP_STAT_MAX	     29

/* ---- task iterator output (fsbase of each thread of one process) -------------------------- */

struct rp_thread_tp {
	__u32 tid;
	__u32 pad;
	__u64 fsbase;
	__u64 start_time; /* the process's (group leader's) start time, as rp_proc.start_time */
};

/*
 * The daemon's pid namespace as the kernel sees it (rp_iter_pidns, run by the daemon itself):
 * its level (0: the initial namespace) and inode number (/proc/self/ns/pid's st_ino).
 */
struct rp_pidns {
	__u32 level;
	__u32 inum;
};

/* The kernel's MAX_PID_NS_LEVEL: no namespace is nested deeper. */
#define RP_PIDNS_MAX_LEVEL 32

#ifndef __cplusplus
_Static_assert(sizeof(struct rp_pidns) == 8, "rp_pidns layout");
_Static_assert(sizeof(struct rp_frame) == 24, "rp_frame layout");
_Static_assert(sizeof(struct rp_vm_offsets) == 24, "rp_vm_offsets layout");
_Static_assert(sizeof(struct rp_proc) == 120, "rp_proc layout");
_Static_assert(__builtin_offsetof(struct rp_tctx, data) == RP_TCTX_REC_HDR_SIZE, "rp_tctx layout");
_Static_assert(sizeof(struct rp_thread_tp) == 24, "rp_thread_tp layout");
_Static_assert(sizeof(struct rp_rec) == 32, "rp_rec layout");
_Static_assert(sizeof(struct rp_wall_offsets) == 24, "rp_wall_offsets layout");
_Static_assert(sizeof(struct rp_wall_params) == 104, "rp_wall_params layout");
_Static_assert(sizeof(struct rp_wall_key) == 16, "rp_wall_key layout");
_Static_assert(sizeof(struct rp_wall_thread) == 128, "rp_wall_thread layout");
_Static_assert(sizeof(struct rp_wall_out) == 56, "rp_wall_out layout");
_Static_assert(sizeof(struct rp_proc_event) == 72, "rp_proc_event layout");
_Static_assert(sizeof(struct rp_ustack) == RP_USTACK_HDR_SIZE, "rp_ustack layout");
_Static_assert(__builtin_offsetof(struct rp_kstack, ips) == RP_KSTACK_HDR_SIZE, "rp_kstack layout");
_Static_assert(__builtin_offsetof(struct rp_sample, frames) == RP_SAMPLE_HDR_SIZE,
	       "rp_sample header");
_Static_assert(sizeof(struct rp_sample) == RP_SAMPLE_HDR_SIZE, "rp_sample header");
#endif

#endif /* RUBYPROF_H */
