// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor.bpf.c - reference programs for `make bench`, measured beside rubyprofd's rp_on_sample.
 *
 * bench_floor: the cost floor of a Ruby stack walk. It does only what every walk must do: find the
 * target, read the execution context through TLS (fsbase + tls_off), read the EC's first words,
 * and copy the control frames to a per-CPU buffer, RP-style: bpf_loop, 8 frames per
 * bpf_probe_read_user. No frame is decoded and nothing leaves the kernel, so rp_on_sample can
 * only be slower; how much slower is what the bench reports. With `emit` set (bpfbench floor -R)
 * it also ships the whole stack's bytes (a sample header and a struct rp_frame per frame, in
 * chunks of RP_CHUNK_FRAMES, include/rubyprof.h; what rubyprofd shipped for every sample before
 * its records became deltas) through a ring buffer, without waking the reader: the floor of
 * walking plus delivering, apart from decoding frames.
 *
 * bench_empty: an empty perf_event program. Attached to a cpu-clock event it measures what the
 * sampling interrupt itself costs the interrupted thread (bpfbench irq), before any BPF work.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "rubyprof.h"
#include "floor.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 emit = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} records SEC(".maps");

/* A record as large as rubyprofd's biggest: header and one chunk of frames (contents unused). */
struct floor_record {
	__u8 data[RP_SAMPLE_HDR_SIZE + RP_CHUNK_FRAMES * sizeof(struct rp_frame)];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_record);
} record SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FLOOR_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct floor_target);
} targets SEC(".maps");

struct floor_scratch {
	__u64 ec[8];
	__u64 cfp;
	__u32 left;
	__u32 cfp_size;
	/* Twice a batch: a size masked to the buffer (below) must not wrap a full batch to 0. */
	__u8 buf[2 * FLOOR_BATCH * FLOOR_CFP_MAX_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FLOOR_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += n;
}

/* One batch of up to FLOOR_BATCH control frames per iteration. */
static long copy_batch(__u32 idx, void *ctx)
{
	struct floor_scratch *s;
	__u32 zero = 0, n;
	__u64 size;

	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s || s->left == 0)
		return 1;
	n = s->left < FLOOR_BATCH ? s->left : FLOOR_BATCH;
	size = (__u64)n * s->cfp_size;
	/* Mask in asm on the register that is passed (see bpf/walk.bpf.h): buf is 1024 bytes, so
	 * that a full batch of 64-byte frames (512 bytes, Ruby 3.1 and 3.2) is copied whole. */
	asm volatile("%[size] &= 1023" : [size] "+r"(size));
	if (bpf_probe_read_user(s->buf, size, (const void *)s->cfp)) {
		stat_add(FLOOR_STAT_READ_FAILED, 1);
		return 1;
	}
	s->cfp += size;
	s->left -= n;
	return s->left ? 0 : 1;
}

/* One record per iteration: the header and up to RP_CHUNK_FRAMES frames' worth of bytes. */
static long emit_chunk(__u32 idx, void *ctx)
{
	__u64 *left = ctx, nf, size;
	struct floor_record *r;
	__u32 zero = 0;

	r = bpf_map_lookup_elem(&record, &zero);
	if (!r)
		return 1;
	nf = *left < RP_CHUNK_FRAMES ? *left : RP_CHUNK_FRAMES;
	size = RP_SAMPLE_HDR_SIZE + nf * sizeof(struct rp_frame);
	if (size > sizeof(r->data))
		size = sizeof(r->data);
	if (bpf_ringbuf_output(&records, r->data, size, BPF_RB_NO_WAKEUP))
		stat_add(FLOOR_STAT_DROPPED, 1);
	*left -= nf;
	return *left ? 0 : 1;
}

SEC("perf_event")
int bench_floor(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct task_struct *task;
	struct floor_target *t;
	struct floor_scratch *s;
	__u64 tp, ec, vm_stack, top, end, cfp, n, left;

	stat_add(FLOOR_STAT_SAMPLES, 1);
	if (tgid == 0)
		return 0;
	t = bpf_map_lookup_elem(&targets, &tgid);
	if (!t)
		return 0;
	stat_add(FLOOR_STAT_TARGET_SAMPLES, 1);
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	task = bpf_get_current_task_btf();
	tp = BPF_CORE_READ(task, thread.fsbase);
	if (bpf_probe_read_user(&ec, sizeof(ec), (const void *)(tp + t->tls_off)) || !ec ||
	    bpf_probe_read_user(s->ec, sizeof(s->ec), (const void *)ec)) {
		stat_add(FLOOR_STAT_READ_FAILED, 1);
		return 0;
	}
	vm_stack = s->ec[(t->ec_vm_stack / 8) & 7];
	top = vm_stack + s->ec[(t->ec_vm_stack_size / 8) & 7] * 8;
	cfp = s->ec[(t->ec_cfp / 8) & 7];
	if (!t->cfp_size || t->cfp_size > FLOOR_CFP_MAX_SIZE || cfp < vm_stack || cfp >= top) {
		stat_add(FLOOR_STAT_READ_FAILED, 1);
		return 0;
	}
	/* Same bound as rp_on_sample: the last slot is a dummy frame. */
	end = top - t->cfp_size;
	n = cfp < end ? (end - cfp) / t->cfp_size : 0;
	if (n > FLOOR_MAX_FRAMES)
		n = FLOOR_MAX_FRAMES;
	s->cfp = cfp;
	s->left = n;
	s->cfp_size = t->cfp_size;
	bpf_loop((n + FLOOR_BATCH - 1) / FLOOR_BATCH, copy_batch, NULL, 0);
	stat_add(FLOOR_STAT_FRAMES, n);
	if (emit) {
		left = n;
		bpf_loop(n ? (n + RP_CHUNK_FRAMES - 1) / RP_CHUNK_FRAMES : 1, emit_chunk, &left, 0);
	}
	return 0;
}

SEC("perf_event")
int bench_empty(struct bpf_perf_event_data *ctx)
{
	return 0;
}
