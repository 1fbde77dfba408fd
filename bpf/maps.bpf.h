/* SPDX-License-Identifier: GPL-2.0-only */
/* maps.bpf.h - the maps of rubyprof.bpf.c and the per-CPU scratch space of the walk. */
#ifndef RP_MAPS_BPF_H
#define RP_MAPS_BPF_H

#include "rubyprof.h"

/* State of one control-frame walk (walk.bpf.h). */
struct rp_walk {
	__u64 cfp;	 /* next control frame to read */
	__u32 remaining; /* control frames left to read */
	__u32 cfp_size;
	__u32 off_pc, off_iseq, off_ep, off_jit;
	__u32 first;	 /* the next frame is the first control frame (ec->cfp) */
	__u32 batch_len; /* frames in s->cfps */
	__u32 in_batch;	 /* next frame of the batch */
	__u32 frames_sent;
	__u32 dropped;
	__u32 read_failed;
	__u32 pad;
};

/* Per-CPU working memory: the BPF stack (512 bytes) is far too small for a frame buffer. */
struct rp_scratch {
	struct rp_sample sample;
	struct rp_walk walk;
	__u64 ec[8];	 /* first 64 bytes of the EC */
	__u8 cfps[1024]; /* a batch of control frames (a power of two, see walk.bpf.h) */
	__u64 ep[3];	 /* ep[-2], ep[-1], ep[0] of a frame */
	__u32 seq;	 /* sample counter of this CPU */
	__u32 gc_flags;	 /* objspace flags word */
	__u64 running_ec;
};

_Static_assert(sizeof(struct rp_scratch) <= 32768, "per-CPU map values are limited to 32 KiB");

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
 * Ring-buffer flags: waking the reader costs an irq_work per record (about 8 us here), and the
 * daemon polls on a timer anyway; wake it only when the buffer is filling up.
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
