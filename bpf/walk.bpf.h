/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * walk.bpf.h - the control-frame walk: a bpf_loop callback that copies RP_CFP_BATCH control frames
 * with one read and turns each into an rp_frame in its slot of the CPU's stack (`slots`, root
 * first), noting where the stack first differs from the CPU's previous one; then the stack is
 * shipped from that block on (include/rubyprof.h, RP_SAMPLE_DELTA).
 *
 * Which frames count is decided exactly as Ruby's backtrace does: a frame with an iseq and a pc is
 * a Ruby frame; a frame without an iseq whose ep[0] carries VM_FRAME_MAGIC_CFUNC is a C function
 * frame; anything else (ifunc, dummy frames) is an empty slot.
 *
 * Why deltas: writing a record into the ring buffer is what a deep stack costs (memory the CPU
 * has not touched for a while, every sample), while the previous stack of the same CPU is warm
 * and a sampled thread keeps all but a few leaf frames from one tick to the next. Comparing and
 * shipping only the changed leaf end costs a few loads per frame instead of 24 bytes written.
 * The comparison is on the decoded frames themselves, so a delta is exact whatever the process.
 */
#ifndef RP_WALK_BPF_H
#define RP_WALK_BPF_H

#include "maps.bpf.h"

/*
 * How the walk reads the sampled process's memory. `rctx` is what the caller passed to the walk
 * (rp_sample_ec): NULL for the perf_event program, which reads the current task's memory; a
 * program that walks another task (the wall-clock iterator, bpf/wall.bpf.h) defines this macro
 * before including this file, to bpf_copy_from_user_task on the task rctx names.
 */
#ifndef RP_READ_USER
#define RP_READ_USER(rctx, dst, size, src) bpf_probe_read_user(dst, size, src)
#endif

#define RP_VM_FRAME_MAGIC_MASK	0x7fff0001ULL
#define RP_VM_FRAME_MAGIC_CFUNC 0x55550001ULL

static __always_inline __u64 cfp_field(struct rp_scratch *s, __u32 base, __u32 off)
{
	return *(__u64 *)(s->cfps + ((base + off) & ((RP_CFP_BATCH * RP_CFP_MAX_SIZE - 1) & ~7)));
}

/* Writes a frame into slot r unless it holds it already (then the stacks still share it). */
static __always_inline void slot_write(struct rp_walk_hot *h, struct rp_frame *f, __u32 r,
				       __u64 addr, __u64 info, __u64 ep)
{
	if (r < h->base_n && f->addr == addr && f->info == info && f->ep == ep)
		return;
	if (r < h->shared)
		h->shared = r;
	f->addr = addr;
	f->info = info;
	f->ep = ep;
}

#define RP_VM_ENV_FLAG_LOCAL	0x2ULL
#define RP_VM_FRAME_FLAG_FINISH 0x20ULL

/*
 * Turns the control frame at `base` in the batch into an rp_frame (or an empty slot) in slot r.
 *
 * A Ruby frame: a method's own frame (local environment) ships its ep[-2] instead of its ep
 * (RP_FRAME_FLAG_ME). Read only when the slot held another frame: the same iseq and pc with the
 * same receiver again is the same method (one iseq under two method entries, define_method of
 * one body in two classes, is called on two receivers), and a block's slot matches on its ep,
 * which needs no read.
 *
 * Every kind of frame ends in the one slot_write: the verifier explores what follows a branch
 * once per path, and this runs in callbacks that it verifies many times over (a copy of
 * slot_write per kind took it past a million instructions in the wall-clock program).
 */
static __always_inline void walk_one(struct rp_scratch *s, struct rp_walk *w, struct rp_walk_hot *h,
				     __u32 base, struct rp_frame *f, __u64 *selfp, __u32 r,
				     void *rctx)
{
	__u64 me_flag = RP_FRAME_FLAG_ME << RP_FRAME_KIND_SHIFT;
	__u64 fin_flag = RP_FRAME_FLAG_FINISH << RP_FRAME_KIND_SHIFT;
	__u64 iseq, pc, ep, info = 0, addr = 0, self;
	bool same_self;
	__u32 jit;

	self = cfp_field(s, base, w->off_self);
	same_self = *selfp == self;
	*selfp = self;

	/* YJIT leaves the pc of the frame it is running stale (even 0): only the first control
	 * frame can be such a frame; every frame below it had its pc saved before a call. */
	jit = h->first && w->off_jit && cfp_field(s, base, w->off_jit);
	h->first = 0;

	iseq = cfp_field(s, base, w->off_iseq);
	ep = cfp_field(s, base, w->off_ep);
	pc = iseq ? cfp_field(s, base, w->off_pc) : 0;
	/* pc == 0: an ifunc frame (C block), skipped as Ruby does, unless it is JIT code */
	if (iseq && (pc || jit)) {
		info = (pc & RP_FRAME_PC_MASK) | (RP_FRAME_KIND_ISEQ << RP_FRAME_KIND_SHIFT);
		if (jit) {
			info |= RP_FRAME_FLAG_JIT << RP_FRAME_KIND_SHIFT;
			s->sample.flags |= RP_SAMPLE_JIT_LEAF;
		}
		h->nframes++;
		if (r < h->base_n && f->addr == iseq && (f->info & ~(me_flag | fin_flag)) == info &&
		    ((f->info & me_flag) ? same_self : f->ep == ep))
			return;
		addr = iseq;
		if (ep && !RP_READ_USER(rctx, s->ep, sizeof(s->ep), (const void *)(ep - 16))) {
			/* mixed stacks: where a VM invocation starts (a constant the verifier
			 * drops else) */
			if (stacks_mixed && (s->ep[2] & RP_VM_FRAME_FLAG_FINISH))
				info |= fin_flag;
			if (s->ep[2] & RP_VM_ENV_FLAG_LOCAL) {
				info |= me_flag;
				ep = s->ep[0];
			}
		}
	} else if (!iseq && ep) {
		/* ep[-2] is the method entry, ep[0] the frame's flags (magic). A C function's
		 * method entry is read now: its frame is gone by the time userspace could look. */
		if (RP_READ_USER(rctx, s->ep, sizeof(s->ep), (const void *)(ep - 16))) {
			w->read_failed = 1;
		} else if ((s->ep[2] & RP_VM_FRAME_MAGIC_MASK) == RP_VM_FRAME_MAGIC_CFUNC) {
			addr = s->ep[0];
			info = RP_FRAME_KIND_CFUNC << RP_FRAME_KIND_SHIFT;
			h->nframes++;
		}
	}
	/* a frame, or an empty slot (all 0) */
	slot_write(h, f, r, addr, info, addr ? ep : 0);
}

/* The block of slot r (its CPU's), NULL when the map has none (counted as a failed read). */
static __always_inline struct rp_slot_block *slot_block(struct rp_walk_hot *h, __u32 r)
{
	__u32 key = h->key_base + r / RP_SLOT_BLOCK;

	return bpf_map_lookup_elem(&slots, &key);
}

/*
 * Decodes frame j of the batch rp_walk_batch copied, if its bit is in w->miss (a bpf_loop
 * callback: its body is verified once, not once for every frame of the batch and every path
 * through the frames before it, which took the verifier past a million instructions).
 */
static long rp_walk_decode(__u32 j, void *ctx)
{
	struct rp_slot_block *b;
	struct rp_scratch *s;
	struct rp_walk *w;
	__u32 zero = 0, r;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s || j >= RP_CFP_BATCH)
		return 1;
	w = &s->walk;
	if (!(w->miss & (1ULL << j)))
		return 0;
	r = w->hot.slot - 1 - j;
	b = slot_block(&w->hot, r);
	if (!b) {
		w->read_failed = 1;
		return 1;
	}
	w->decoded++;
	walk_one(s, w, &w->hot, j * w->cfp_size, &b->f[r & (RP_SLOT_BLOCK - 1)],
		 &b->self[r & (RP_SLOT_BLOCK - 1)], r, ctx);
	return 0;
}

/*
 * One batch of RP_CFP_BATCH control frames per iteration: one copy, then each frame. The walk
 * state lives in the per-CPU map, not on the stack: the verifier does not track map contents,
 * so the callback's states converge instead of being explored once per iteration.
 *
 * Most frames of a sample are the Ruby frames its slot holds already (all but a few leaf frames),
 * so the batch is done in two passes: the first, with no helper call or map lookup in it (the
 * batch's one or two slot blocks are looked up before), compares each control frame's raw iseq,
 * pc and ep with its slot and marks the frames that differ; the second decodes only those.
 */
static long rp_walk_batch(__u32 idx, void *ctx)
{
	__u64 me_flag = RP_FRAME_FLAG_ME << RP_FRAME_KIND_SHIFT;
	__u64 fin_flag = RP_FRAME_FLAG_FINISH << RP_FRAME_KIND_SHIFT;
	__u64 iseq_kind = RP_FRAME_KIND_ISEQ << RP_FRAME_KIND_SHIFT;
	__u64 size, iseq, pc, n, j, r, base, cfp_size, off_iseq, off_pc, off_ep, off_self, hi_first,
		miss, decoded = 0;
	struct rp_slot_block *b_hi, *b_lo, *b;
	struct rp_walk_hot h;
	struct rp_scratch *s;
	struct rp_frame *f;
	struct rp_walk *w;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	w = &s->walk;
	if (w->remaining == 0)
		return 1;
	n = w->remaining < RP_CFP_BATCH ? w->remaining : RP_CFP_BATCH;
	size = n * w->cfp_size;
	if (size > RP_CFP_BATCH * RP_CFP_MAX_SIZE)
		size = RP_CFP_BATCH * RP_CFP_MAX_SIZE;
	/* clang drops a plain mask it can prove redundant, and then bounds another register than
	 * the one it passes: mask in asm, on the register used (to cfps, twice a full batch, so
	 * that the mask cannot turn a full batch into 0). */
	asm volatile("%[size] &= %[m]" : [size] "+r"(size) : [m] "i"(sizeof(s->cfps) - 1));
	if (RP_READ_USER(ctx, s->cfps, size, (const void *)w->cfp)) {
		w->read_failed = 1;
		return 1;
	}
	h.slot = w->slot;
	h.shared = w->shared;
	h.base_n = w->base_n;
	h.key_base = w->key_base;
	h.nframes = w->nframes;
	h.first = w->first;
	/* slots [slot - n, slot) take this batch: one or two blocks, looked up now */
	if (n > h.slot)
		n = h.slot;
	if (n == 0)
		return 1;
	b_hi = slot_block(&h, h.slot - 1);
	b_lo = slot_block(&h, h.slot - n);
	if (!b_hi || !b_lo) {
		w->read_failed = 1;
		return 1;
	}
	/* slots from hi_first up are in b_hi */
	hi_first = (h.slot - 1) & ~(__u64)(RP_SLOT_BLOCK - 1);
	cfp_size = w->cfp_size;
	off_iseq = w->off_iseq;
	off_pc = w->off_pc;
	off_ep = w->off_ep;
	off_self = w->off_self;

	/* Pass 1: the frames whose slot holds them already (the same test as walk_one's). The
	 * first frame of the stack (it may be JIT code) and the frames at or past the end of the last
	 * stack are decoded without a test: they are the batch's first. */
	j = h.first;
	if (h.slot > h.base_n && h.slot - h.base_n > j)
		j = h.slot - h.base_n;
	if (j > n)
		j = n;
	miss = (1ULL << j) - 1;
	for (; j < RP_CFP_BATCH; j++) {
		if (j >= n)
			break;
		r = h.slot - 1 - j;
		base = j * cfp_size;
		b = r >= hi_first ? b_hi : b_lo;
		f = &b->f[r & (RP_SLOT_BLOCK - 1)];
		iseq = cfp_field(s, base, off_iseq);
		pc = cfp_field(s, base, off_pc);
		if (iseq && pc && f->addr == iseq &&
		    (f->info & ~(me_flag | fin_flag)) == ((pc & RP_FRAME_PC_MASK) | iseq_kind) &&
		    ((f->info & me_flag)
			     ? b->self[r & (RP_SLOT_BLOCK - 1)] == cfp_field(s, base, off_self)
			     : f->ep == cfp_field(s, base, off_ep)))
			continue;
		miss |= 1ULL << j;
	}

	/* Pass 2: decode the others (usually the leaf frame or two), the walk state in the map.
	 * The mask is tested as read back from the map: in a register the verifier knows its bits
	 * on each path through pass 1 and would go on with each of those 2^8 values apart. */
	w->miss = miss;
	if (*(volatile __u64 *)&w->miss) {
		w->hot = h;
		w->decoded = 0;
		bpf_loop(n, rp_walk_decode, ctx, 0);
		h = w->hot;
		decoded = w->decoded;
	}
	/* the others were Ruby frames */
	h.nframes += n - decoded;
	h.slot -= n;
	w->slot = h.slot;
	w->shared = h.shared;
	w->nframes = h.nframes;
	w->first = 0;
	w->cfp += n * w->cfp_size;
	w->remaining -= n;
	return w->remaining ? 0 : 1;
}

/*
 * Sends one record: the header and slots [first, first + RP_CHUNK_FRAMES) of the stack (at most),
 * written block by block into a ring-buffer reservation of the record's size.
 */
static long rp_ship_chunk(__u32 idx, void *ctx)
{
	struct rp_slot_block *b;
	struct bpf_dynptr rec;
	struct rp_scratch *s;
	__u32 zero = 0, start, nf, j, off, key, len;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	start = s->sample.first;
	nf = s->sample.nslots > start ? s->sample.nslots - start : 0;
	if (nf > RP_CHUNK_FRAMES)
		nf = RP_CHUNK_FRAMES;
	s->sample.nframes = nf;
	if (start + nf >= s->sample.nslots)
		s->sample.flags |= RP_SAMPLE_LAST;
	s->sample.hdr.size = RP_SAMPLE_HDR_SIZE + nf * sizeof(struct rp_frame);
	if (bpf_ringbuf_reserve_dynptr(&samples, s->sample.hdr.size, 0, &rec)) {
		bpf_ringbuf_discard_dynptr(&rec, 0);
		s->walk.dropped = 1;
		return 1;
	}
	bpf_dynptr_write(&rec, 0, &s->sample, RP_SAMPLE_HDR_SIZE, 0);
	for (j = 0; j < RP_CHUNK_FRAMES / RP_SLOT_BLOCK; j++) {
		off = j * RP_SLOT_BLOCK;
		if (off >= nf)
			break;
		key = s->walk.key_base + (start + off) / RP_SLOT_BLOCK;
		b = bpf_map_lookup_elem(&slots, &key);
		if (!b) {
			bpf_ringbuf_discard_dynptr(&rec, 0);
			s->walk.dropped = 1;
			return 1;
		}
		len = nf - off;
		if (len > RP_SLOT_BLOCK)
			len = RP_SLOT_BLOCK;
		len *= sizeof(struct rp_frame);
		/* in asm on the register passed, as in rp_walk_batch (the block is 512 bytes) */
		asm volatile("%[len] &= 511" : [len] "+r"(len));
		bpf_dynptr_write(&rec, RP_SAMPLE_HDR_SIZE + off * sizeof(struct rp_frame), b->f,
				 len, 0);
	}
	bpf_ringbuf_submit_dynptr(&rec, rb_flags());
	s->walk.shipped += nf;
	s->sample.chunk++;
	s->sample.first = start + nf;
	return start + nf >= s->sample.nslots ? 1 : 0;
}

/* objspace flags word: `mode` in bits 0-1, `during_gc` in bit 5 (gc.c, 2.6 - 4.0) */
#define RP_GC_MODE_MASK 0x3
#define RP_GC_DURING_GC (1u << 5)

/* Frame limit, set by the daemon before load (--max-frames). */
const volatile __u32 max_frames = RP_MAX_FRAMES_DEFAULT;

static __always_inline int read_u64(void *rctx, __u64 *dst, __u64 addr)
{
	return RP_READ_USER(rctx, dst, sizeof(*dst), (const void *)addr);
}

/* The sampled thread's EC, 0 when it has none. Returns -1 when a read failed. */
static __always_inline int find_ec(const struct rp_proc *proc, __u64 tp, __u64 *ec, void *rctx)
{
	__u64 dtv, block;

	*ec = 0;
	switch (proc->ec_mode) {
	case RP_EC_TLS_STATIC:
		return read_u64(rctx, ec, tp + proc->tls_off) ? -1 : 0;
	case RP_EC_TLS_DTV:
		/* glibc: tcbhead_t.dtv at tp + 8; dtv entries are {void *val; void *to_free}. */
		if (read_u64(rctx, &dtv, tp + 8) || !dtv)
			return -1;
		/* dtv[-1] counts the slots: a thread made before the dlopen has fewer */
		if (read_u64(rctx, &block, dtv - 16))
			return -1;
		if (proc->tls_modid > block)
			return 0;
		if (read_u64(rctx, &block, dtv + proc->tls_modid * 16))
			return -1;
		/* TLS_DTV_UNALLOCATED: this thread never touched libruby's TLS, so it runs no Ruby. */
		if (block == 0 || block == (__u64)-1)
			return 0;
		return read_u64(rctx, ec, block + proc->tls_block_off) ? -1 : 0;
	case RP_EC_TLS_DTV_MUSL:
		/* musl: struct pthread.dtv at tp + 8; dtv[0] counts the modules, dtv[i] is a block */
		if (read_u64(rctx, &dtv, tp + 8) || !dtv || read_u64(rctx, &block, dtv))
			return -1;
		if (proc->tls_modid > block)
			return 0;
		if (read_u64(rctx, &block, dtv + proc->tls_modid * 8))
			return -1;
		if (!block)
			return 0;
		return read_u64(rctx, ec, block + proc->tls_block_off) ? -1 : 0;
	case RP_EC_GLOBAL:
		return read_u64(rctx, ec, proc->ec_global) ? -1 : 0;
	}
	return -1;
}

/*
 * The OpenTelemetry thread context of the thread whose thread pointer is s->tctx_tp (OTEP 4947,
 * docs/trace-context.md): the record its otel_thread_ctx_v1 points to, sent as RP_REC_TCTX with
 * the (cpu, seq) of the sample about to be sent, when the record's valid byte is 1. Every byte is
 * the app's: the daemon checks them all (trace-context.md, "Bad input").
 *
 * A bpf_loop callback run once (rp_sample_tctx): its paths are verified once and end at its
 * return, so that the stack walk after it is verified for one state, not once per way this
 * went (inline, it took the wall-clock program from 50 % to 90 % of the verifier's limit).
 */
static long rp_tctx_read(__u32 i, void *rctx)
{
	__u64 ptr = 0, dtv, block, addr, tp;
	struct rp_scratch *s;
	struct rp_tctx *r;
	__u32 zero = 0, len;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	r = &s->tctx;
	tp = s->tctx_tp;
	if (s->tctx_loc.tctx_mode == RP_TCTX_STATIC) {
		addr = tp + s->tctx_loc.tctx_off;
	} else {
		/* glibc's DTV, as find_ec reads it: a thread that never touched the object's TLS
		 * (its dtv shorter, or the block unallocated) has no context */
		if (read_u64(rctx, &dtv, tp + 8) || !dtv || read_u64(rctx, &block, dtv - 16))
			goto failed;
		if (s->tctx_loc.tctx_modid > block)
			return 1;
		if (read_u64(rctx, &block, dtv + s->tctx_loc.tctx_modid * 16))
			goto failed;
		if (block == 0 || block == (__u64)-1)
			return 1;
		addr = block + s->tctx_loc.tctx_block_off;
	}
	if (read_u64(rctx, &ptr, addr))
		goto failed;
	if (!ptr)
		return 1;
	/* the OTEP: a record starts 2-byte aligned; valid is 1, anything else is not a record */
	if (ptr & 1) {
		stat_add(RP_STAT_TCTX_INVALID, 1);
		return 1;
	}
	if (RP_READ_USER(rctx, r->data, RP_TCTX_HDR, (const void *)ptr))
		goto failed;
	if (r->data[24] != 1) {
		stat_add(RP_STAT_TCTX_INVALID, 1);
		return 1;
	}
	len = r->data[26] | (__u32)r->data[27] << 8;
	r->flags = 0;
	if (len > RP_TCTX_MAX - RP_TCTX_HDR) {
		r->flags = RP_TCTX_F_OVERSIZE;
		len = 0;
	}
	/* in asm on the register passed, as in rp_walk_batch: len <= 1023, and <= 612 below */
	asm volatile("%[len] &= 1023" : [len] "+r"(len));
	if (len > RP_TCTX_MAX - RP_TCTX_HDR)
		len = 0;
	if (len &&
	    RP_READ_USER(rctx, r->data + RP_TCTX_HDR, len, (const void *)(ptr + RP_TCTX_HDR))) {
		r->flags |= RP_TCTX_F_ATTRS_FAIL;
		len = 0;
	}
	r->attrs = len;
	r->pad = 0;
	r->hdr = s->sample.hdr;
	r->hdr.version = RP_REC_VERSION;
	r->hdr.kind = RP_REC_TCTX;
	r->hdr.size = RP_TCTX_REC_HDR_SIZE + RP_TCTX_HDR + len;
	r->cpu = s->sample.cpu;
	r->seq = s->sample.seq;
	if (bpf_ringbuf_output(&samples, r, (RP_TCTX_REC_HDR_SIZE + RP_TCTX_HDR + len) & 1023,
			       rb_flags())) {
		stat_add(RP_STAT_TCTX_LOST, 1);
		return 1;
	}
	stat_add(RP_STAT_TCTX, 1);
	return 1;
failed:
	stat_add(RP_STAT_TCTX_FAILED, 1);
	return 1;
}

/* Reads and sends the thread context of the thread at tp, for a process that publishes one:
 * nothing is read for one that publishes none (tctx_mode 0), its samples cost what they did. */
static __always_inline void rp_sample_tctx(struct rp_scratch *s, const struct rp_proc *proc,
					   __u64 tp, void *rctx)
{
	if (!proc->tctx_mode)
		return;
	s->tctx_tp = tp;
	s->tctx_loc.tctx_mode = proc->tctx_mode;
	s->tctx_loc.tctx_off = proc->tctx_off;
	s->tctx_loc.tctx_modid = proc->tctx_modid;
	s->tctx_loc.tctx_block_off = proc->tctx_block_off;
	bpf_loop(1, rp_tctx_read, rctx, 0);
}

/* Sends a header-only sample (no frames) so that the thread's time is still accounted. */
static __always_inline void emit_empty(struct rp_scratch *s, __u32 flags)
{
	s->sample.flags = flags | RP_SAMPLE_LAST;
	s->sample.nframes = 0;
	s->sample.first = 0;
	s->sample.nslots = 0;
	s->sample.base_seq = 0;
	s->sample.truncated = 0;
	s->sample.hdr.size = RP_SAMPLE_HDR_SIZE;
	if (bpf_ringbuf_output(&samples, &s->sample, RP_SAMPLE_HDR_SIZE, rb_flags()))
		stat_add(RP_STAT_RB_DROPPED, 1);
}

/*
 * Walks the Ruby stack of the EC `ec` and sends it as RP_REC_STACK records. The caller has filled
 * s->sample.hdr (pid, tid, time, weight, state), comm and cpu (whose `slots` blocks the walk
 * uses); `rctx` is passed to RP_READ_USER. `tp`, when not 0, is the thread pointer of the thread
 * that was found to run this EC: before Ruby 3.0 (a global EC) the stack is counted only if the
 * EC is that thread's own.
 */
static __always_inline void rp_sample_ec(struct rp_scratch *s, const struct rp_proc *proc, __u64 ec,
					 __u64 tp, void *rctx)
{
	__u32 zero = 0, lo, key, j;
	__u64 vm_stack, vm_stack_size, cfp, top, end, n, th, ptid;
	struct rp_slot_block *blk;

	/* vm_stack, vm_stack_size and cfp are the first three words of the EC in every version. */
	if (RP_READ_USER(rctx, s->ec, sizeof(s->ec), (const void *)ec)) {
		stat_add(RP_STAT_READ_FAILED, 1);
		emit_empty(s, RP_SAMPLE_READ_FAIL);
		return;
	}
	vm_stack = s->ec[(proc->off.ec_vm_stack / 8) & 7];
	vm_stack_size = s->ec[(proc->off.ec_vm_stack_size / 8) & 7];
	cfp = s->ec[(proc->off.ec_cfp / 8) & 7];

	if (tp && proc->ec_mode == RP_EC_GLOBAL) {
		/* Before 3.0 the global EC is the GVL holder's: count it only for its own thread. */
		th = s->ec[(proc->off.ec_thread_ptr / 8) & 7];
		if (!th || read_u64(rctx, &ptid, th + proc->off.th_thread_id)) {
			stat_add(RP_STAT_READ_FAILED, 1);
			emit_empty(s, RP_SAMPLE_READ_FAIL);
			return;
		}
		if (ptid != tp) {
			stat_add(RP_STAT_NOT_GVL, 1);
			emit_empty(s, RP_SAMPLE_NOT_GVL);
			return;
		}
	}

	/* Shape check: the stack is at most 1 GiB of VALUEs and cfp lies inside it. */
	top = vm_stack + vm_stack_size * 8;
	if (!vm_stack || vm_stack_size == 0 || vm_stack_size > (1ULL << 27) || cfp < vm_stack ||
	    cfp >= top || !proc->off.cfp_size) {
		stat_add(RP_STAT_BAD_EC, 1);
		emit_empty(s, RP_SAMPLE_BAD_EC);
		return;
	}
	/* The last slot is a dummy frame; the one below it (<main> or a thread's block) is real. */
	/* The thread that owns the EC comes free with its first words (ec_thread_ptr < 64). */
	s->sample.ruby_thread = s->ec[(proc->off.ec_thread_ptr / 8) & 7];
	end = top - proc->off.cfp_size;
	n = cfp < end ? (end - cfp) / proc->off.cfp_size : 0;

	s->sample.flags = 0;
	s->sample.truncated = 0;
	/* In GC? Only the thread that runs the collector (the GVL holder) is attributed to it. */
	if (proc->gc_flags &&
	    !RP_READ_USER(rctx, &s->gc_flags, sizeof(s->gc_flags), (const void *)proc->gc_flags) &&
	    (s->gc_flags & RP_GC_DURING_GC) &&
	    (!proc->gc_running_ec ||
	     (!read_u64(rctx, &s->running_ec, proc->gc_running_ec) && s->running_ec == ec))) {
		s->sample.flags |= RP_SAMPLE_GC;
		s->sample.gc_mode = s->gc_flags & RP_GC_MODE_MASK;
		stat_add(RP_STAT_GC, 1);
	}
	if (n > max_frames) {
		s->sample.flags |= RP_SAMPLE_TRUNCATED;
		s->sample.truncated = n - max_frames;
		n = max_frames;
		stat_add(RP_STAT_TRUNCATED, 1);
	}

	s->walk = (struct rp_walk){
		.cfp = cfp,
		.remaining = n,
		.cfp_size = proc->off.cfp_size,
		.off_pc = proc->off.cfp_pc,
		.off_iseq = proc->off.cfp_iseq,
		.off_ep = proc->off.cfp_ep,
		.off_self = proc->off.cfp_self,
		.off_jit = proc->off.cfp_jit_return,
		.first = 1,
		.slot = n,
		.key_base = s->sample.cpu * slot_blocks,
	};
	/* A full stack now and then, so that a reader that lost the base finds it again. */
	if (s->base_valid && s->sample.seq % RP_FULL_EVERY)
		s->walk.base_n = s->base_n;
	s->walk.shared = n < s->walk.base_n ? n : s->walk.base_n;
	s->base_valid = 0;
	bpf_loop((n + RP_CFP_BATCH - 1) / RP_CFP_BATCH, rp_walk_batch, rctx, 0);
	/* The callback may have flushed chunks: look the scratch space up again. */
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return;
	s->sample.nslots = n;
	s->sample.base_seq = 0;
	if (s->walk.remaining) {
		/* A batch could not be read: slots [0, lo) are another stack's. Send [lo, n), the
		 * rest of lo's block emptied. */
		lo = s->walk.slot;
		s->sample.first = lo & ~(RP_SLOT_BLOCK - 1);
		key = s->walk.key_base + lo / RP_SLOT_BLOCK;
		blk = bpf_map_lookup_elem(&slots, &key);
		for (j = 0; j < RP_SLOT_BLOCK && blk; j++) {
			if (s->sample.first + j >= lo)
				break;
			blk->f[j] = (struct rp_frame){};
		}
	} else if (s->walk.shared >= RP_SLOT_BLOCK) {
		s->sample.first = s->walk.shared & ~(RP_SLOT_BLOCK - 1);
		s->sample.base_seq = s->base_seq;
		s->sample.flags |= RP_SAMPLE_DELTA;
	} else {
		s->sample.first = 0;
	}
	if (s->walk.read_failed) {
		s->sample.flags |= RP_SAMPLE_READ_FAIL;
		stat_add(RP_STAT_READ_FAILED, 1);
	}
	n -= s->sample.first;
	/* One record at least (a delta may add no slot: a header that ends the sample). One call
	 * site of the callback, so that the verifier explores it once; the JIT inlines bpf_loop. */
	bpf_loop(n ? (n + RP_CHUNK_FRAMES - 1) / RP_CHUNK_FRAMES : 1, rp_ship_chunk, NULL, 0);
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return;
	stat_add(RP_STAT_FRAMES, s->walk.nframes);
	stat_add(RP_STAT_SHIPPED, s->walk.shipped);
	if (s->walk.dropped) {
		stat_add(RP_STAT_RB_DROPPED, 1);
		return;
	}
	stat_add(RP_STAT_RUBY_STACKS, 1);
	/* The reader now holds this stack whole: the next may be sent as its delta. */
	if (!s->walk.read_failed) {
		s->base_n = s->sample.nslots;
		s->base_seq = s->sample.seq;
		s->base_valid = 1;
	}
}

/*
 * Walks the Ruby stack of the thread whose thread pointer is `tp` (the current thread: its memory
 * is read with bpf_probe_read_user) and sends it as RP_REC_STACK records. The caller has filled
 * s->sample.hdr (pid, tid, time, weight, state) and comm; any BPF program of the project can call
 * this (perf_event now; a tracepoint or an iterator with its own reads later).
 */
static __always_inline void rp_sample_ruby(struct rp_scratch *s, const struct rp_proc *proc,
					   __u64 tp)
{
	void *rctx = NULL;
	__u64 ec;

	s->sample.hdr.version = RP_REC_VERSION;
	s->sample.hdr.kind = RP_REC_STACK;
	s->sample.cpu = bpf_get_smp_processor_id();
	s->sample.seq = s->seq++;
	s->sample.chunk = 0;
	s->sample.gc_mode = 0;
	s->sample.ruby_thread = 0;
	s->sample.syscall = 0;

	if (find_ec(proc, tp, &ec, rctx)) {
		stat_add(RP_STAT_READ_FAILED, 1);
		emit_empty(s, RP_SAMPLE_READ_FAIL);
		return;
	}
	if (!ec) {
		stat_add(RP_STAT_NO_EC, 1);
		/* wall time is a Ruby thread's: a native thread without one has no share in it */
		if (!wall_clock)
			emit_empty(s, RP_SAMPLE_NO_EC);
		return;
	}
	rp_sample_tctx(s, proc, tp, rctx);
	rp_sample_ec(s, proc, ec, tp, rctx);
}

#endif
