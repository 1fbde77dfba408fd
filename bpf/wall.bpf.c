// SPDX-License-Identifier: GPL-2.0-only
/*
 * wall.bpf.c - wall-clock samples (--clock wall): a sleepable task iterator that the daemon runs
 * (bpf_iter_create + read) once per tick and profiled process, pid-filtered at attach time.
 *
 * On the process's main task it finds an EC as the perf_event program does (TLS of the main
 * thread, or the global EC before 3.0), goes from that EC's thread to the VM or main ractor and
 * walks the living-threads list there: every Ruby thread, running or not, with or without a kernel
 * task of its own (M:N threads, 3.3+), gets one sample weighted with the tick's period, its state
 * decided from the Ruby thread's fields and its task's (docs/internals/wall-clock.md §3), its
 * stack walked with the CPU mode's walk (walk.bpf.h), every read done with
 * bpf_copy_from_user_task on the process's main task (all its threads share the mm). Sleepable:
 * a cold page of a long-idle thread's stack is faulted in instead of failing the read.
 *
 * A separate object from rubyprof.bpf.c so that CPU mode loads on kernels without sleepable
 * iterators; it shares that object's procs, samples and stats maps (reused by fd) and has its
 * own scratch space and `slots`, so that a perf sample on the CPU the iterator runs on (or a
 * task preempting it) never mixes its stack with this one. Its records carry cpu = wall_cpu, a
 * reassembly slot of their own in the daemon (sampler.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "rubyprof.h"

/* What the walk's reads go through: the task named by the rctx every call passes down. */
struct rp_wall_rctx {
	struct task_struct *task;
	__u32 ktgid; /* its kernel tgid, which the process's other tasks share */
};

#define RP_READ_USER(rctx, dst, size, src)                                                         \
	bpf_copy_from_user_task(dst, size, src, ((struct rp_wall_rctx *)(rctx))->task, 0)

#include "maps.bpf.h"
#include "pidns.bpf.h"
#include "walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym __weak;
extern struct task_struct *bpf_task_from_vpid(s32 vpid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;

/*
 * The task of a pid of the daemon's namespace, referenced (NULL: none, or no kfunc to find it
 * with). bpf_task_from_vpid (6.13) looks in the caller's namespace, which is the daemon's: a
 * run's program runs in the daemon's system call. In the initial namespace the two are the same
 * lookup, and bpf_task_from_pid (6.2) is the one that older kernels have too.
 */
static __always_inline struct task_struct *wall_task(__u32 pid)
{
	if (!bpf_task_release)
		return NULL;
	if (!pidns_ino)
		return bpf_task_from_pid ? bpf_task_from_pid((s32)pid) : NULL;
	return bpf_task_from_vpid ? bpf_task_from_vpid((s32)pid) : NULL;
}

/* The reassembly slot of wall records in the daemon (its number of possible CPUs). */
const volatile __u32 wall_cpu;

/* The run's target: set by the daemon before each run (one run at a time). */
struct rp_wall_params wall_params;

/* Bytes of a thread header copied at once: every field of rp_wall_offsets is below. */
#define WALL_TH_BYTES 384

struct wall_scratch {
	__u8 th[512]; /* the thread header (WALL_TH_BYTES), 512 for masked offsets */
	__u64 ec[8];  /* the first 64 bytes of the thread's EC (thread_ptr, cfp) */
	__u64 node;   /* next list node (= rb_thread_t *) */
	__u64 head;   /* address of the list head */
	__u64 owner;  /* GVL owner */
	__u32 limit;
	__u32 on_cpu; /* this visit's task was on a CPU (kept here across the walk, see wall_note) */
	__u64 list[3];	 /* the list head's next and prev, the thread count (low half) */
	__u32 list_same; /* the list is as at the last run (wall_quiet) */
	__u32 pad;
	__u64 walk_th, walk_ec; /* the thread wall_visit left to walk, and its EC */
	__u64 walk_tp;		/* and its task's thread pointer (0: no task found) */
	/* a visit's facts, passed through memory (WALL_OPAQUE) */
	__u64 v_weight, v_switches;
	__s64 v_sysnr;
	__u32 v_tid, v_kstate, v_on_cpu, v_state, v_has_task, v_pad;
	struct rp_wall_thread now; /* this visit's view of the thread (reuse) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wall_scratch);
} wall_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RP_WSTAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} wall_stats SEC(".maps");

/* Where the last run stopped and how many threads it visited (the daemon's cursor). */
struct rp_wall_out wall_out;

/* Per Ruby thread, its last visit (reuse of unchanged stacks). The daemon owns the entries: it
 * deletes a process's when it goes, and those of threads not seen for a while (daemon/profile/wall.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RP_WALL_CACHE_ENTRIES);
	__type(key, struct rp_wall_key);
	__type(value, struct rp_wall_thread);
} wall_threads SEC(".maps");

static __always_inline void wstat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&wall_stats, &idx);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline __u64 th_u64(const struct wall_scratch *w, __u32 off)
{
	return *(const __u64 *)(w->th + (off & 0x1f8));
}

static __always_inline __u32 th_u32(const struct wall_scratch *w, __u32 off)
{
	return *(const __u32 *)(w->th + (off & 0x1fc));
}

#define RB_THREAD_RUNNABLE 0
#define RB_THREAD_KILLED   3
/* task->__state bits: __TASK_STOPPED, __TASK_TRACED */
#define TASK_STOPPED_BITS  0xc
/* waiting_reason flags of an M:N I/O wait: io_read, io_write */
#define WR_IO		   0x0a

/* docs/internals/wall-clock.md §3, first matching row; the syscall rows are "blocked_io" here. */
static __always_inline __u32 wall_state(const struct wall_scratch *w, __u64 th, __u32 kstate,
					__u32 on_cpu, bool has_task)
{
	const struct rp_wall_offsets *o = &wall_params.off;
	__u32 status = w->th[o->th_status & 0x1ff] & 3;
	__u64 brb = th_u64(w, o->th_brb), ubf = th_u64(w, o->th_ubf);

	if ((kstate & TASK_STOPPED_BITS) || status == RB_THREAD_KILLED)
		return RP_TSTATE_STOPPED;
	if (brb) {
		if (!ubf)
			return RP_TSTATE_GVL_WAIT; /* syscall over, taking the GVL back */
		if (on_cpu)
			return RP_TSTATE_RUNNING; /* CPU work outside the GVL */
		return RP_TSTATE_BLOCKED_IO;
	}
	if (status == RB_THREAD_RUNNABLE)
		return w->owner == th ? RP_TSTATE_RUNNING : RP_TSTATE_GVL_WAIT;
	if (o->th_nt && o->th_wr && !th_u64(w, o->th_nt) && (th_u32(w, o->th_wr) & WR_IO))
		return RP_TSTATE_BLOCKED_IO;
	/* native_sleep clears ubf once woken, before it takes the GVL back (status still STOPPED) */
	if (!ubf && w->owner != th)
		return RP_TSTATE_GVL_WAIT;
	return RP_TSTATE_SLEEPING;
}

static __always_inline long task_syscall(struct task_struct *t)
{
#if defined(__TARGET_ARCH_x86)
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);

	return regs ? (long)BPF_CORE_READ(regs, orig_ax) : -1;
#else
	return -1;
#endif
}

/*
 * Whether the EC Ruby thread th runs is being run on a CPU right now: th's task is on a CPU and
 * the EC that task runs (its TLS) is th's. Its stack is then changed while it would be read. An
 * M:N thread's native thread runs one Ruby thread at a time (or its scheduler, with no EC).
 */
static __always_inline bool wall_runs_now(const struct rp_proc *proc, struct task_struct *t,
					  __u64 th, __u64 ec, void *ctx)
{
	__u64 tls = 0, back = 0, tp;

	if (!t->on_cpu)
		return false;
#if defined(__TARGET_ARCH_x86)
	tp = t->thread.fsbase;
#elif defined(__TARGET_ARCH_arm64)
	tp = t->thread.uw.tp_value;
#endif
	if (find_ec(proc, tp, &tls, ctx) || !tls)
		return false;
	return tls == ec || (!read_u64(ctx, &back, tls + proc->off.ec_thread_ptr) && back == th);
}

/* Off-CPU time a task is owed samples for (wall_weight), kept with the task. */
struct wall_credit {
	__u64 th;      /* the Ruby thread it ran at the last tick (M:N: its tasks are shared) */
	__u64 runtime; /* its se.sum_exec_runtime then */
	__u64 seen;    /* bpf_ktime_get_ns() then */
	__u64 credit;  /* off-CPU time not yet sampled, scaled to the tick's period (ns) */
	__u32 run;     /* wall_params.run of that tick */
	__u16 slot1;   /* its process's wall_gen slot + 1, for rp_wall_switch (0: none) */
	__u16 ran;     /* it was on a CPU then */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct wall_credit);
} wall_credit SEC(".maps");

/*
 * Per process (its slot), a count of switches in and out of the tasks the runs have seen, and of
 * threads they create: while it stands still nothing of the process ran or stopped, and the
 * daemon skips its tick (docs/internals/wall-clock.md, "Skipped ticks"). Read by the daemon
 * through the mapped .bss, no system call.
 */
__u64 wall_gen[RP_WALL_MAX_PROCS];

/*
 * Set by the daemon for a still process before it sleeps past the next tick; the first switch
 * after clears it and wakes the daemon (a record in wall_wake: its slot) so that the next tick
 * runs. At most one record per slot and arming: RP_WALL_MAX_PROCS fit.
 */
__u32 wall_armed[RP_WALL_MAX_PROCS];

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} wall_wake SEC(".maps");

static __always_inline void wall_bump(struct task_struct *t)
{
	struct wall_credit *c;
	__u32 i;

	/* no task storage at all (nearly every task of the host): not one of ours, no helper */
	if (!t->bpf_storage)
		return;
	c = bpf_task_storage_get(&wall_credit, t, NULL, 0);
	if (!c || !c->slot1)
		return;
	i = c->slot1 - 1;
	if (i >= RP_WALL_MAX_PROCS)
		return;
	__sync_fetch_and_add(&wall_gen[i], 1);
	if (wall_armed[i]) {
		wall_armed[i] = 0;
		if (bpf_ringbuf_output(&wall_wake, &i, sizeof(i), BPF_RB_FORCE_WAKEUP))
			wstat_add(RP_WSTAT_WAKE_LOST, 1);
	}
}

/* Every context switch of the host: a task without task storage (any but a sampled Ruby
 * thread's) costs one pointer test. */
SEC("tp_btf/sched_switch")
int BPF_PROG(rp_wall_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	wall_bump(prev);
	wall_bump(next);
	return 0;
}

/* A sampled Ruby thread made a thread (a task): the next tick runs. */
SEC("tp_btf/task_newtask")
int BPF_PROG(rp_wall_newtask, struct task_struct *task, __u64 clone_flags)
{
	wall_bump(bpf_get_current_task_btf());
	return 0;
}

/* Credit kept at most, in periods: a thread found on a CPU at every tick it is owed some. */
#define WALL_CREDIT_MAX 16

/*
 * The weight of this tick's sample of Ruby thread th (task t), 0 when it is left to the perf
 * samples. Where the perf samples are the process's running ones (RP_PROCF_WALL_RUNNING) they
 * count the time its task is on a CPU, and the walk here must count the rest only, else that
 * time is counted twice. Whether t is on a CPU at this instant would be a biased measure of that
 * rest: the daemon that runs this iterator has just woken up and taken a CPU, often t's. So the
 * time itself is used: each tick adds the share of the time since the last one that t was off a
 * CPU (its sum_exec_runtime did not grow), scaled to a period, and a sample takes the whole
 * periods owed. A thread that sleeps is owed one each tick; one always on a CPU none. A thread
 * on a CPU now is never walked (its stack moves under the walk): what it is owed waits for the
 * next tick it is off, its sample then weighing more than one period.
 */
static __always_inline __u64 wall_weight(const struct rp_proc *proc, struct task_struct *t,
					 __u64 th, __u64 ec, void *ctx)
{
	__u64 period = wall_params.period_ns, now = bpf_ktime_get_ns(), rt, el, run, w;
	struct wall_credit *c;
	bool running;

	if (!(proc->flags & RP_PROCF_WALL_RUNNING) || !period)
		return period;
	running = wall_runs_now(proc, t, th, ec, ctx);
	rt = t->se.sum_exec_runtime;
	c = bpf_task_storage_get(&wall_credit, t, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c) {
		wstat_add(RP_WSTAT_READ_FAILED, 1);
		return running ? 0 : period;
	}
	/* ticks skipped since the last run, which saw it: it neither ran nor stopped meanwhile */
	if (wall_params.skipped && c->th == th && c->seen && c->run + 1 == wall_params.run) {
		el = (__u64)wall_params.skipped * period;
		c->seen += el;
		if (c->ran)
			c->runtime = c->runtime + el < rt ? c->runtime + el : rt;
	}
	if (c->th != th || !c->seen || rt < c->runtime || now <= c->seen) {
		/* first seen (or another Ruby thread on this task): what it does now decides */
		c->credit = running ? 0 : period;
	} else {
		el = now - c->seen;
		run = rt - c->runtime;
		if (run > el)
			run = el;
		/* in 1/1024ths of the interval: no overflow for any interval or period */
		c->credit += period * ((el - run) * 1024 / el) / 1024;
	}
	c->th = th;
	c->runtime = rt;
	c->seen = now;
	c->run = wall_params.run;
	c->ran = running;
	c->slot1 = (__u16)(wall_params.slot + 1);
	if (c->credit > WALL_CREDIT_MAX * period) {
		wstat_add(RP_WSTAT_CREDIT_CUT, 1);
		c->credit = WALL_CREDIT_MAX * period;
	}
	if (running || c->credit < period)
		return 0;
	w = c->credit / period * period;
	c->credit -= w;
	return w;
}

/* ---- reuse of an unchanged thread's stack (docs/internals/wall-clock.md, §5) ---- */

/*
 * The fields whose change means the thread may have moved: its header's state fields and its EC
 * (a fiber switch). With the task's switch count, into w->now; the EC's cfp is kept for a walk
 * (not compared: reuse is decided before the EC is read, saving one copy per reused thread).
 */
static __always_inline void wall_fingerprint(struct wall_scratch *w, __u64 ec)
{
	const struct rp_wall_offsets *o = &wall_params.off;

	w->now.ec = ec;
	w->now.next = th_u64(w, 0);
	w->now.cfp = 0; /* known only after the EC is read (for a walk) */
	w->now.hdr[0] = w->th[o->th_status & 0x1ff];
	w->now.hdr[1] = th_u64(w, o->th_brb);
	w->now.hdr[2] = th_u64(w, o->th_ubf);
	w->now.hdr[3] = th_u64(w, o->th_lm);
	w->now.hdr[4] = o->th_nt ? th_u64(w, o->th_nt) : 0;
	w->now.hdr[5] = o->th_wr ? th_u32(w, o->th_wr) : 0;
}

/*
 * Whether the thread's stack is the one its entry's sample carried: its own task (a tid: not
 * 2.7, not a parked M:N thread) has not been switched in since (a task is switched out, and
 * counted, before it can be seen off the CPU again) and is not on a CPU now, and nothing of its
 * header changed (its EC pointer included). A stack walked while the thread ran is never reused (valid = 0).
 */
static __always_inline bool wall_unchanged(const struct rp_wall_thread *e,
					   const struct wall_scratch *w, bool has_task,
					   __u32 on_cpu)
{
	const struct rp_wall_thread *n = &w->now;

	if (!wall_params.reuse || !e->valid || !has_task || on_cpu || !n->tid ||
	    e->reuse >= RP_WALL_REUSE_MAX)
		return false;
	return e->tid == n->tid && e->switches == n->switches && e->ec == n->ec &&
	       e->hdr[0] == n->hdr[0] && e->hdr[1] == n->hdr[1] && e->hdr[2] == n->hdr[2] &&
	       e->hdr[3] == n->hdr[3] && e->hdr[4] == n->hdr[4] && e->hdr[5] == n->hdr[5];
}

/*
 * The runs a sample stands for: one while every thread is visited every run; with a cursor (more
 * threads than max_threads), the runs since this thread's last visit (the lap for a thread not
 * seen before), so that a thread visited every k-th run carries k times its weight.
 */
static __always_inline __u64 wall_lap_runs(const struct rp_wall_thread *e)
{
	__u32 lag = wall_params.lap;

	if (wall_params.lap <= 1)
		return 1;
	if (e && wall_params.run > e->run)
		lag = wall_params.run - e->run;
	if (lag > RP_WALL_LAG_MAX)
		lag = RP_WALL_LAG_MAX;
	return lag ? lag : 1;
}

/*
 * Sends the thread's pending visits as one record, "the same stack as sample e->seq", with their
 * state, weight and count (no frames); the scratch header is rewritten (the caller fills it for
 * its own record afterwards).
 */
static __always_inline void wall_send_pending(struct rp_scratch *s, struct rp_wall_thread *e,
					      __u64 th)
{
	s->sample.hdr.version = RP_REC_VERSION;
	s->sample.hdr.kind = RP_REC_STACK;
	s->sample.hdr.state = (__u8)e->pend_state;
	s->sample.hdr.wunit = RP_WEIGHT_NS;
	s->sample.hdr.size = RP_SAMPLE_HDR_SIZE;
	s->sample.hdr.weight = e->pend_weight;
	s->sample.hdr.time_ns = bpf_ktime_get_ns();
	s->sample.hdr.pid = wall_params.tgid;
	s->sample.hdr.tid = e->tid;
	s->sample.cpu = wall_cpu;
	s->sample.seq = s->seq++;
	s->sample.chunk = 0;
	s->sample.gc_mode = 0;
	s->sample.ruby_thread = th;
	s->sample.syscall = e->pend_syscall;
	s->sample.flags = RP_SAMPLE_SAME | RP_SAMPLE_LAST;
	s->sample.nframes = 0;
	s->sample.first = 0;
	s->sample.nslots = 0;
	s->sample.base_seq = e->seq;
	s->sample.visits = e->pend_visits;
	if (bpf_ringbuf_output(&samples, &s->sample, RP_SAMPLE_HDR_SIZE, rb_flags()))
		stat_add(RP_STAT_RB_DROPPED, 1);
	else
		wstat_add(RP_WSTAT_PEND_SENT, 1);
	e->pend_visits = 0;
	e->pend_weight = 0;
}

/* After a walk: the thread's entry says what was seen and whether the reader got it whole. */
static __always_inline void wall_note(struct rp_wall_key *k, struct wall_scratch *w)
{
	__u32 zero = 0;
	struct rp_scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct rp_wall_thread *e = bpf_map_lookup_elem(&wall_threads, k);

	w->now.run = wall_params.run;
	w->now.reuse = 0;
	w->now.pend_visits = 0; /* sent before the walk */
	w->now.pend_weight = 0;
	/* rp_sample_ec makes this sample the base exactly when it was sent whole */
	w->now.valid = s && s->base_valid && s->base_seq == w->now.seq && !w->on_cpu;
	if (e) {
		*e = w->now;
		return;
	}
	if (bpf_map_update_elem(&wall_threads, k, &w->now, BPF_NOEXIST))
		wstat_add(RP_WSTAT_CACHE_FULL, 1);
}

/*
 * Whether th's header need not be copied this visit (a parked thread): no thread was added to or
 * removed from the list since the last run (its head and count are the same), the thread has a
 * reusable entry with its successor, and its task, found by the entry's tid, has not been
 * switched in since and sleeps in the same state. Nothing of the thread ran, so the header fields
 * it writes are the entry's; another thread writes its status only to wake it, and a woken task
 * is runnable (another __state) before it runs. Then w->th gets those fields back, as the copy
 * would have given them, and the visit goes on as any other: its stack is reused (wall_unchanged
 * holds; a visit due to be walked again, at RP_WALL_REUSE_MAX, is not quiet), so its name and
 * syscall, which only a walked sample carries or which the task cannot have changed, are not read
 * again. Returns the task, referenced, for the visit to use (NULL: not quiet).
 */
static __always_inline struct task_struct *wall_quiet(struct wall_scratch *w,
						      const struct rp_wall_thread *e, __u32 ktgid)
{
	const struct rp_wall_offsets *o = &wall_params.off;
	struct task_struct *t;
	bool quiet;

	if (!w->list_same || !wall_params.reuse || !e || !e->valid || !e->tid || !e->next ||
	    e->reuse + 1 >= RP_WALL_REUSE_MAX || !(o->th_tid || o->th_nt))
		return NULL;
	t = wall_task(e->tid);
	if (!t)
		return NULL;
	quiet = t->tgid == ktgid && !t->on_cpu && t->nvcsw + t->nivcsw == e->switches &&
		t->__state == e->kstate;
	if (!quiet) {
		bpf_task_release(t);
		return NULL;
	}
	*(__u64 *)(w->th + 0) = e->next;
	*(__u64 *)(w->th + (o->th_ec & 0x1f8)) = e->ec;
	w->th[o->th_status & 0x1ff] = (__u8)e->hdr[0];
	*(__u64 *)(w->th + (o->th_brb & 0x1f8)) = e->hdr[1];
	*(__u64 *)(w->th + (o->th_ubf & 0x1f8)) = e->hdr[2];
	*(__u64 *)(w->th + (o->th_lm & 0x1f8)) = e->hdr[3];
	if (o->th_nt)
		*(__u64 *)(w->th + (o->th_nt & 0x1f8)) = e->hdr[4];
	if (o->th_wr)
		*(__u32 *)(w->th + (o->th_wr & 0x1fc)) = (__u32)e->hdr[5];
	if (o->th_tid)
		*(__u32 *)(w->th + (o->th_tid & 0x1fc)) = e->tid;
	wstat_add(RP_WSTAT_QUIET, 1);
	return t;
}

/* One Ruby thread: its header, state, task, and stack (or "the same stack as last time"). */
/*
 * var, passed through the scratch map: the verifier does not track what a map holds, so the value
 * read back is one it knows nothing of. A visit's paths (a quiet thread or not, with its task or
 * not, each state) leave each fact with a value of their own; through memory, the paths after it
 * are verified once for all, not once per combination of those values.
 */
#define WALL_OPAQUE(w, field, var)                                                                 \
	do {                                                                                       \
		(w)->field = (var);                                                                \
		(var) = *(volatile __typeof__((w)->field) *)&(w)->field;                           \
	} while (0)

/* What wall_visit tells wall_thread: the bpf_loop's answer (go on, stop), or walk the stack. */
#define WALL_NEXT 0
#define WALL_STOP 1
#define WALL_WALK 2

/*
 * Visit i of the run: the thread at w->node, its task, state, weight and reuse. A function of its
 * own, not inlined: what its paths leave in registers and on its stack (an entry or none, a task,
 * its states) is gone when it returns, so that the stack walk after it is verified for one caller
 * state, not once for each of its paths (which took the verifier past a million instructions).
 */
static __noinline long wall_visit(__u32 i, void *ctx)
{
	const struct rp_wall_offsets *o = &wall_params.off;
	struct task_struct *t = NULL;
	__u32 zero = 0, tgid = wall_params.tgid, tid = 0, kstate = 0, on_cpu = 0, state;
	__u32 ktgid = ((struct rp_wall_rctx *)ctx)->ktgid;
	struct rp_wall_key key = {.tgid = wall_params.tgid};
	struct rp_wall_thread *e;
	struct wall_scratch *w;
	struct rp_scratch *s;
	struct rp_proc *proc;
	__u64 th, ec, nt, switches = 0;
	__u64 weight = wall_params.period_ns;
	bool has_task = false, quiet = false, reuse;
	__u32 syscall;
	long sysnr = -1;

	w = bpf_map_lookup_elem(&wall_scratch, &zero);
	s = bpf_map_lookup_elem(&scratch, &zero);
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!w || !s || !proc)
		return 1;
	th = w->node;
	if (!th || th == w->head) {
		wall_out.next = 0; /* the end of the list: the next run starts at the head */
		/* a whole list, from the head: every thread's entry has its successor as of this
		 * run's head and count (with a cursor, or ended early, no next run goes quiet) */
		if (wall_out.wrapped) {
			wall_out.list[0] = w->list[0];
			wall_out.list[1] = w->list[1];
			wall_out.list[2] = w->list[2];
		}
		return 1;
	}
	if (i >= w->limit) {
		wstat_add(RP_WSTAT_CUT, 1);
		wall_out.next = th; /* the next run continues here */
		return 1;
	}
	key.th = th;
	e = bpf_map_lookup_elem(&wall_threads, &key);
	t = wall_quiet(w, e, ktgid);
	if (t) {
		/* the entry's header, tid and syscall: the task did not run since */
		quiet = true;
		tid = e->tid;
		sysnr = (long)e->pend_syscall - 1;
	} else if (RP_READ_USER(ctx, w->th, WALL_TH_BYTES, (const void *)th)) {
		wstat_add(RP_WSTAT_READ_FAILED, 1);
		return 1;
	}
	w->node = th_u64(w, 0); /* the list node is the thread's first field */
	ec = th_u64(w, o->th_ec);
	if (!ec) {
		if (t)
			bpf_task_release(t);
		wstat_add(RP_WSTAT_BAD_NODE, 1);
		return 1;
	}
	if (quiet) {
		/* tid and task found above */
	} else if (o->th_nt) {
		/* 3.2+: the tid is in the native thread, read again only when th->nt changed (one
		 * copy less per visit). Should an ended thread's th and nt both come back at the
		 * same addresses for a new thread, the old tid finds no task: that visit goes
		 * without one (walked, no kernel state) and the next reads the new tid. */
		nt = th_u64(w, o->th_nt);
		if (nt && e && e->tid && e->hdr[4] == nt)
			tid = e->tid;
		else if (nt && RP_READ_USER(ctx, &tid, sizeof(tid), (const void *)(nt + o->nt_tid)))
			tid = 0;
	} else if (o->th_tid) {
		tid = th_u32(w, o->th_tid);
	}

	WALL_OPAQUE(w, v_tid, tid);
	WALL_OPAQUE(w, v_sysnr, sysnr);
	__builtin_memset(s->sample.comm, 0, sizeof(s->sample.comm));
	w->walk_tp = 0;
	/* The tid is the process's own (its pid namespace), looked up in the daemon's: the task
	 * is used only if it is in this process, i.e. the namespaces agree (the process is in
	 * the daemon's, as a rule). */
	if (!t && tid)
		t = wall_task(tid);
	if (t) {
		/* first: time the perf samples count is not counted here */
		if (t->tgid == ktgid)
			weight = wall_weight(proc, t, th, ec, ctx);
		if (t->tgid == ktgid && weight) {
			has_task = true;
			kstate = t->__state;
			on_cpu = t->on_cpu;
			switches = t->nvcsw + t->nivcsw;
#if defined(__TARGET_ARCH_x86)
			w->walk_tp = t->thread.fsbase;
#elif defined(__TARGET_ARCH_arm64)
			w->walk_tp = t->thread.uw.tp_value;
#endif
			/* the name, for a walked sample; the syscall it sleeps in (-1: none, in
			 * user space; stale while on a CPU) */
			if (!quiet) {
				bpf_probe_read_kernel_str(s->sample.comm, sizeof(s->sample.comm),
							  t->comm);
				if (!on_cpu)
					sysnr = task_syscall(t);
			}
		}
		bpf_task_release(t);
	}
	/* Ruby 2.7 gives no tid (no task), but its thread's pthread_t, which glibc makes the thread
	 * pointer (discovery checks each EC's against it): where the thread's TLS is */
	if (!w->walk_tp && !quiet && !proc->off.nt_thread_id && proc->off.th_thread_id)
		w->walk_tp = th_u64(w, proc->off.th_thread_id);
	if (!weight) {
		wstat_add(RP_WSTAT_ON_CPU, 1);
		return 0;
	}
	if (!has_task) {
		tid = 0;
		wall_out.untasked++;
	}
	WALL_OPAQUE(w, v_weight, weight);
	WALL_OPAQUE(w, v_switches, switches);
	WALL_OPAQUE(w, v_sysnr, sysnr);
	WALL_OPAQUE(w, v_tid, tid);
	WALL_OPAQUE(w, v_kstate, kstate);
	WALL_OPAQUE(w, v_on_cpu, on_cpu);
	WALL_OPAQUE(w, v_has_task, has_task);
	state = wall_state(w, th, kstate, on_cpu, has_task);
	WALL_OPAQUE(w, v_state, state);

	wall_fingerprint(w, ec);
	w->now.tid = tid;
	w->now.switches = switches;
	w->now.kstate = kstate;
	if (!e)
		wstat_add(RP_WSTAT_CACHE_MISS, 1);
	syscall = sysnr >= 0 && state == RP_TSTATE_BLOCKED_IO ? (__u32)sysnr + 1 : 0;
	weight *= wall_lap_runs(e);
	if (e) {
		reuse = wall_unchanged(e, w, has_task, on_cpu);
		/* pending visits of another state, or of the stack about to be walked again */
		if (e->pend_visits &&
		    (!reuse || e->pend_state != state || e->pend_syscall != syscall))
			wall_send_pending(s, e, th);
		if (reuse) {
			/* no EC read: the live task's unchanged switch count proves this node is
			 * the thread walked before, and that nothing of it ran since */
			e->pend_visits++;
			e->pend_weight += weight;
			e->pend_state = state;
			e->pend_syscall = syscall;
			e->next = w->now.next;
			e->kstate = kstate;
			e->run = wall_params.run;
			e->reuse++;
			wstat_add(RP_WSTAT_REUSED, 1);
			wstat_add(RP_WSTAT_THREADS, 1);
			wall_out.walked++;
			return 0;
		}
	}

	s->sample.hdr.version = RP_REC_VERSION;
	s->sample.hdr.kind = RP_REC_STACK;
	s->sample.hdr.state = state;
	s->sample.hdr.wunit = RP_WEIGHT_NS;
	s->sample.hdr.weight = weight;
	s->sample.hdr.time_ns = bpf_ktime_get_ns();
	s->sample.hdr.pid = tgid;
	s->sample.hdr.tid = tid;
	s->sample.cpu = wall_cpu;
	s->sample.seq = s->seq++;
	s->sample.chunk = 0;
	s->sample.gc_mode = 0;
	s->sample.ruby_thread = th;
	s->sample.syscall = syscall;
	/* a thread being created or freed under us ends the walk */
	if (RP_READ_USER(ctx, w->ec, sizeof(w->ec), (const void *)ec) ||
	    w->ec[(proc->off.ec_thread_ptr / 8) & 7] != th) {
		wstat_add(RP_WSTAT_BAD_NODE, 1);
		return 1;
	}
	w->now.cfp = w->ec[(proc->off.ec_cfp / 8) & 7];
	wstat_add(RP_WSTAT_THREADS, 1);
	wall_out.walked++;
	/* What wall_note needs after the walk is kept in the map, not in registers: the walk's
	 * callback is verified once per distinct caller state, and each value live across it (the
	 * entry or its absence, on_cpu) would multiply those states past the verifier's limit. */
	w->now.seq = s->sample.seq;
	w->now.pend_state = state; /* what a quiet visit takes as its syscall (wall_quiet) */
	w->now.pend_syscall = syscall;
	w->on_cpu = on_cpu;
	w->walk_th = th;
	w->walk_ec = ec;
	return WALL_WALK;
}

static long wall_thread(__u32 i, void *ctx)
{
	struct rp_wall_key key = {.tgid = wall_params.tgid};
	__u32 zero = 0, tgid = wall_params.tgid;
	struct wall_scratch *w;
	struct rp_scratch *s;
	struct rp_proc *proc;
	long r;

	r = wall_visit(i, ctx);
	if (r != WALL_WALK)
		return r == WALL_NEXT ? 0 : 1;
	w = bpf_map_lookup_elem(&wall_scratch, &zero);
	s = bpf_map_lookup_elem(&scratch, &zero);
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!w || !s || !proc)
		return 1;
	key.th = w->walk_th;
	/* the thread's OpenTelemetry context, read from its own TLS (its task's thread pointer) */
	if (w->walk_tp)
		rp_sample_tctx(s, proc, w->walk_tp, ctx);
	rp_sample_ec(s, proc, w->walk_ec, 0, ctx);
	wall_note(&key, w);
	return 0;
}

/*
 * The ticks skipped since the last run (docs/internals/wall-clock.md, "Skipped ticks"), given to
 * every thread that run saw off a CPU with a whole stack, before this run's visits and whether the
 * thread is still there: it stayed so all along (no switch), with that stack and state, and a
 * thread that ended since did so after them. They join its pending visits.
 */
static long wall_skipped(struct bpf_map *map, struct rp_wall_key *k, struct rp_wall_thread *e,
			 void *ctx)
{
	__u32 n = wall_params.skipped - wall_params.skipped_taken;

	if (k->tgid != wall_params.tgid || !e->valid || e->run + 1 != wall_params.run ||
	    wall_params.skipped <= wall_params.skipped_taken)
		return 0;
	e->pend_visits += n;
	e->pend_weight += (__u64)n * wall_params.period_ns;
	wstat_add(RP_WSTAT_SKIPPED, n);
	return 0;
}

/* One run: the thread list of process wall_params.tgid, walked on its main task. */
static __always_inline void wall_run(struct task_struct *task)
{
	__u64 t0 = bpf_ktime_get_ns(), ec = 0, th = 0, anchor = 0, tp;
	__u32 zero = 0, tgid = wall_params.tgid, ntgid, ntid;
	struct rp_wall_rctx rc;
	struct wall_scratch *w;
	struct rp_proc *proc;

	/* the main task of process tgid, as the daemon knows it (the kernel found it by that pid
	 * in the daemon's namespace: another task here is a bug, counted) */
	if (!pidns_ids(task, &ntgid, &ntid) || ntid != tgid || ntgid != tgid) {
		wstat_add(RP_WSTAT_NO_TASK, 1);
		return;
	}
	proc = bpf_map_lookup_elem(&procs, &tgid);
	if (!proc) {
		wstat_add(RP_WSTAT_NO_PROC, 1);
		return;
	}
	if (proc->start_time && proc->start_time != task->group_leader->start_time) {
		stat_add(RP_STAT_STALE_PID, 1);
		return;
	}
	w = bpf_map_lookup_elem(&wall_scratch, &zero);
	if (!w)
		return;
	rc.task = task;
	rc.ktgid = task->tgid;
#if defined(__TARGET_ARCH_x86)
	tp = task->thread.fsbase;
#elif defined(__TARGET_ARCH_arm64)
	tp = task->thread.uw.tp_value;
#endif
	wall_out.next = 0;
	wall_out.walked = 0;
	wall_out.untasked = 0;
	wall_out.listed = 0;
	wall_out.wrapped = 1;
	wall_out.anchor = 0;
	wall_out.list[0] = 0;
	/* the anchor of an earlier run, or found from the main thread's EC (three reads) */
	anchor = wall_params.anchor;
	if (!anchor && (find_ec(proc, tp, &ec, &rc) || !ec ||
			read_u64(&rc, &th, ec + proc->off.ec_thread_ptr) || !th ||
			read_u64(&rc, &anchor, th + wall_params.off.th_anchor) || !anchor)) {
		wstat_add(RP_WSTAT_READ_FAILED, 1);
		goto out;
	}
	w->head = anchor + wall_params.off.list_head;
	w->owner = 0;
	w->node = 0;
	w->limit = wall_params.max_threads;
	if (read_u64(&rc, &w->owner, anchor + wall_params.off.owner) ||
	    RP_READ_USER(&rc, w->list, sizeof(w->list), (const void *)w->head)) {
		wstat_add(RP_WSTAT_READ_FAILED, 1);
		goto out;
	}
	/* the head's next and prev, and the count after them (3.x threads.cnt; its neighbour
	 * blocking_cnt changes with every blocking call: left out) */
	w->list[2] &= 0xffffffffULL;
	w->node = w->list[0];
	w->list_same = w->list[0] && w->list[0] == wall_params.list[0] &&
		       w->list[1] == wall_params.list[1] && w->list[2] == wall_params.list[2];
	wall_out.anchor = anchor;
	/* More threads than one run visits: continue where the last run stopped. A node freed
	 * since fails the EC check and ends the run; the next one starts at the head again. */
	if (wall_params.cursor && wall_params.cursor != w->head) {
		w->node = wall_params.cursor;
		wall_out.wrapped = 0;
		wstat_add(RP_WSTAT_CURSOR, 1);
	}
	wstat_add(RP_WSTAT_RUNS, 1);
	if (wall_params.skipped > wall_params.skipped_taken)
		bpf_for_each_map_elem(&wall_threads, wall_skipped, NULL, 0);
	wall_out.listed = 1;
	bpf_loop(RP_MAX_WALL_THREADS + 1, wall_thread, &rc, 0);
out:
	wstat_add(RP_WSTAT_RUN_NS, bpf_ktime_get_ns() - t0);
}

/*
 * How the daemon runs it on 6.2+: a sleepable syscall program (BPF_PROG_RUN), one system call per
 * run, that finds the process's main task itself. An iterator run is three (BPF_ITER_CREATE, a
 * read, a close) with a file and its seq_file buffer made and freed each time, ≈ 45 µs a run in
 * this VM (docs/internals/wall-clock.md, "Cost").
 */
SEC("syscall")
int rp_wall_run(void *ctx)
{
	struct task_struct *task;

	task = wall_task(wall_params.tgid);
	if (!task) {
		wstat_add(RP_WSTAT_NO_TASK, 1);
		return 0;
	}
	wall_run(task);
	bpf_task_release(task);
	return 0;
}

/*
 * On 6.1 (no bpf_task_from_pid), and in a pid namespace on a kernel without bpf_task_from_vpid:
 * a task iterator filtered to the main task (link_info.task.tid, a pid of the namespace of the
 * daemon that makes the iterator), created and read once per run.
 */
SEC("iter.s/task")
int rp_wall(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (task)
		wall_run(task);
	return 0;
}
