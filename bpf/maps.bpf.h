/* SPDX-License-Identifier: GPL-2.0-only */
/* maps.bpf.h - the maps of rubyprof.bpf.c and the per-CPU scratch space of the walk. */
#ifndef RP_MAPS_BPF_H
#define RP_MAPS_BPF_H

#include "rubyprof.h"

/* State of one control-frame walk (walk.bpf.h). */
/* The walk state that changes per frame: on the stack (in registers) while a batch is compared,
 * in rp_walk while its frames are decoded (walk.bpf.h). */
struct rp_walk_hot {
	__u32 slot, shared, base_n, key_base, nframes, first;
};

struct rp_walk {
	__u64 cfp;	 /* next control frame to read */
	__u32 remaining; /* control frames left to read */
	__u32 cfp_size;
	__u32 off_pc, off_iseq, off_ep, off_jit, off_self;
	__u32 first;	/* the next frame is the first control frame (ec->cfp) */
	__u32 slot;	/* slot of the next control frame + 1 (slots are root first) */
	__u32 key_base; /* this CPU's first block in `slots` */
	__u32 base_n;	/* slots of the last stack that may be compared (0: none) */
	__u32 shared;	/* slots [0, shared) equal the last stack's so far */
	__u32 nframes;	/* frames of the stack (slots that are not empty) */
	__u32 read_failed;
	__u32 dropped;
	__u32 shipped;
	__u32 decoded;		/* frames of the batch decoded so far */
	__u64 miss;		/* the batch's frames to decode (bit j: its frame j) */
	struct rp_walk_hot hot; /* rp_walk_batch's while the batch's frames are decoded */
};

/* Per-CPU working memory: the BPF stack (512 bytes) is far too small. */
struct rp_scratch {
	struct rp_sample sample; /* header of the records being sent */
	struct rp_walk walk;
	__u64 ec[8]; /* first 64 bytes of the EC */
	/* a batch of control frames: twice its largest size, a power of two (walk.bpf.h) */
	__u8 cfps[2 * RP_CFP_BATCH * RP_CFP_MAX_SIZE];
	__u64 ep[3];	/* ep[-2], ep[-1], ep[0] of a frame */
	__u32 seq;	/* sample counter of this CPU */
	__u32 gc_flags; /* objspace flags word */
	__u64 running_ec;
	/* The stack in `slots`: its slots, and whether the reader has it whole (every chunk sent,
	 * no read failed) under sample base_seq, so that the next one may be sent as a delta. */
	__u32 base_n;
	__u32 base_seq;
	__u32 base_valid;
	__u32 pad;
	struct rp_tctx tctx; /* the thread-context record being sent (walk.bpf.h) */
	__u64 tctx_tp;	     /* and the thread pointer of the thread it is read from */
	struct {
		__u32 tctx_mode;
		__s64 tctx_off;
		__u64 tctx_modid, tctx_block_off;
	} tctx_loc; /* its process's rp_proc.tctx_* */
};

_Static_assert(sizeof(struct rp_scratch) <= 32768, "per-CPU map values are limited to 32 KiB");
_Static_assert((sizeof(((struct rp_scratch *)0)->cfps) &
		(sizeof(((struct rp_scratch *)0)->cfps) - 1)) == 0,
	       "cfps: a copy's size is masked to it");

/* RP_SLOT_BLOCK slots of a CPU's last stack (walk.bpf.h). */
struct rp_slot_block {
	struct rp_frame f[RP_SLOT_BLOCK];
	/* Each slot's control frame's self, kept here and never shipped: one iseq runs under two
	 * method entries (define_method of one body in two classes, module_function's copies) at
	 * the same pc and depth, and only the receiver tells the calls apart without a read. Also
	 * makes the block 512 bytes: a copy's length masked with 511 (walk.bpf.h) is within it. */
	__u64 self[RP_SLOT_BLOCK];
};
_Static_assert(sizeof(struct rp_slot_block) == 512, "rp_slot_block is 512 bytes");

/* --stacks mixed: copy the user stack and registers too, and flag the frames that start a VM
 * invocation (0: Ruby stacks only, nothing more is done: the verifier drops those branches).
 * Set by the daemon before load. */
const volatile __u32 stacks_mixed = 0;

/* --clock wall (the perf program only): its samples are the running threads' wall samples, of
 * the processes flagged RP_PROCF_WALL_RUNNING only (0: CPU mode, the verifier drops those
 * branches). Set by the daemon before load. */
const volatile __u32 wall_clock = 0;

/* Blocks of one CPU in `slots`: max_frames / RP_SLOT_BLOCK rounded up, set by the daemon. */
const volatile __u32 slot_blocks = RP_MAX_FRAMES_DEFAULT / RP_SLOT_BLOCK;

/* Each CPU's last stack, root first: CPU c owns blocks [c * slot_blocks, (c + 1) * slot_blocks).
 * A plain array (its lookups are inlined), sized by the daemon before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rp_slot_block);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct rp_proc);
} procs SEC(".maps");

/* Size set by the daemon before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rp_scratch);
} scratch SEC(".maps");

/*
 * Ring-buffer flags of samples: waking the reader costs an irq_work per record (about 8 us here),
 * and the daemon reads on its own tick while a process is profiled (daemon/profile/session.c); wake it
 * only when the buffer is filling up. Process events always wake it (rubyprof.bpf.c).
 */
const volatile __u64 rb_wakeup_bytes = 1u << 20; /* set by the daemon: a quarter of the buffer */

static __always_inline __u64 rb_flags(void)
{
	return bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > rb_wakeup_bytes
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n;
}

#endif
