// SPDX-License-Identifier: GPL-2.0-only
/* wall.c - wall-clock mode: the sleepable thread-list iterator, run per tick and process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "profile/wall.h"
#include "ruby/offsets.h"
#include "sample/sampler.h"
#include "sample/wallcopy.h"
#include "wall.skel.h"

/* Pid-filtered task iterators (bpf_iter_link_info.task.pid) came with 6.1. */
#define WALL_MIN_MAJOR	6
#define WALL_MIN_MINOR	1
/* bpf_task_from_pid, how the iterator finds a thread's task, came with 6.2. */
#define WALL_TASK_MAJOR 6
#define WALL_TASK_MINOR 2
/* In a pid namespace, bpf_task_from_vpid (the pid in the caller's namespace): 6.13. */
#define WALL_VPID_MAJOR 6
#define WALL_VPID_MINOR 13

/* An iterator run writes nothing (records go to the ring buffer): one read ends it. */
#define WALL_READ_BYTES 64

struct wall_proc {
	pid_t pid;
	struct bpf_link *link;
	struct rp_wall_offsets off;
	/* the cursor (docs/internals/wall-clock.md, "Reuse and the cursor") */
	uint64_t cursor;   /* node the next run starts at (0: the head) */
	uint32_t runs;	   /* runs made */
	uint32_t lap;	   /* runs the last complete lap of the list took (1: all in one) */
	uint32_t lap_runs; /* runs of the lap under way */
	uint64_t anchor;   /* the list's anchor the last run found (0: find it again) */
	uint64_t list[3];  /* the list's head and count the last run saw (rp_wall_params.list) */
	/* skipped ticks (docs/internals/wall-clock.md, "Skipped ticks") */
	uint64_t gen;	  /* its wall_gen before the last run */
	uint32_t skipped; /* ticks skipped since the last run */
	uint32_t taken;	  /* of those, the ticks whose visits wall_flush sent */
	bool skippable;	  /* the last run saw every thread, each with a task of its own */
};

/* A run at least every this many ticks, however still the process is. */
#define WALL_SKIP_MAX 15

/* The daemon's side of stack reuse (daemon/sample/wallcopy.c): as many copies as the BPF map has entries;
 * a sweep of both every WALL_SWEEP_TICKS ticks drops threads not seen for WALL_STALE_RUNS laps. */
#define WALL_COPIES	 RP_WALL_CACHE_ENTRIES
#define WALL_SWEEP_TICKS 512
#define WALL_STALE_RUNS	 (2 * RP_WALL_REUSE_MAX)

struct wall {
	struct wall_bpf *skel;
	struct wall_proc *procs;
	size_t nprocs;
	int64_t period_ns, next_ns;
	struct wall_counters c;
	/* the kernel has bpf_task_from_pid (6.2+), in a pid namespace bpf_task_from_vpid (6.13+):
	 * the iterator finds tasks */
	bool find_tasks;
	bool syscall_run; /* runs are BPF_PROG_RUN of rp_wall_run, not iterator links (6.2+) */
	bool skip;	  /* ticks of a still process are skipped (the switch hooks are attached) */
	bool sleep_ok;	  /* and the daemon sleeps through them (wall_wake is read with samples) */
	int64_t due;	  /* when wall_tick next has work: next_ns, or later while all are still */
	struct bpf_link *hooks[2]; /* rp_wall_switch, rp_wall_newtask */
	bool reuse;
	uint64_t ticks;
	struct wallcopy *copies; /* each Ruby thread's last walked stack */
	struct sampler *smp;	 /* where the pending visits of ended threads go (send_pending) */
	uint32_t extra_cpu;	 /* the sampler's slot of wall records */
};

/* docs/internals/wall-clock.md §1.2 - §1.4 (x86_64). 3.2 is computed only (not validated live). */
struct wall_row {
	int major, minor;
	struct rp_wall_offsets off;
};

#define WALL_OFF_3_3                                                                               \
	{                                                                                          \
		.th_anchor = 24, .list_head = 256, .owner = 328, .th_ec = 48, .th_status = 240,    \
		.th_brb = 248, .th_ubf = 328, .th_lm = 344, .th_nt = 40, .nt_tid = 24,             \
		.th_wr = 136                                                                       \
	}

static const struct wall_row wall_rows[] = {
	{2,
	 7,
	 {.th_anchor = 24, /* th->vm */
	  .list_head = 312,
	  .owner = 8, /* vm->gvl.owner */
	  .th_ec = 32,
	  .th_status = 80,
	  .th_brb = 152,
	  .th_ubf = 232,
	  .th_lm = 248}},
	{3,
	 1,
	 {.th_anchor = 24, /* th->ractor */
	  .list_head = 304,
	  .owner = 336,
	  .th_ec = 40,
	  .th_status = 92,
	  .th_brb = 168,
	  .th_ubf = 248,
	  .th_lm = 264,
	  .th_tid = 88}},
	{3,
	 2,
	 {.th_anchor = 24,
	  .list_head = 304,
	  .owner = 336,
	  .th_ec = 48,
	  .th_status = 112,
	  .th_brb = 120,
	  .th_ubf = 200,
	  .th_lm = 216,
	  .th_nt = 40,
	  .nt_tid = 16}},
	{3, 3, WALL_OFF_3_3},
	/* 3.4 keeps 3.3.8's offsets in every field read here (§1.2 - §1.4) */
	{3, 4, WALL_OFF_3_3},
};

const char *wall_state_name(unsigned int state)
{
	static const char *const names[] = {
		[RP_TSTATE_RUNNING] = "running",   [RP_TSTATE_GVL_WAIT] = "gvl_wait",
		[RP_TSTATE_SLEEPING] = "sleeping", [RP_TSTATE_BLOCKED_IO] = "blocked_io",
		[RP_TSTATE_STOPPED] = "stopped",   [RP_TSTATE_UNKNOWN] = "unknown",
	};

	if (state >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[state];
}

const char *wall_syscall_name(uint32_t syscall)
{
	/* x86_64 numbers of the calls a Ruby thread blocks in (arch/x86/entry/syscalls) */
	static const struct {
		uint32_t nr;
		const char *name;
	} calls[] = {
		{0, "read"},	     {1, "write"},	   {7, "poll"},
		{17, "pread64"},     {18, "pwrite64"},	   {19, "readv"},
		{20, "writev"},	     {23, "select"},	   {35, "nanosleep"},
		{42, "connect"},     {43, "accept"},	   {44, "sendto"},
		{45, "recvfrom"},    {46, "sendmsg"},	   {47, "recvmsg"},
		{61, "wait4"},	     {202, "futex"},	   {230, "clock_nanosleep"},
		{232, "epoll_wait"}, {247, "waitid"},	   {270, "pselect6"},
		{271, "ppoll"},	     {281, "epoll_pwait"}, {288, "accept4"},
		{299, "recvmmsg"},   {307, "sendmmsg"},	   {441, "epoll_pwait2"},
	};
	size_t i;

	if (!syscall)
		return NULL;
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		if (calls[i].nr == syscall - 1)
			return calls[i].name;
	}
	return "other";
}

int wall_kernel_at_least(const char *release, int major, int minor)
{
	int ma = 0, mi = 0;

	if (sscanf(release, "%d.%d", &ma, &mi) != 2)
		return 0;
	return ma > major || (ma == major && mi >= minor);
}

/* Opens and loads the wall object, its maps shared with the sampler's. 0 or -errno (why says). */
static int load_object(struct wall *w, const struct sampler_maps *m, char *why, size_t whylen)
{
	int err;

	wall_bpf__destroy(w->skel);
	w->skel = wall_bpf__open();
	if (!w->skel) {
		err = -errno;
		snprintf(why, whylen, "cannot open the wall-clock BPF object: %s", strerror(-err));
		return err;
	}
	w->skel->rodata->max_frames = m->max_frames;
	w->skel->rodata->slot_blocks = m->slot_blocks;
	w->skel->rodata->rb_wakeup_bytes = m->rb_wakeup_bytes;
	w->skel->rodata->wall_cpu = m->extra_cpu;
	w->skel->rodata->pidns_ino = m->pidns_ino;
	w->skel->bss->pidns_level = m->pidns_level;
	/* One run at a time (the daemon's thread), sleepable hence movable between CPUs while
	 * it waits for a page: one scratch space, not one per CPU. */
	err = bpf_map__set_type(w->skel->maps.scratch, BPF_MAP_TYPE_ARRAY);
	if (!err)
		err = bpf_map__set_max_entries(w->skel->maps.slots,
					       m->slot_blocks * (m->extra_cpu + 1));
	if (!err)
		err = bpf_map__reuse_fd(w->skel->maps.procs, m->procs);
	if (!err)
		err = bpf_map__reuse_fd(w->skel->maps.samples, m->samples);
	if (!err)
		err = bpf_map__reuse_fd(w->skel->maps.stats, m->stats);
	/* the one way of running it that this kernel has (the other is not verified) */
	if (!err)
		err = bpf_program__set_autoload(w->skel->progs.rp_wall_run, w->syscall_run);
	if (!err)
		err = bpf_program__set_autoload(w->skel->progs.rp_wall, !w->syscall_run);
	if (!err)
		err = bpf_program__set_autoload(w->skel->progs.rp_wall_switch, w->skip);
	if (!err)
		err = bpf_program__set_autoload(w->skel->progs.rp_wall_newtask, w->skip);
	if (err) {
		snprintf(why, whylen, "cannot set up the wall-clock maps: %s", strerror(-err));
		return err;
	}
	err = wall_bpf__load(w->skel);
	if (!err)
		sampler_log_verified(w->skel->obj);
	if (err) {
		if (w->syscall_run)
			snprintf(why, whylen,
				 "cannot load the wall-clock syscall program (needs kernel "
				 "%d.%d+): %s",
				 WALL_TASK_MAJOR, WALL_TASK_MINOR, strerror(-err));
		else
			snprintf(
				why, whylen,
				"cannot load the sleepable task iterator (needs kernel %d.%d+): %s",
				WALL_MIN_MAJOR, WALL_MIN_MINOR, strerror(-err));
		return -ENOTSUP;
	}
	return 0;
}

struct wall *wall__new(struct sampler *smp, unsigned int frequency, char *why, size_t whylen)
{
	const char *reuse_env, *iter_env, *skip_env, *sleep_env;
	struct sampler_maps m;
	struct utsname u;
	struct wall *w;
	int err;

	why[0] = '\0';
	if (uname(&u))
		u.release[0] = '\0'; /* unknown: assumed new enough, the load tells */
	if (u.release[0] && !wall_kernel_at_least(u.release, WALL_MIN_MAJOR, WALL_MIN_MINOR)) {
		snprintf(why, whylen, "kernel %s is older than %d.%d (pid-filtered task iterators)",
			 u.release, WALL_MIN_MAJOR, WALL_MIN_MINOR);
		errno = ENOTSUP;
		return NULL;
	}
	err = sampler_shared_maps(smp, &m);
	if (err) {
		snprintf(why, whylen, "no BPF object to share maps with");
		errno = -err;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->find_tasks =
		!u.release[0] ||
		(m.pidns_ino ? wall_kernel_at_least(u.release, WALL_VPID_MAJOR, WALL_VPID_MINOR)
			     : wall_kernel_at_least(u.release, WALL_TASK_MAJOR, WALL_TASK_MINOR));
	w->procs = calloc(WALL_MAX_PROCS, sizeof(*w->procs));
	w->copies = wallcopy__new(WALL_COPIES);
	/* RP_WALL_REUSE=0: walk every thread every tick (the bench's "before"; a diagnosis) */
	reuse_env = getenv("RP_WALL_REUSE");
	w->reuse = !reuse_env || strcmp(reuse_env, "0") != 0;
	/* RP_WALL_ITER=1: run the 6.1 way (an iterator per process) on a newer kernel too (tests) */
	iter_env = getenv("RP_WALL_ITER");
	w->syscall_run = w->find_tasks && !(iter_env && strcmp(iter_env, "1") == 0);
	if (!w->procs || !w->copies) {
		err = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto cleanup;
	}
	/* RP_WALL_SKIP=0: run every tick even while nothing of a process ran (the bench's "before") */
	skip_env = getenv("RP_WALL_SKIP");
	w->skip = w->syscall_run && w->reuse && !(skip_env && strcmp(skip_env, "0") == 0);
	err = load_object(w, &m, why, whylen);
	if (err && w->skip) {
		/* a kernel that refuses the switch hooks: every tick runs */
		w->skip = false;
		err = load_object(w, &m, why, whylen);
	}
	if (err && w->syscall_run) {
		/* a kernel whose syscall programs lack a helper the run needs: the iterator */
		w->syscall_run = false;
		err = load_object(w, &m, why, whylen);
	}
	if (err)
		goto cleanup;
	if (w->skip) {
		w->hooks[0] = bpf_program__attach(w->skel->progs.rp_wall_switch);
		w->hooks[1] =
			w->hooks[0] ? bpf_program__attach(w->skel->progs.rp_wall_newtask) : NULL;
		if (!w->hooks[1]) {
			bpf_link__destroy(w->hooks[0]);
			w->hooks[0] = NULL;
			w->skip = false;
		}
	}
	/* RP_WALL_SLEEP=0: wake at every tick all the same (the bench's comparison) */
	sleep_env = getenv("RP_WALL_SLEEP");
	w->sleep_ok = w->skip && !(sleep_env && strcmp(sleep_env, "0") == 0) &&
		      sampler_add_wake_ring(smp, bpf_map__fd(w->skel->maps.wall_wake)) == 0;
	wall_set_frequency(w, frequency);
	w->smp = smp;
	w->extra_cpu = m.extra_cpu;
	sampler_set_extra_hook(smp, wall_on_stack, w);
	return w;

cleanup:
	wall__free(w);
	errno = err ? -err : ENOMEM;
	return NULL;
}

void wall__free(struct wall *w)
{
	size_t i;

	if (!w)
		return;
	bpf_link__destroy(w->hooks[0]);
	bpf_link__destroy(w->hooks[1]);
	for (i = 0; i < w->nprocs; i++)
		bpf_link__destroy(w->procs[i].link);
	free(w->procs);
	wallcopy__free(w->copies);
	wall_bpf__destroy(w->skel);
	free(w);
}

static struct wall_proc *find_proc(const struct wall *w, pid_t pid)
{
	size_t i;

	for (i = 0; i < w->nprocs; i++) {
		if (w->procs[i].pid == pid)
			return &w->procs[i];
	}
	return NULL;
}

/* ---- reuse: the daemon's copies of the last walked stacks -------------------------------- */

/* Forgets the BPF side's entry of a thread: its next visit walks it again. Visits it had
 * pending are lost with it (counted): their stack's copy is what went. */
static void entry_drop(struct wall *w, pid_t pid, uint64_t th)
{
	struct rp_wall_key k = {.th = th, .tgid = (__u32)pid};
	struct rp_wall_thread e;

	if (bpf_map__lookup_elem(w->skel->maps.wall_threads, &k, sizeof(k), &e, sizeof(e), 0) == 0)
		w->c.pending_lost += e.pend_visits;
	bpf_map__delete_elem(w->skel->maps.wall_threads, &k, sizeof(k), 0);
}

/*
 * A thread's pending visits, handed to the stacks as the iterator would have sent them, with
 * the daemon's copy of the stack they reused: when its entry goes (the thread or its process
 * ended; before the stacks forget the process: wall_remove comes first), and before a
 * profile is cut (wall_flush). False when the copy is not that stack (its record is still in
 * the ring buffer, or the copy went): the caller keeps them, or counts them lost.
 */
/*
 * The visits of the ticks skipped since p's last run that thread e is owed and its next run has
 * not counted yet: e was seen off a CPU with a whole stack at that run, and stayed so.
 */
static uint32_t skipped_visits(const struct wall_proc *p, const struct rp_wall_thread *e)
{
	return p && p->skipped > p->taken && e->valid && e->run == p->runs ? p->skipped - p->taken
									   : 0;
}

static bool send_pending(struct wall *w, const struct rp_wall_key *k,
			 const struct rp_wall_thread *e)
{
	const struct wallcopy_entry *c;
	struct rp_sample hdr = {0};
	struct sampler_stack st = {0};
	struct wall_proc *p;
	uint32_t extra;

	p = find_proc(w, (pid_t)k->tgid);
	extra = skipped_visits(p, e);
	if (!e->pend_visits && !extra)
		return true;
	c = wallcopy_get(w->copies, (pid_t)k->tgid, k->th, e->seq, p ? p->runs : e->run);
	if (!c)
		return false;
	hdr.hdr.version = RP_REC_VERSION;
	hdr.hdr.kind = RP_REC_STACK;
	hdr.hdr.state = (__u8)e->pend_state;
	hdr.hdr.wunit = RP_WEIGHT_NS;
	hdr.hdr.size = RP_SAMPLE_HDR_SIZE;
	hdr.hdr.weight = e->pend_weight + (uint64_t)extra * (uint64_t)w->period_ns;
	hdr.hdr.pid = k->tgid;
	hdr.hdr.tid = e->tid;
	hdr.cpu = w->extra_cpu;
	hdr.seq = e->seq; /* the stack of that sample: a later delta based on it is right */
	hdr.flags = c->flags | RP_SAMPLE_LAST;
	hdr.truncated = c->truncated;
	hdr.syscall = e->pend_syscall;
	hdr.ruby_thread = k->th;
	memcpy(hdr.comm, c->comm, sizeof(hdr.comm));
	st.first = &hdr;
	st.frames = c->frames;
	st.nframes = c->n;
	st.flags = c->flags;
	st.truncated = c->truncated;
	st.tctx = c->tctx;
	st.tctx_len = c->tctx_len;
	st.tctx_flags = c->tctx_flags;
	st.samples = e->pend_visits + extra;
	w->c.reused += e->pend_visits + extra;
	w->c.pending_swept += e->pend_visits + extra;
	sampler_on_stack(w->smp, &st);
	return true;
}

/* The sampler's hook for wall-clock stacks: fills RP_SAMPLE_SAME ones, keeps the others. */
void wall_on_stack(void *ctx, struct sampler_stack *st)
{
	struct wall *w = ctx;
	struct wall_proc *p = find_proc(w, (pid_t)st->first->hdr.pid);
	struct wallcopy_reuse r = {0};

	wallcopy_on_stack(w->copies, st, p ? p->runs : 0, &r);
	w->c.reused += r.reused;
	w->c.reuse_missed += r.missed;
	if (r.drop_pid)
		entry_drop(w, r.drop_pid, r.drop_th);
}

static bool is_stale(struct wall *w, pid_t gone, pid_t pid, uint32_t run)
{
	struct wall_proc *p;

	if (gone)
		return pid == gone;
	p = find_proc(w, pid);
	return !p || p->runs - run > WALL_STALE_RUNS * (p->lap ? p->lap : 1);
}

struct sweep_ctx {
	struct wall *w;
	pid_t gone;
};

static bool copy_stale(void *ctx, pid_t pid, uint32_t run)
{
	struct sweep_ctx *sc = ctx;

	return is_stale(sc->w, sc->gone, pid, run);
}

/*
 * Drops the BPF entries and daemon copies of threads that are gone (process `gone`, or, for 0,
 * threads not visited for WALL_STALE_RUNS laps: ended threads). Entries are read one by one:
 * at most RP_WALL_CACHE_ENTRIES, every WALL_SWEEP_TICKS ticks or when a process goes.
 */
static void sweep(struct wall *w, pid_t gone)
{
	struct bpf_map *m = w->skel->maps.wall_threads;
	struct rp_wall_key k, next, del[64];
	struct rp_wall_thread e;
	size_t i, n, visited = 0;
	struct sweep_ctx sc;
	bool more;

	do {
		/* collect a few keys, then delete them: deleting under get_next_key restarts it */
		n = 0;
		more = bpf_map__get_next_key(m, visited ? &k : NULL, &next, sizeof(k)) == 0;
		while (more && n < sizeof(del) / sizeof(del[0]) &&
		       visited < RP_WALL_CACHE_ENTRIES) {
			visited++;
			k = next;
			if (bpf_map__lookup_elem(m, &k, sizeof(k), &e, sizeof(e), 0) == 0 &&
			    is_stale(w, gone, (pid_t)k.tgid, e.run)) {
				if (!send_pending(w, &k, &e))
					w->c.pending_lost +=
						e.pend_visits +
						skipped_visits(find_proc(w, (pid_t)k.tgid), &e);
				del[n++] = k;
			}
			more = bpf_map__get_next_key(m, &k, &next, sizeof(k)) == 0;
		}
		for (i = 0; i < n; i++) {
			bpf_map__delete_elem(m, &del[i], sizeof(del[i]), 0);
			w->c.entries_swept++;
		}
	} while (more && visited < RP_WALL_CACHE_ENTRIES);
	sc.w = w;
	sc.gone = gone;
	wallcopy_drop_if(w->copies, copy_stale, &sc);
}

int wall_add(struct wall *w, const struct ruby_target *t)
{
	LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info linfo;
	const struct wall_row *row = NULL;
	struct wall_proc *p;
	int major, minor, teeny;
	size_t i;

	if (offsets_parse_version(t->version, &major, &minor, &teeny) == 0) {
		for (i = 0; i < sizeof(wall_rows) / sizeof(wall_rows[0]); i++) {
			if (wall_rows[i].major == major && wall_rows[i].minor == minor)
				row = &wall_rows[i];
		}
	}
	if (!row) {
		w->c.refused_version++;
		return -ENOTSUP;
	}
	p = find_proc(w, t->pid);
	if (!p) {
		if (w->nprocs == WALL_MAX_PROCS) {
			w->c.refused_full++;
			return -ENOSPC;
		}
		p = &w->procs[w->nprocs];
		memset(p, 0, sizeof(*p));
		if (!w->syscall_run) {
			/* its main task only: the program walks the list from there */
			memset(&linfo, 0, sizeof(linfo));
			linfo.task.tid = (__u32)t->pid;
			opts.link_info = &linfo;
			opts.link_info_len = sizeof(linfo);
			p->link = bpf_program__attach_iter(w->skel->progs.rp_wall, &opts);
			if (!p->link)
				return -errno;
		}
		p->pid = t->pid;
		w->nprocs++;
	}
	p->off = row->off;
	w->due = w->next_ns; /* its first run at the next tick */
	return 0;
}

void wall_remove(struct wall *w, pid_t pid)
{
	struct wall_proc *p = find_proc(w, pid);

	if (!p)
		return;
	bpf_link__destroy(p->link);
	sweep(w, pid);
	*p = w->procs[--w->nprocs];
	p->skippable =
		false; /* the one moved into its place has another slot: its next tick runs */
}

bool wall_running_from_perf(const struct wall *w, pid_t pid)
{
	const struct wall_proc *p = find_proc(w, pid);

	/* without a thread id, or the kfunc to find its task by, the iterator cannot tell a
	 * thread's time on a CPU: it walks them all */
	return p && w->find_tasks && (p->off.th_tid || p->off.th_nt);
}

void wall_set_frequency(struct wall *w, unsigned int frequency)
{
	w->period_ns = 1000000000LL / (frequency ? frequency : 1);
	w->next_ns = 0;
	w->due = 0;
}

int64_t wall_next_due(const struct wall *w)
{
	return w->due;
}

/* One run for p: the program walks the thread list on the main task (BPF_PROG_RUN, or on 6.1
 * the iterator's file read to its end). */
static int run_one(struct wall *w, struct wall_proc *p)
{
	uint32_t slot = (uint32_t)(p - w->procs);
	LIBBPF_OPTS(bpf_test_run_opts, run);
	struct rp_wall_params *prm = &w->skel->bss->wall_params;
	char buf[WALL_READ_BYTES];
	ssize_t n;
	int fd;

	prm->tgid = (__u32)p->pid;
	prm->max_threads = RP_MAX_WALL_THREADS;
	prm->period_ns = (__u64)w->period_ns;
	prm->off = p->off;
	prm->cursor = p->cursor;
	prm->run = ++p->runs;
	prm->lap = p->lap ? p->lap : 1;
	prm->reuse = w->reuse;
	prm->anchor = p->anchor;
	memcpy(prm->list, p->list, sizeof(prm->list));
	prm->slot = slot;
	prm->skipped = p->skipped;
	prm->skipped_taken = p->taken;
	/* switches from now on make the next tick run */
	p->gen = __atomic_load_n(&w->skel->bss->wall_gen[slot], __ATOMIC_ACQUIRE);
	w->skel->bss->wall_out.next = 0;
	w->skel->bss->wall_out.anchor = 0;
	w->skel->bss->wall_out.walked = 0;
	w->skel->bss->wall_out.untasked = 0;
	w->skel->bss->wall_out.listed = 0;
	if (w->syscall_run) {
		n = bpf_prog_test_run_opts(bpf_program__fd(w->skel->progs.rp_wall_run), &run);
		if (n)
			n = -1;
	} else {
		fd = bpf_iter_create(bpf_link__fd(p->link));
		if (fd < 0)
			return -errno;
		do {
			n = read(fd, buf, sizeof(buf));
		} while (n > 0 || (n < 0 && errno == EINTR));
		close(fd);
	}
	p->anchor = w->skel->bss->wall_out.anchor;
	memcpy(p->list, w->skel->bss->wall_out.list, sizeof(p->list));
	/* The cursor: where the next run starts, and how many runs a lap of the list takes
	 * (each thread's weight is the runs since its last visit, bounded by the lap). */
	if (!w->skel->bss->wall_out.listed && p->skipped > p->taken) {
		/* the process is gone (or its list not read): the skipped ticks it is owed stay
		 * counted as since the last run that read it (wall_remove, wall_flush give them) */
		p->runs--;
		p->skippable = false;
		return n < 0 ? -errno : 0;
	}
	p->lap_runs++;
	p->cursor = w->skel->bss->wall_out.next;
	if (!p->cursor) {
		p->lap = p->lap_runs;
		p->lap_runs = 0;
	}
	p->skipped = 0;
	p->taken = 0;
	/* Still ticks may be skipped after a run that saw the whole list in one go, every thread
	 * with a task of its own (an M:N thread moves without its task being switched), its
	 * running ones left to the perf samples (a version with thread ids: not 2.7). */
	p->skippable = n >= 0 && w->skip && !p->cursor && p->lap <= 1 && p->anchor &&
		       w->skel->bss->wall_out.walked && !w->skel->bss->wall_out.untasked &&
		       (p->off.th_tid || p->off.th_nt);
	return n < 0 ? -errno : 0;
}

/* Whether p's tick can be skipped: nothing of it was switched in or out since its last run. */
static bool still(struct wall *w, const struct wall_proc *p)
{
	uint32_t slot = (uint32_t)(p - w->procs);

	return p->skippable && p->skipped < WALL_SKIP_MAX &&
	       __atomic_load_n(&w->skel->bss->wall_gen[slot], __ATOMIC_ACQUIRE) == p->gen;
}

/*
 * When the next tick has work. While every process is still (its last run allows skipping, and
 * nothing of it was switched since), the daemon need not wake for the skipped ticks: each
 * process's slot is armed, so that its first switch wakes the daemon (a wall_wake record), and
 * the next wake-up is the first forced run (WALL_SKIP_MAX) unless one comes first. Armed first,
 * then the counts compared again: a switch in between is seen either way.
 */
static void plan(struct wall *w)
{
	int64_t k = WALL_SKIP_MAX;
	size_t i;

	w->due = w->next_ns;
	if (!w->sleep_ok || !w->nprocs)
		return;
	for (i = 0; i < w->nprocs; i++) {
		if (!w->procs[i].skippable)
			return;
		if (WALL_SKIP_MAX - (int64_t)w->procs[i].skipped < k)
			k = WALL_SKIP_MAX - (int64_t)w->procs[i].skipped;
	}
	if (k <= 0)
		return;
	for (i = 0; i < w->nprocs; i++)
		__atomic_store_n(&w->skel->bss->wall_armed[i], 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < w->nprocs; i++) {
		if (!still(w, &w->procs[i]))
			return;
	}
	w->due = w->next_ns + k * w->period_ns;
	w->c.sleeps++;
}

/*
 * Ticks slept through on purpose (plan): every one before now was still, since a switch would
 * have woken the daemon at once; each process gets them as skipped. Before the planned wake-up
 * (woken by a switch, or for other work) every tick up to now is past: the next one runs, or
 * is skipped, as usual. Returns whether a tick is due now.
 */
static bool slept(struct wall *w, int64_t now_ns)
{
	int64_t passed, last = now_ns < w->due ? now_ns : w->due - w->period_ns;
	size_t i;

	if (w->due <= w->next_ns || last < w->next_ns)
		return now_ns >= w->next_ns;
	passed = (last - w->next_ns) / w->period_ns + 1;
	for (i = 0; i < w->nprocs; i++) {
		if (w->procs[i].skippable)
			w->procs[i].skipped += (uint32_t)passed;
	}
	w->c.ticks_skipped += (uint64_t)passed * w->nprocs;
	w->c.ticks_slept += (uint64_t)passed;
	w->ticks += (uint64_t)passed;
	w->next_ns += passed * w->period_ns;
	return now_ns >= w->next_ns;
}

void wall_catch_up(struct wall *w, int64_t now_ns)
{
	slept(w, now_ns);
}

int wall_tick(struct wall *w, int64_t now_ns)
{
	uint64_t ticks = w->ticks;
	size_t i;
	int err = 0;

	if (!slept(w, now_ns)) {
		plan(w);
		return 0;
	}
	if (!w->next_ns) {
		w->next_ns = now_ns;
	} else if (now_ns - w->next_ns >= w->period_ns) {
		/* a loaded machine: start from now rather than catch up with a burst */
		w->c.ticks_late++;
		w->next_ns = now_ns;
	}
	w->next_ns += w->period_ns;
	w->ticks++;
	if (ticks / WALL_SWEEP_TICKS != w->ticks / WALL_SWEEP_TICKS)
		sweep(w, 0);
	for (i = 0; i < w->nprocs; i++) {
		if (still(w, &w->procs[i])) {
			w->procs[i].skipped++;
			w->c.ticks_skipped++;
			continue;
		}
		if (run_one(w, &w->procs[i])) {
			w->c.runs_failed++;
			err = err ? err : -EIO;
		}
	}
	plan(w);
	return err;
}

void wall_flush(struct wall *w)
{
	struct bpf_map *m = w->skel->maps.wall_threads;
	struct rp_wall_key k;
	struct rp_wall_thread e;
	size_t i, visited = 0;
	bool more;

	/* Entries are only written inside the daemon's own read() of the iterator: nothing
	 * changes them meanwhile. Updating a value keeps the key's place in the walk. */
	more = bpf_map__get_next_key(m, NULL, &k, sizeof(k)) == 0;
	while (more && visited++ < RP_WALL_CACHE_ENTRIES) {
		if (bpf_map__lookup_elem(m, &k, sizeof(k), &e, sizeof(e), 0) == 0 &&
		    e.pend_visits && send_pending(w, &k, &e)) {
			e.pend_visits = 0;
			e.pend_weight = 0;
			bpf_map__update_elem(m, &k, sizeof(k), &e, sizeof(e), BPF_EXIST);
		} else if (!e.pend_visits) {
			/* only skipped ticks' visits (or none): sent from the daemon's count */
			send_pending(w, &k, &e);
		}
		more = bpf_map__get_next_key(m, &k, &k, sizeof(k)) == 0;
	}
	/* the next run adds only the ticks skipped after now */
	for (i = 0; i < w->nprocs; i++)
		w->procs[i].taken = w->procs[i].skipped;
}

void wall_counters(const struct wall *w, struct wall_counters *out)
{
	struct wallcopy_counters cc;
	__u32 k;
	__u64 v;

	*out = w->c;
	out->by_syscall = w->syscall_run;
	out->skip = w->skip;
	wallcopy_counters(w->copies, &cc);
	out->copies_evicted = cc.evicted;
	out->copies_failed = cc.failed;
	out->copies_swept = cc.dropped;
	for (k = 0; k < RP_WSTAT_MAX; k++) {
		v = 0;
		if (bpf_map__lookup_elem(w->skel->maps.wall_stats, &k, sizeof(k), &v, sizeof(v),
					 0) == 0)
			out->bpf[k] = v;
	}
}
