// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor.bpf.c - reference programs for `make bench`, measured beside rubyprofd's rp_on_sample.
 *
 * bench_floor: the cost floor of a Ruby stack walk. It does only what every walk must do: find the
 * target, read the execution context through TLS (fsbase + tls_off), read the EC's first words,
 * and copy the control frames to a per-CPU buffer, RP-style: bpf_loop, 8 frames per
 * bpf_probe_read_user. No frame is decoded and nothing leaves the kernel, so rp_on_sample can
 * only be slower; how much slower is what the bench reports.
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

SEC("perf_event")
int bench_floor(struct bpf_perf_event_data *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct task_struct *task;
	struct floor_target *t;
	struct floor_scratch *s;
	__u64 tp, ec, vm_stack, top, end, cfp, n;

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
	return 0;
}

SEC("perf_event")
int bench_empty(struct bpf_perf_event_data *ctx)
{
	return 0;
}
