// SPDX-License-Identifier: GPL-2.0-only
/*
 * rubyprof.bpf.c - samples Ruby stacks on perf_event cpu-clock ticks.
 *
 * For a thread of a Ruby process that the daemon registered in `procs`, find the thread's
 * rb_execution_context_t (TLS or, before Ruby 3.0, a global), then walk the VM control frames from
 * ec->cfp up to the dummy frame at the top of the VM stack, copying RP_CFP_BATCH frames per
 * bpf_probe_read_user. Each frame becomes a raw (address, pc) pair; strings are resolved in
 * userspace. Stacks go to userspace through a ring buffer in chunks of RP_CHUNK_FRAMES frames.
 *
 * A second program, an iter/task, reports the thread pointer (fsbase) of each thread of one process,
 * so that the daemon can locate and validate TLS without stopping the process.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "rubyprof.h"
#include "maps.bpf.h"
#include "walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* objspace flags word: `mode` in bits 0-1, `during_gc` in bit 5 (gc.c, 2.6 - 4.0) */
#define RP_GC_MODE_MASK 0x3
#define RP_GC_DURING_GC (1u << 5)

/* Frame limit, set by the daemon before load (--max-frames). */
const volatile __u32 max_frames = RP_MAX_FRAMES_DEFAULT;

static __always_inline __u64 thread_pointer(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(task, thread.uw.tp_value);
#else
#error "unsupported architecture"
#endif
}

static __always_inline int read_u64(__u64 *dst, __u64 addr)
{
	return bpf_probe_read_user(dst, sizeof(*dst), (const void *)addr);
}

/* The sampled thread's EC, 0 when it has none. Returns -1 when a read failed. */
static __always_inline int find_ec(const struct rp_proc *proc, __u64 tp, __u64 *ec)
{
	__u64 dtv, block;

	*ec = 0;
	switch (proc->ec_mode) {
	case RP_EC_TLS_STATIC:
		return read_u64(ec, tp + proc->tls_off) ? -1 : 0;
	case RP_EC_TLS_DTV:
		/* glibc: tcbhead_t.dtv at tp + 8; dtv entries are {void *val; void *to_free}. */
		if (read_u64(&dtv, tp + 8) || !dtv)
			return -1;
		/* dtv[-1] counts the slots: a thread made before the dlopen has fewer */
		if (read_u64(&block, dtv - 16))
			return -1;
		if (proc->tls_modid > block)
			return 0;
		if (read_u64(&block, dtv + proc->tls_modid * 16))
			return -1;
		/* TLS_DTV_UNALLOCATED: this thread never touched libruby's TLS, so it runs no Ruby. */
		if (block == 0 || block == (__u64)-1)
			return 0;
		return read_u64(ec, block + proc->tls_block_off) ? -1 : 0;
	case RP_EC_GLOBAL:
		return read_u64(ec, proc->ec_global) ? -1 : 0;
	}
	return -1;
}

/* Sends a header-only sample (no frames) so that the thread's CPU time is still accounted. */
static __always_inline void emit_empty(struct rp_scratch *s, __u32 flags)
{
	s->sample.flags = flags | RP_SAMPLE_LAST;
	s->sample.nframes = 0;
	s->sample.truncated = 0;
	if (bpf_ringbuf_output(&samples, &s->sample, RP_SAMPLE_HDR_SIZE, rb_flags()))
		stat_add(RP_STAT_RB_DROPPED, 1);
}

SEC("perf_event")
int rp_on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, zero = 0;
	struct rp_proc *proc;
	struct rp_scratch *s;
	__u64 tp, ec, vm_stack, vm_stack_size, cfp, top, end, n, th, ptid;

	stat_add(RP_STAT_SAMPLES, 1);
	if (tgid == 0)
		return 0;
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!proc)
		return 0;
	stat_add(RP_STAT_RUBY_SAMPLES, 1);
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;

	s->sample.time_ns = bpf_ktime_get_ns();
	s->sample.pid = tgid;
	s->sample.tid = (__u32)id;
	s->sample.cpu = bpf_get_smp_processor_id();
	s->sample.seq = s->seq++;
	s->sample.chunk = 0;
	bpf_get_current_comm(s->sample.comm, sizeof(s->sample.comm));

	tp = thread_pointer();
	if (find_ec(proc, tp, &ec)) {
		stat_add(RP_STAT_READ_FAILED, 1);
		emit_empty(s, RP_SAMPLE_READ_FAIL);
		return 0;
	}
	if (!ec) {
		stat_add(RP_STAT_NO_EC, 1);
		emit_empty(s, RP_SAMPLE_NO_EC);
		return 0;
	}
	/* vm_stack, vm_stack_size and cfp are the first three words of the EC in every version. */
	if (bpf_probe_read_user(s->ec, sizeof(s->ec), (const void *)ec)) {
		stat_add(RP_STAT_READ_FAILED, 1);
		emit_empty(s, RP_SAMPLE_READ_FAIL);
		return 0;
	}
	vm_stack = s->ec[(proc->off.ec_vm_stack / 8) & 7];
	vm_stack_size = s->ec[(proc->off.ec_vm_stack_size / 8) & 7];
	cfp = s->ec[(proc->off.ec_cfp / 8) & 7];

	if (proc->ec_mode == RP_EC_GLOBAL) {
		/* Before 3.0 the global EC is the GVL holder's: count it only for its own thread. */
		th = s->ec[(proc->off.ec_thread_ptr / 8) & 7];
		if (!th || read_u64(&ptid, th + proc->off.th_thread_id)) {
			stat_add(RP_STAT_READ_FAILED, 1);
			emit_empty(s, RP_SAMPLE_READ_FAIL);
			return 0;
		}
		if (ptid != tp) {
			stat_add(RP_STAT_NOT_GVL, 1);
			emit_empty(s, RP_SAMPLE_NOT_GVL);
			return 0;
		}
	}

	/* Shape check: the stack is at most 1 GiB of VALUEs and cfp lies inside it. */
	top = vm_stack + vm_stack_size * 8;
	if (!vm_stack || vm_stack_size == 0 || vm_stack_size > (1ULL << 27) || cfp < vm_stack ||
	    cfp >= top || !proc->off.cfp_size) {
		stat_add(RP_STAT_BAD_EC, 1);
		emit_empty(s, RP_SAMPLE_BAD_EC);
		return 0;
	}
	/* The last slot is a dummy frame; the one below it (<main> or a thread's block) is real. */
	end = top - proc->off.cfp_size;
	n = cfp < end ? (end - cfp) / proc->off.cfp_size : 0;

	s->sample.flags = 0;
	s->sample.truncated = 0;
	s->sample.gc_mode = 0;
	/* In GC? Only the thread that runs the collector (the GVL holder) is attributed to it. */
	if (proc->gc_flags &&
	    !bpf_probe_read_user(&s->gc_flags, sizeof(s->gc_flags), (const void *)proc->gc_flags) &&
	    (s->gc_flags & RP_GC_DURING_GC) &&
	    (!proc->gc_running_ec ||
	     (!read_u64(&s->running_ec, proc->gc_running_ec) && s->running_ec == ec))) {
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
		.off_jit = proc->off.cfp_jit_return,
		.first = 1,
	};
	s->sample.nframes = 0;
	bpf_loop((n + RP_CFP_BATCH - 1) / RP_CFP_BATCH, rp_walk_batch, NULL, 0);
	/* The callback may have flushed chunks: look the scratch space up again. */
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	if (s->walk.read_failed) {
		s->sample.flags |= RP_SAMPLE_READ_FAIL;
		stat_add(RP_STAT_READ_FAILED, 1);
	}
	s->sample.flags |= RP_SAMPLE_LAST;
	rp_walk_flush(&s->walk, s);
	stat_add(RP_STAT_FRAMES, s->walk.frames_sent);
	if (s->walk.dropped)
		stat_add(RP_STAT_RB_DROPPED, 1);
	else
		stat_add(RP_STAT_RUBY_STACKS, 1);
	return 0;
}

/* Target process of the task iterator, set by the daemon before each iteration. */
__u32 iter_tgid;

SEC("iter/task")
int rp_iter_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct rp_thread_tp out = {};

	if (!task || task->tgid != iter_tgid)
		return 0;
	out.tid = task->pid;
#if defined(__TARGET_ARCH_x86)
	out.fsbase = task->thread.fsbase;
#elif defined(__TARGET_ARCH_arm64)
	out.fsbase = task->thread.uw.tp_value;
#endif
	bpf_seq_write(ctx->meta->seq, &out, sizeof(out));
	return 0;
}
