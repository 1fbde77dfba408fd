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
 * Frames per ring-buffer record. A per-CPU map value may not exceed 32 KiB on this kernel, and a
 * ring-buffer reservation has a constant size, so a deep stack travels as several records
 * ("chunks") that share a sequence number. 1024 frames x 24 bytes = 24 KiB per chunk.
 */
#define RP_CHUNK_FRAMES	      1024
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

#define RP_FRAME_PC_MASK    0x00ffffffffffffffULL
#define RP_FRAME_KIND_SHIFT 56
#define RP_FRAME_KIND_ISEQ  0x01ULL
#define RP_FRAME_KIND_CFUNC 0x02ULL
/* The control frame carries a JIT return address (cfp->jit_return != 0): its pc is unreliable. */
#define RP_FRAME_FLAG_JIT   0x80ULL

#define rp_frame_kind(f) (((f)->info >> RP_FRAME_KIND_SHIFT) & 0x7f)
#define rp_frame_pc(f)	 ((f)->info & RP_FRAME_PC_MASK)

/* ---- samples ------------------------------------------------------------------------------ */

/* rp_sample.flags */
#define RP_SAMPLE_LAST	    0x01 /* last chunk of this sample */
#define RP_SAMPLE_TRUNCATED 0x02 /* the walk stopped at max_frames; see `truncated` */
#define RP_SAMPLE_NO_EC	    0x04 /* a thread of a Ruby process with no Ruby execution context */
#define RP_SAMPLE_BAD_EC    0x08 /* the EC failed its shape check; no frames */
#define RP_SAMPLE_NOT_GVL   0x10 /* Ruby < 3.0: the global EC belongs to another thread */
#define RP_SAMPLE_READ_FAIL 0x20 /* a frame batch could not be read; the stack is partial */
#define RP_SAMPLE_GC	    0x40 /* the VM was in garbage collection, run by this thread */
#define RP_SAMPLE_JIT_LEAF  0x80 /* the leaf frame is JIT code (cfp->jit_return set) */

/*
 * A ring-buffer record: one chunk of one sampled stack, frames leaf first. A sample is the
 * sequence of chunks with the same (cpu, seq), chunk = 0, 1, ..., the last flagged RP_SAMPLE_LAST.
 * Only the header and `nframes` frames are sent.
 */
struct rp_sample {
	__u64 time_ns; /* bpf_ktime_get_ns() */
	__u32 pid;     /* tgid, in the initial pid namespace */
	__u32 tid;
	__u32 cpu;
	__u32 seq;	 /* per-CPU sample counter */
	__u32 flags;	 /* RP_SAMPLE_* */
	__u16 chunk;	 /* index of this chunk */
	__u16 nframes;	 /* frames in this record */
	__u32 truncated; /* control frames left unwalked at the root end (last chunk) */
	__u32 gc_mode;	 /* RP_SAMPLE_GC: objspace mode (1 marking, 2 sweeping, 3 compacting) */
	char comm[16];	 /* thread name at sample time */
	struct rp_frame frames[RP_CHUNK_FRAMES];
};

#define RP_SAMPLE_HDR_SIZE 56

/* ---- per-process configuration (procs map, keyed by tgid) --------------------------------- */

/* How the sampled thread's rb_execution_context_t is found. */
#define RP_EC_TLS_STATIC 1 /* ec = *(fsbase + tls_off) */
#define RP_EC_TLS_DTV	 2 /* ec = *(dtv[tls_modid].pointer + tls_block_off), dtv = *(fsbase + 8) */
#define RP_EC_GLOBAL	 3 /* ec = *ec_global (Ruby < 3.0); checked against the thread's pthread id */

/* Offsets of the VM structures that the BPF walk reads; filled from daemon/offsets.c. */
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
	__u16 pad;
};

struct rp_proc {
	__u32 ec_mode; /* RP_EC_* */
	__u32 pad;
	__s64 tls_off;	     /* RP_EC_TLS_STATIC */
	__u64 tls_modid;     /* RP_EC_TLS_DTV */
	__u64 tls_block_off; /* RP_EC_TLS_DTV: st_value of ruby_current_ec */
	__u64 ec_global;     /* RP_EC_GLOBAL: address of ruby_current_execution_context_ptr */
	__u64 gc_flags;	     /* address of the objspace flags word (during_gc, mode); 0: unknown */
	__u64 gc_running_ec; /* address of the main ractor's running EC (3.0+); 0: not checked */
	struct rp_vm_offsets off;
};

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
#define RP_STAT_FRAMES	     9	/* frames sent */
#define RP_STAT_GC	     10 /* samples taken while this thread ran the garbage collector */
#define RP_STAT_MAX	     11

/* ---- task iterator output (fsbase of each thread of one process) -------------------------- */

struct rp_thread_tp {
	__u32 tid;
	__u32 pad;
	__u64 fsbase;
};

#ifndef __cplusplus
_Static_assert(sizeof(struct rp_frame) == 24, "rp_frame layout");
_Static_assert(sizeof(struct rp_vm_offsets) == 24, "rp_vm_offsets layout");
_Static_assert(sizeof(struct rp_proc) == 80, "rp_proc layout");
_Static_assert(sizeof(struct rp_thread_tp) == 16, "rp_thread_tp layout");
_Static_assert(__builtin_offsetof(struct rp_sample, frames) == RP_SAMPLE_HDR_SIZE,
	       "rp_sample header");
_Static_assert(sizeof(struct rp_sample) <= 32768, "per-CPU map values are limited to 32 KiB");
#endif

#endif /* RUBYPROF_H */
