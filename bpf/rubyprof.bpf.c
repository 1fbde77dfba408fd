// SPDX-License-Identifier: GPL-2.0-only
/*
 * rubyprof.bpf.c - samples Ruby stacks on perf_event cpu-clock ticks.
 *
 * For a thread of a Ruby process that the daemon registered in `procs`, find the thread's
 * rb_execution_context_t (TLS or, before Ruby 3.0, a global), then walk the VM control frames from
 * ec->cfp up to the dummy frame at the top of the VM stack, copying RP_CFP_BATCH frames per
 * bpf_probe_read_user. Each frame becomes a struct rp_frame (include/rubyprof.h): the iseq or
 * method entry, the pc and the frame's kind, and the ep[-2] word of a method's own frame; names
 * and lines are resolved in userspace. Stacks go to userspace through a ring buffer in chunks of
 * RP_CHUNK_FRAMES frames.
 *
 * The walk itself (walk.bpf.h, rp_sample_ruby) can be called by any program of the project.
 *
 * Process life cycle: the scheduler's exec, fork and exit tracepoints keep `procs` true to the
 * kernel at once (an exec or exit drops the pid's entry, a fork of a profiled Ruby copies it to
 * the child) and tell the daemon through the same ring buffer (RP_REC_PROC records).
 *
 * An iter/task program reports the thread pointer (fsbase) of each thread of one process, so that
 * the daemon can locate and validate TLS without stopping the process.
 *
 * Every pid these programs send or look up is the daemon's (pidns.bpf.h): in a pid namespace
 * other than the initial one, tasks outside it are neither sampled nor reported.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "rubyprof.h"
#include "maps.bpf.h"
#include "pidns.bpf.h"
#include "walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline __u64 task_thread_pointer(struct task_struct *task)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(task, thread.uw.tp_value);
#else
#error "unsupported architecture"
#endif
}

/* The start time of task's process: with the pid, what identifies a process over time. */
static __always_inline __u64 process_start_time(struct task_struct *task)
{
	return BPF_CORE_READ(task, group_leader, start_time);
}

/* Pages of the copy, the page sp is in included (RP_USTACK_DEFAULT / RP_USTACK_PAGE + 1). */
const volatile __u32 ustack_pages = RP_USTACK_DEFAULT / RP_USTACK_PAGE + 1;

/* --kernel-stacks (mixed only): each sample's kernel stack too, as RP_REC_KSTACK. */
const volatile __u32 kernel_stacks = 0;

/*
 * --native-processes (mixed only): RP_NATIVE_*. Read only after a sample missed `procs`, and a
 * load-time constant: with RP_NATIVE_RUBY the verifier drops the branch, and a Ruby sample's
 * path is the one it was.
 */
const volatile __u32 native_procs = RP_NATIVE_RUBY;

/* RP_NATIVE_LISTED: the tgids whose native stacks are sampled (filled by the daemon). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RP_MAX_NATIVE_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} native_pids SEC(".maps");

/*
 * The sample's kernel stack (bpf_get_stack, kernel frames: the interrupted kernel code of a tick
 * that found the thread in a system call or a page fault), as RP_REC_KSTACK; nothing for a tick
 * in user mode. Written straight into the ring-buffer record.
 */
static __always_inline void rp_sample_kstack(void *ctx, __u32 tgid, __u32 tid, __u32 seq, __u64 now)
{
	struct rp_kstack *k;
	long n;

	k = bpf_ringbuf_reserve(&samples, sizeof(*k), 0);
	if (!k) {
		stat_add(RP_STAT_KSTACK_LOST, 1);
		return;
	}
	n = bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0);
	if (n <= 0) {
		bpf_ringbuf_discard(k, BPF_RB_NO_WAKEUP);
		return;
	}
	k->hdr.version = RP_REC_VERSION;
	k->hdr.kind = RP_REC_KSTACK;
	k->hdr.state = RP_TSTATE_ON_CPU;
	k->hdr.wunit = RP_WEIGHT_COUNT;
	k->hdr.size = sizeof(*k);
	k->hdr.weight = 0;
	k->hdr.time_ns = now;
	k->hdr.pid = tgid;
	k->hdr.tid = tid;
	k->cpu = bpf_get_smp_processor_id();
	k->seq = seq;
	k->n = (__u32)n / sizeof(__u64);
	k->flags = 0;
	stat_add(RP_STAT_KSTACKS, 1);
	bpf_ringbuf_submit(k, rb_flags());
}

/*
 * The sampled thread's user registers and stack, as RP_REC_USTACK. The registers are those the
 * thread's entry into the kernel saved (task_pt_regs): the interrupted user code's even when the
 * tick found the thread in the kernel (a system call, a page fault). The copy goes straight into
 * the ring-buffer record (larger than a per-CPU map value may be), page by page from sp's page
 * up, and stops at the first page that cannot be read (the top of the stack): what exists is sent.
 */
static __always_inline void rp_sample_ustack(struct task_struct *task, __u32 tgid, __u32 tid,
					     __u32 seq, __u64 now, __u32 flags)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct rp_ustack *u;
	__u64 base;
	__u32 i;

	u = bpf_ringbuf_reserve(&samples, RP_USTACK_HDR_SIZE + ustack_pages * RP_USTACK_PAGE, 0);
	if (!u) {
		stat_add(RP_STAT_USTACK_LOST, 1);
		return;
	}
	u->hdr.version = RP_REC_VERSION;
	u->hdr.kind = RP_REC_USTACK;
	u->hdr.state = RP_TSTATE_ON_CPU;
	u->hdr.wunit = RP_WEIGHT_COUNT;
	u->hdr.size = RP_USTACK_HDR_SIZE + ustack_pages * RP_USTACK_PAGE;
	/* the Ruby stack of the sample carries its weight; a sample without one, this record */
	u->hdr.weight = flags & RP_USTACK_ALONE ? 1 : 0;
	u->hdr.time_ns = now;
	u->hdr.pid = tgid;
	u->hdr.tid = tid;
	u->cpu = bpf_get_smp_processor_id();
	u->seq = seq;
#if defined(__TARGET_ARCH_x86)
	u->ip = BPF_CORE_READ(regs, ip);
	u->sp = BPF_CORE_READ(regs, sp);
	u->bp = BPF_CORE_READ(regs, bp);
#elif defined(__TARGET_ARCH_arm64)
	u->ip = BPF_CORE_READ(regs, pc);
	u->sp = BPF_CORE_READ(regs, sp);
	u->bp = BPF_CORE_READ(regs, regs[29]);
#endif
	u->len = 0;
	u->flags = flags;
	bpf_get_current_comm(u->comm, sizeof(u->comm));
	base = u->sp & ~(__u64)(RP_USTACK_PAGE - 1);
#pragma unroll
	for (i = 0; i < RP_USTACK_PAGES_MAX; i++) {
		if (i >= ustack_pages)
			break;
		if (bpf_probe_read_user(u->data + i * RP_USTACK_PAGE, RP_USTACK_PAGE,
					(const void *)(base + i * RP_USTACK_PAGE))) {
			u->flags |= RP_USTACK_SHORT;
			stat_add(RP_STAT_USTACK_SHORT, 1);
			break;
		}
		u->len += RP_USTACK_PAGE;
	}
	stat_add(RP_STAT_USTACKS, 1);
	bpf_ringbuf_submit(u, rb_flags());
}

/*
 * --native-processes: a sample of a process that is no profiled Ruby, listed or not as asked: its
 * kernel stack and user stack alone (no Ruby stack follows). Kernel threads have no user stack.
 */
static __always_inline void rp_sample_alone(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 tid,
					    __u64 now)
{
	struct task_struct *task;

	if (native_procs == RP_NATIVE_LISTED && !bpf_map_lookup_elem(&native_pids, &tgid))
		return;
	task = bpf_get_current_task_btf();
	if (!task->mm)
		return;
	stat_add(RP_STAT_NATIVE_ALONE, 1);
	if (kernel_stacks)
		rp_sample_kstack(ctx, tgid, tid, 0, now);
	rp_sample_ustack(task, tgid, tid, 0, now, RP_USTACK_ALONE);
}

SEC("perf_event")
int rp_on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), t0 = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	struct task_struct *task;
	struct rp_proc *proc;
	struct rp_scratch *s;

	stat_add(RP_STAT_SAMPLES, 1);
	if (tgid == 0)
		goto out;
	/* in a pid namespace: the ids of the daemon's, and no sample of a task it cannot see */
	if (pidns_ino && !pidns_ids(bpf_get_current_task_btf(), &tgid, &tid)) {
		stat_add(RP_STAT_OTHER_NS, 1);
		goto out;
	}
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!proc) {
		if (native_procs != RP_NATIVE_RUBY)
			rp_sample_alone(ctx, tgid, tid, t0);
		goto out;
	}
	task = bpf_get_current_task_btf();
	/* The entry was made for an earlier process with this pid (its exit was not seen yet):
	 * never walk another process's memory with it. */
	if (proc->start_time && proc->start_time != process_start_time(task)) {
		stat_add(RP_STAT_STALE_PID, 1);
		goto out;
	}
	/* Wall mode: a process whose running threads the iterator walks itself (or that it does
	 * not sample at all) would be counted twice, or on the CPU only. */
	if (wall_clock && !(proc->flags & RP_PROCF_WALL_RUNNING)) {
		stat_add(RP_STAT_WALL_MUTED, 1);
		goto out;
	}
	stat_add(RP_STAT_RUBY_SAMPLES, 1);
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		goto out;
	/* Wall mode: a thread on a CPU is `running`, one sample of a period like the iterator's
	 * (the collector weighs a count with the current period, which follows --frequency). */
	s->sample.hdr.state = wall_clock ? RP_TSTATE_RUNNING : RP_TSTATE_ON_CPU;
	s->sample.hdr.wunit = RP_WEIGHT_COUNT;
	s->sample.hdr.weight = 1;
	s->sample.hdr.time_ns = t0;
	s->sample.hdr.pid = tgid;
	s->sample.hdr.tid = tid;
	bpf_get_current_comm(s->sample.comm, sizeof(s->sample.comm));
	/* before the Ruby stack, with the seq rp_sample_ruby gives it: the daemon keeps the copy
	 * until that stack is complete */
	if (stacks_mixed) {
		if (kernel_stacks)
			rp_sample_kstack(ctx, tgid, tid, s->seq, t0);
		rp_sample_ustack(task, tgid, tid, s->seq, t0, 0);
	}
	rp_sample_ruby(s, proc, task_thread_pointer(task));
out:
	stat_add(RP_STAT_RUN_NS, bpf_ktime_get_ns() - t0);
	return 0;
}

/* ---- process life cycle ----------------------------------------------------------------- */

/* tgid and tid: task's in the daemon's namespace (pidns_ids). */
static __always_inline void proc_event(struct task_struct *task, __u32 tgid, __u32 tid, __u32 event,
				       __u32 flags, __u32 ppid)
{
	struct rp_proc_event *e;

	e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);
	if (!e) {
		stat_add(RP_STAT_EVENTS_LOST, 1);
		return;
	}
	e->hdr.version = RP_REC_VERSION;
	e->hdr.kind = RP_REC_PROC;
	e->hdr.state = RP_TSTATE_NONE;
	e->hdr.wunit = RP_WEIGHT_COUNT;
	e->hdr.size = sizeof(*e);
	e->hdr.weight = 0;
	e->hdr.time_ns = bpf_ktime_get_ns();
	e->hdr.pid = tgid;
	e->hdr.tid = tid;
	e->event = event;
	e->flags = flags;
	e->ppid = ppid;
	e->pad = 0;
	e->start_time = process_start_time(task);
	BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
	/* The daemon acts on these at once: a new Ruby is looked at within milliseconds, and an
	 * exit has the samples before it taken in and the process forgotten without waiting for
	 * the daemon's next read tick (samples themselves do not wake it: maps.bpf.h). */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	stat_add(RP_STAT_PROC_EVENTS, 1);
}

/* A new program: whatever the daemon knew of this pid is void until it looks again. A process
 * outside the daemon's namespace is none of its business. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(rp_on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid, tid, flags = 0;

	if (!pidns_ids(p, &tgid, &tid))
		return 0;
	if (bpf_map_delete_elem(&procs, &tgid) == 0)
		flags |= RP_PROC_F_PROFILED;
	proc_event(p, tgid, tid, RP_PROC_EXEC, flags, 0);
	return 0;
}

/*
 * A fork of a profiled Ruby (Puma, Unicorn and Sidekiq workers are forked from a booted master)
 * shares its parent's layout: sample it from its first tick with a copy of the parent's entry,
 * which the daemon then validates. Threads and vfork-style children (same mm) are not processes
 * of their own.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(rp_on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid), ptid, ctid;
	struct rp_proc *pp, copy;

	if (ptgid == ctgid || BPF_CORE_READ(child, pid) != ctgid)
		return 0;
	/* the daemon's pids from here on (a child is in its parent's namespace or one nested
	 * in it: seen wherever the parent is) */
	if (!pidns_ids(parent, &ptgid, &ptid) || !pidns_ids(child, &ctgid, &ctid))
		return 0;
	pp = bpf_map_lookup_elem(&procs, &ptgid);
	if (!pp)
		return 0;
	if (BPF_CORE_READ(child, mm) == BPF_CORE_READ(parent, mm))
		return 0;
	__builtin_memcpy(&copy, pp, sizeof(copy));
	copy.start_time = BPF_CORE_READ(child, start_time);
	if (bpf_map_update_elem(&procs, &ctgid, &copy, BPF_ANY) == 0) {
		stat_add(RP_STAT_FORK_COPIED, 1);
		proc_event(child, ctgid, ctid, RP_PROC_FORK, RP_PROC_F_PROFILED, ptgid);
	}
	return 0;
}

/* The last thread of a profiled process exited: forget it here, and tell the daemon. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(rp_on_exit, struct task_struct *p)
{
	__u32 tgid, tid;

	if (BPF_CORE_READ(p, signal, live.counter) != 0 || !pidns_ids(p, &tgid, &tid))
		return 0;
	if (bpf_map_delete_elem(&procs, &tgid) == 0)
		proc_event(p, tgid, tid, RP_PROC_EXIT, RP_PROC_F_PROFILED, 0);
	return 0;
}

/* Target process of the task iterator, set by the daemon before each iteration. */
__u32 iter_tgid;

SEC("iter/task")
int rp_iter_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct rp_thread_tp out = {};
	__u32 tgid, tid;

	if (!task || !pidns_ids(task, &tgid, &tid) || tgid != iter_tgid)
		return 0;
	out.tid = tid;
#if defined(__TARGET_ARCH_x86)
	out.fsbase = task->thread.fsbase;
#elif defined(__TARGET_ARCH_arm64)
	out.fsbase = task->thread.uw.tp_value;
#endif
	out.start_time = task->group_leader->start_time;
	bpf_seq_write(ctx->meta->seq, &out, sizeof(out));
	return 0;
}

/*
 * The daemon's pid namespace, as its level and inode number: an iterator's program runs in the
 * context of the task that reads it, the daemon. One record, at the first task.
 */
SEC("iter/task")
int rp_iter_pidns(struct bpf_iter__task *ctx)
{
	struct task_struct *me = bpf_get_current_task_btf();
	struct rp_pidns out = {};
	struct pid_namespace *ns;
	struct pid *pid;
	struct upid *up;

	if (ctx->meta->seq_num != 0)
		return 0;
	pid = BPF_CORE_READ(me, thread_pid);
	out.level = BPF_CORE_READ(pid, level);
	if (out.level > RP_PIDNS_MAX_LEVEL)
		return 0;
	up = (struct upid *)((__u8 *)__builtin_preserve_access_index(&pid->numbers[0]) +
			     out.level * bpf_core_type_size(struct upid));
	ns = BPF_CORE_READ(up, ns);
	out.inum = BPF_CORE_READ(ns, ns.inum);
	bpf_seq_write(ctx->meta->seq, &out, sizeof(out));
	return 0;
}
