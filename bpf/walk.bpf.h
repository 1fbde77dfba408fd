/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * walk.bpf.h - the control-frame walk: a bpf_loop callback that copies RP_CFP_BATCH control frames
 * with one read, turns each into an rp_frame, and flushes full chunks to the ring buffer.
 *
 * Which frames count is decided exactly as Ruby's backtrace does: a frame with an iseq and a pc is
 * a Ruby frame; a frame without an iseq whose ep[0] carries VM_FRAME_MAGIC_CFUNC is a C function
 * frame; anything else (ifunc, dummy frames) is skipped.
 */
#ifndef RP_WALK_BPF_H
#define RP_WALK_BPF_H

#include "maps.bpf.h"

#define RP_VM_FRAME_MAGIC_MASK	0x7fff0001ULL
#define RP_VM_FRAME_MAGIC_CFUNC 0x55550001ULL

/* Sends the current chunk (header + its frames) and starts the next one. */
static __always_inline void rp_walk_flush(struct rp_walk *w, struct rp_scratch *s)
{
	__u32 nf = s->sample.nframes;
	__u64 size;

	if (nf > RP_CHUNK_FRAMES)
		nf = RP_CHUNK_FRAMES;
	size = RP_SAMPLE_HDR_SIZE + (__u64)nf * sizeof(struct rp_frame);
	if (bpf_ringbuf_output(&samples, &s->sample, size, rb_flags()))
		w->dropped = 1;
	else
		w->frames_sent += nf;
	s->sample.chunk++;
	s->sample.nframes = 0;
}

static __always_inline __u64 cfp_field(struct rp_scratch *s, __u32 base, __u32 off)
{
	return *(__u64 *)(s->cfps + ((base + off) & 0x1f8));
}

/* Turns the control frame at `base` in the batch into an rp_frame (or skips it). */
static __always_inline void walk_one(struct rp_scratch *s, struct rp_walk *w, __u32 base)
{
	__u64 iseq, pc, ep, info;
	__u32 nf, jit;

	/* YJIT leaves the pc of the frame it is running stale (even 0): only the first control
	 * frame can be such a frame; every frame below it had its pc saved before a call. */
	jit = w->first && w->off_jit && cfp_field(s, base, w->off_jit);
	w->first = 0;

	iseq = cfp_field(s, base, w->off_iseq);
	ep = cfp_field(s, base, w->off_ep);
	if (iseq) {
		pc = cfp_field(s, base, w->off_pc);
		/* pc == 0: an ifunc frame (C block), skipped as Ruby does, unless it is JIT code */
		if (!pc && !jit)
			return;
		info = (pc & RP_FRAME_PC_MASK) | (RP_FRAME_KIND_ISEQ << RP_FRAME_KIND_SHIFT);
		if (jit) {
			info |= RP_FRAME_FLAG_JIT << RP_FRAME_KIND_SHIFT;
			s->sample.flags |= RP_SAMPLE_JIT_LEAF;
		}
	} else {
		if (!ep)
			return;
		/* ep[-2] is the method entry, ep[0] the frame's flags (magic). */
		if (bpf_probe_read_user(s->ep, sizeof(s->ep), (const void *)(ep - 16))) {
			w->read_failed = 1;
			return;
		}
		if ((s->ep[2] & RP_VM_FRAME_MAGIC_MASK) != RP_VM_FRAME_MAGIC_CFUNC)
			return;
		iseq = s->ep[0];
		info = RP_FRAME_KIND_CFUNC << RP_FRAME_KIND_SHIFT;
	}
	nf = s->sample.nframes;
	s->sample.frames[nf & (RP_CHUNK_FRAMES - 1)].addr = iseq;
	s->sample.frames[nf & (RP_CHUNK_FRAMES - 1)].info = info;
	s->sample.frames[nf & (RP_CHUNK_FRAMES - 1)].ep = ep;
	s->sample.nframes = nf + 1;
	if (nf + 1 >= RP_CHUNK_FRAMES)
		rp_walk_flush(w, s);
}

/*
 * One batch of RP_CFP_BATCH control frames per iteration: one copy, then each frame. The walk
 * state lives in the per-CPU map, not on the stack: the verifier does not track map contents,
 * so the callback's states converge instead of being explored once per iteration.
 */
static long rp_walk_batch(__u32 idx, void *ctx)
{
	struct rp_scratch *s;
	struct rp_walk *w;
	__u32 zero = 0, n, j;
	__u64 size;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	w = &s->walk;
	if (w->remaining == 0)
		return 1;
	n = w->remaining < RP_CFP_BATCH ? w->remaining : RP_CFP_BATCH;
	size = (__u64)n * w->cfp_size;
	if (size > RP_CFP_BATCH * RP_CFP_MAX_SIZE)
		size = RP_CFP_BATCH * RP_CFP_MAX_SIZE;
	/* clang drops a plain mask it can prove redundant, and then bounds another register than
	 * the one it passes: mask in asm, on the register used (cfps is 1024 bytes). */
	asm volatile("%[size] &= 1023" : [size] "+r"(size));
	if (bpf_probe_read_user(s->cfps, size, (const void *)w->cfp)) {
		w->read_failed = 1;
		return 1;
	}
	for (j = 0; j < RP_CFP_BATCH; j++) {
		if (j >= n)
			break;
		walk_one(s, w, j * w->cfp_size);
	}
	w->cfp += (__u64)n * w->cfp_size;
	w->remaining -= n;
	return w->remaining ? 0 : 1;
}

#endif
