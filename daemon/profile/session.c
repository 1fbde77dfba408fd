// SPDX-License-Identifier: GPL-2.0-only
/* session.c - sampler + tracker + stacks + aggregate, shared by both modes. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/log.h"
#include "proc/appname.h"
#include "proc/pidns.h"
#include "profile/session.h"

/* Distinct stacks per interval; past it, samples are dropped and counted. */
#define MAX_STACKS	  (1u << 20)
/* The ring buffer holds at least 32 of the deepest stacks, and 4 MiB (its pages count twice
 * in the daemon's RSS: the kernel maps the data area two times). */
#define RINGBUF_MIN_BYTES (4u << 20)
#define RINGBUF_STACKS	  32
/* --stacks mixed: copies of user stacks the ring buffer holds besides (a read tick of 8 sample
 * periods, READ_SAMPLES below, of 16 CPUs is 128 of them; past a quarter of the buffer its
 * fill threshold wakes the reader early) */
#define RINGBUF_USTACKS	  256
/*
 * Samples are sent without waking the reader (rb_flags in bpf/maps.bpf.h): it wakes on process
 * events (exec, fork, exit: forced), on the ring buffer's fill threshold (forced), on its own
 * deadlines, and, while a process is profiled, at least every READ_SAMPLES sample periods. That
 * tick is what bounds how long a sample waits: a process's frames are symbolized by reading its
 * memory, so the samples taken in its last tick before it exits are read when it is gone, and
 * those of their frames not seen earlier lose their names. 8 periods bound that loss to about
 * 8 samples per CPU the process ran on, at any frequency (81 ms at 99 Hz, 421 ms at 19 Hz),
 * while each wake-up takes in 8 samples of every busy CPU instead of one. Bounded
 * below so that a high frequency does not wake the daemon more often than the old 20 ms poll,
 * and above so that a low one still reads at least once a second.
 */
#define READ_SAMPLES	  8
#define READ_MIN_NS	  20000000LL
#define READ_MAX_NS	  1000000000LL

struct session {
	struct session_opts opts;
	struct sampler *sampler;
	struct tracker *tracker;
	struct stacks *stacks;
	struct aggregate *agg;
	struct wall *wall; /* --clock wall, else NULL */
	unsigned int frequency;
	int64_t now;			/* of the records being consumed */
	int64_t last_read;		/* when the ring buffer was last read (CLOCK_MONOTONIC) */
	struct procctx_stats ctx_stats; /* OpenTelemetry process contexts */
	/* start time of the last process whose threads the iterator listed */
	pid_t iter_pid;
	uint64_t iter_start;
};

int64_t session_now(void)
{
	return clock_mono_ns();
}

static size_t ringbuf_size(unsigned int max_frames, bool mixed)
{
	size_t want = (size_t)RINGBUF_STACKS *
		      ((size_t)RP_SAMPLE_HDR_SIZE * (max_frames / RP_CHUNK_FRAMES + 1) +
		       (size_t)max_frames * sizeof(struct rp_frame));

	/* mixed: room for RINGBUF_USTACKS user stack copies of the largest size besides */
	if (mixed)
		want += (size_t)RINGBUF_USTACKS *
			(RP_USTACK_HDR_SIZE + (size_t)RP_USTACK_PAGES_MAX * RP_USTACK_PAGE);
	size_t size = RINGBUF_MIN_BYTES;

	while (size < want)
		size <<= 1;
	return size;
}

static int64_t period_ns(unsigned int frequency)
{
	return 1000000000LL / frequency;
}

/* Reads the ring buffer once (bounded: SAMPLER_CONSUME_MAX records). Records, or -errno. */
static int consume(struct session *s, int64_t now)
{
	s->now = now;
	s->last_read = now;
	return sampler_consume(s->sampler);
}

/* ---- the tracker's callbacks ------------------------------------------------------------ */

static int threads_of(void *ctx, pid_t pid, struct rp_thread_tp *out, size_t max, size_t *n)
{
	struct session *s = ctx;
	int err = sampler_thread_pointers(s->sampler, (uint32_t)pid, out, max, n);

	if (!err && *n) {
		s->iter_pid = pid;
		s->iter_start = out[0].start_time;
	}
	return err;
}

/*
 * Wall-clock mode: the process's threads are sampled from the next tick (or it is said why not),
 * before its procs entry is written: the entry says whether its perf samples are its running
 * threads' (bpf->flags), else the perf program drops them.
 */
static void wall_enable(struct session *s, const struct ruby_target *t, struct rp_proc *bpf)
{
	int err;

	bpf->flags &= ~RP_PROCF_WALL_RUNNING;
	if (!s->wall)
		return;
	err = wall_add(s->wall, t);
	if (err == -ENOTSUP)
		log_warn("pid %d: Ruby %s has no thread-list offsets: no wall-clock samples",
			 (int)t->pid, t->version);
	else if (err)
		log_warn("pid %d: cannot start wall-clock sampling: %s", (int)t->pid,
			 strerror(-err));
	else if (wall_running_from_perf(s->wall, t->pid))
		bpf->flags |= RP_PROCF_WALL_RUNNING;
}

/* What a process context that was refused says, once per process. */
static void context_refused(struct procctx *pc, pid_t pid)
{
	if (pc->logged)
		return;
	pc->logged = true;
	log_warn("pid %d: its OpenTelemetry process context is not used (%s): %s", (int)pid,
		 procctx_refusal_name(pc->last), pc->why);
}

/* Logs a refused context, or the attributes of a context read that were refused, once. */
static void context_logged(struct procctx *pc, pid_t pid, enum procctx_result res)
{
	if (res == PROCCTX_REFUSED) {
		context_refused(pc, pid);
	} else if (res == PROCCTX_CHANGED && pc->attrs.refused_values && !pc->logged) {
		pc->logged = true;
		log_warn("pid %d: %u attributes of its OpenTelemetry process context are not used "
			 "(value): not a string of at most %d bytes of UTF-8 without control "
			 "characters",
			 (int)pid, pc->attrs.refused_values, PROCCTX_VALUE_MAX);
	}
}

/* The thread-context schemas of OTEP 4947 that rubyprofd reads (its draft's, and the merged). */
static bool tctx_schema_read(const char *v)
{
	return strcmp(v, "tlsdesc_v1_dev") == 0 || strcmp(v, "tls_v1") == 0;
}

/* Looks for a thread context at most this many times per process. */
#define TCTX_LOOKS_MAX 8

/*
 * A process context that names a thread-context schema: where the process's threads keep
 * their context (discover_thread_ctx). Looked for when the context is first read or updated
 * (the OTEP: the reader re-runs its search at an update), and at the 1st, 2nd, 4th ... 32nd
 * interval after (an extension loaded later), TCTX_LOOKS_MAX looks at most. bpf: the entry
 * about to be written (a process just found); NULL: the live entry gets the location.
 */
static void locate_tctx(struct session *s, pid_t pid, struct procctx *pc, struct rp_proc *bpf,
			bool changed)
{
	struct rp_proc loc = {0};
	char how[PATH_MAX + 256];
	uint32_t p;
	int err;

	if (pc->tctx_located || !pc->published_at_ns || !pc->attrs.schema_version[0])
		return;
	if (!tctx_schema_read(pc->attrs.schema_version)) {
		if (!pc->tctx_logged) {
			pc->tctx_logged = true;
			s->ctx_stats.tctx_schema++;
			log_info("pid %d: its OpenTelemetry thread context is of schema \"%s\", "
				 "which rubyprofd does not read (tlsdesc_v1_dev, tls_v1)",
				 (int)pid, pc->attrs.schema_version);
		}
		return;
	}
	p = pc->tctx_polls++;
	if (pc->tctx_looks >= TCTX_LOOKS_MAX || (!changed && (p & (p - 1))))
		return;
	pc->tctx_looks++;
	err = discover_thread_ctx(pid, threads_of, s, &loc, how, sizeof(how));
	if (!err) {
		if (bpf) {
			bpf->tctx_mode = loc.tctx_mode;
			bpf->tctx_off = loc.tctx_off;
			bpf->tctx_modid = loc.tctx_modid;
			bpf->tctx_block_off = loc.tctx_block_off;
		} else {
			err = sampler_set_proc_tctx(s->sampler, (uint32_t)pid, &loc);
		}
	}
	if (!err) {
		pc->tctx_located = true;
		s->ctx_stats.tctx_located++;
		log_info("pid %d: OpenTelemetry thread context at %s", (int)pid, how);
		return;
	}
	if (err == -EINVAL)
		s->ctx_stats.tctx_refused++;
	else
		s->ctx_stats.tctx_not_found++;
	/* one line: what was found wrong, or that nothing was found by the last look */
	if (!pc->tctx_logged && (err == -EINVAL || pc->tctx_looks == TCTX_LOOKS_MAX)) {
		pc->tctx_logged = true;
		log_warn("pid %d: its OpenTelemetry thread context is not read: %s", (int)pid, how);
	}
}

static int on_enable(void *ctx, const struct ruby_target *t, bool fresh)
{
	struct session *s = ctx;
	struct procctx pc = {0};
	struct rp_thread_tp tp;
	struct rp_proc bpf = t->bpf;
	char service[128] = "";
	size_t n = 0;
	int err;

	if (fresh) {
		/* discovery read its maps just now: no second look at them for a while */
		if (!t->notel_ctx)
			pc.polls = 1;
		context_logged(&pc, t->pid,
			       procctx_poll(&pc, t->pid, t->otel_ctx, t->notel_ctx, &s->ctx_stats));
		locate_tctx(s, t->pid, &pc, &bpf, true);
	}
	if (s->opts.identify) {
		err = s->opts.identify(s->opts.identify_ctx, t,
				       pc.published_at_ns ? &pc.attrs : NULL, service,
				       sizeof(service));
		if (err) {
			procctx_release(&pc);
			return err;
		}
	}
	/* The BPF side walks this pid only while it is this process (not a later one). */
	if (s->iter_pid != t->pid && threads_of(s, t->pid, &tp, 1, &n) == 0 && !n) {
		procctx_release(&pc);
		return -ESRCH;
	}
	bpf.start_time = s->iter_pid == t->pid ? s->iter_start : 0;
	if (!fresh && stacks_update(s->stacks, t) == 0) {
		/* a fork child validated on its own: its context (not its parent's) is looked for
		 * by session_poll_contexts */
		wall_enable(s, t, &bpf);
		err = sampler_set_proc(s->sampler, (uint32_t)t->pid, &bpf);
		if (err && s->wall)
			wall_remove(s->wall, t->pid);
		return err;
	}
	err = stacks_add(s->stacks, t, service, &pc);
	procctx_release(&pc);
	if (err)
		return err;
	wall_enable(s, t, &bpf);
	err = sampler_set_proc(s->sampler, (uint32_t)t->pid, &bpf);
	if (err) {
		if (s->wall)
			wall_remove(s->wall, t->pid);
		stacks_remove(s->stacks, t->pid);
	}
	return err;
}

static int on_fork(void *ctx, pid_t child, pid_t parent)
{
	struct session *s = ctx;

	return stacks_fork(s->stacks, child, parent, NULL);
}

static void on_disable(void *ctx, pid_t pid)
{
	struct session *s = ctx;

	sampler_del_proc(s->sampler, (uint32_t)pid);
	if (s->wall)
		wall_remove(s->wall, pid);
	stacks_remove(s->stacks, pid);
}

/* ---- the dispatcher's callbacks --------------------------------------------------------- */

static void on_proc_event(void *ctx, const struct rp_proc_event *ev)
{
	struct session *s = ctx;

	/* a process that is no Ruby, kept for its native samples, runs another program now */
	if (ev->event == RP_PROC_EXEC)
		stacks_forget_alone(s->stacks, (pid_t)ev->hdr.pid);
	tracker_on_event(s->tracker, ev, s->now);
}

static void on_stack(void *ctx, const struct sampler_stack *st)
{
	struct session *s = ctx;

	stacks_on_stack(s->stacks, st);
}

static void on_ustack(void *ctx, const struct rp_ustack *u, size_t size)
{
	struct session *s = ctx;

	stacks_on_ustack(s->stacks, u, size);
}

static void on_kstack(void *ctx, const struct rp_kstack *k)
{
	struct session *s = ctx;

	stacks_on_kstack(s->stacks, k);
}

/*
 * stacks_identify_fn of a process that is no Ruby: the service's own naming (its rules, unit,
 * container), or without one (--oneshot) appname's: its unit, container, or program name.
 */
static int identify_alone(void *ctx, pid_t pid, char *service, size_t len)
{
	struct session *s = ctx;
	struct ruby_target t = {.pid = pid, .nspid = pid};
	struct app_identity id;

	if (s->opts.identify)
		return s->opts.identify(s->opts.identify_ctx, &t, NULL, service, len);
	if (appname_identify(pid, NULL, &id) == 0)
		snprintf(service, len, "%s", id.service);
	return 0;
}

/* --kernel-stacks and --native-processes: what the stacks need for them. 0 or -errno. */
static int enable_native_extras(struct session *s, const struct session_opts *opts)
{
	int err;

	if (opts->kernel_stacks) {
		err = stacks_enable_kernel(s->stacks, NULL);
		if (err == -EACCES)
			log_warn("kernel stacks: /proc/kallsyms shows every address as 0 "
				 "(kernel.kptr_restrict): rubyprofd lacks CAP_SYSLOG; kernel "
				 "frames are "
				 "kept unnamed, as \"[unknown kernel function]\"");
		else if (err == -ENOMEM)
			return err;
		else if (err)
			log_warn("kernel stacks: cannot read /proc/kallsyms: %s (a systemd unit's "
				 "ProtectKernelTunables=yes hides it); kernel frames are kept "
				 "unnamed",
				 strerror(-err));
	}
	if (opts->native_procs != RP_NATIVE_RUBY)
		return stacks_enable_alone(s->stacks, 0, identify_alone, s);
	return 0;
}

/* Every pid the daemon reads in /proc and gets from BPF is of its own pid namespace. */
static int own_pidns(struct sampler_opts *sopts)
{
	char why[512];
	int err;

	err = pidns_self(&sopts->pidns_ino, why, sizeof(why));
	if (err)
		log_error("%s", why);
	return err;
}

struct session *session__new(const struct session_opts *opts)
{
	struct sampler_opts sopts = {
		.frequency = opts->frequency,
		.max_frames = opts->max_frames,
		.ringbuf_bytes = ringbuf_size(opts->max_frames, opts->stacks_mixed),
		.stacks_mixed = opts->stacks_mixed,
		.ustack_bytes = opts->ustack_bytes,
		.clock_wall = opts->clock_wall,
		.kernel_stacks = opts->stacks_mixed && opts->kernel_stacks,
		.native_procs = opts->stacks_mixed ? opts->native_procs : RP_NATIVE_RUBY,
		.native_pids = opts->native_pids,
		.nnative_pids = opts->nnative_pids,
	};
	struct tracker_opts topts = {.pids = opts->pids, .npids = opts->npids};
	struct tracker_ops tops = {
		.enable = on_enable,
		.fork = on_fork,
		.disable = on_disable,
		.threads = threads_of,
	};
	struct sampler_handlers h = {
		.on_stack = on_stack,
		.on_proc = on_proc_event,
		.on_ustack = opts->stacks_mixed ? on_ustack : NULL,
		.on_kstack = opts->stacks_mixed && opts->kernel_stacks ? on_kstack : NULL,
	};
	struct session *s;
	int err = -ENOMEM;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->opts = *opts;
	s->opts.pids = NULL;	    /* the tracker keeps its own copy */
	s->opts.native_pids = NULL; /* the BPF map has them */
	s->frequency = opts->frequency;
	tops.ctx = s;
	h.ctx = s;
	s->agg = aggregate__new(2, MAX_STACKS);
	s->stacks = s->agg ? stacks__new(s->agg, period_ns(opts->frequency)) : NULL;
	if (s->stacks && opts->stacks_mixed &&
	    (stacks_enable_native(s->stacks, 0) || enable_native_extras(s, opts))) {
		log_error("out of memory");
		goto fail;
	}
	s->tracker = s->stacks ? tracker__new(&topts, &tops) : NULL;
	if (!s->tracker) {
		log_error("out of memory");
		goto fail;
	}
	err = own_pidns(&sopts);
	if (err)
		goto fail;
	s->sampler = sampler__new(&sopts, &h);
	if (!s->sampler) {
		err = -errno;
		goto fail;
	}
	if (opts->clock_wall) {
		char why[256];

		/* wall samples carry no user-stack copy: their native frames would be missing */
		if (opts->stacks_mixed) {
			log_error("--clock wall does not combine with --stacks mixed yet");
			err = -ENOTSUP;
			goto fail;
		}
		s->wall = wall__new(s->sampler, opts->frequency, why, sizeof(why));
		if (!s->wall) {
			err = -errno;
			log_error("--clock wall is not available: %s", why);
			goto fail;
		}
	}
	return s;
fail:
	session__free(s);
	errno = -err;
	return NULL;
}

void session__free(struct session *s)
{
	if (!s)
		return;
	/* the sampler first: nothing may arrive for the parts freed after it */
	wall__free(s->wall);
	sampler__free(s->sampler);
	tracker__free(s->tracker);
	stacks__free(s->stacks);
	aggregate__free(s->agg);
	free(s);
}

int session_start(struct session *s)
{
	/* In wall mode too: the cpu-clock samples are the running threads' wall samples (their
	 * stacks read by the thread itself, never torn), the iterator samples the others. */
	int err = sampler_attach(s->sampler);

	if (err)
		return err;
	session_scan(s, session_now());
	return 0;
}

void session_set_root(struct session *s, pid_t root)
{
	tracker_set_root(s->tracker, root);
}

int session_fd(const struct session *s)
{
	return sampler_fd(s->sampler);
}

int session_run(struct session *s, int64_t now)
{
	int n;

	if (s->wall)
		wall_tick(s->wall, now);
	n = consume(s, now);
	if (n < 0)
		return n;
	tracker_tick(s->tracker, now);
	return 0;
}

/*
 * Reads for at most rounds calls, until a call finds less than it may take (the buffer is
 * empty), then the visits of parked threads that BPF summed and holds (wall clock), and those
 * of the ticks slept through until now. 0 or -errno.
 */
static int consume_rounds(struct session *s, int64_t now, int rounds)
{
	int n;

	while (rounds-- > 0) {
		n = consume(s, now);
		if (n < 0)
			return n;
		if (n < SAMPLER_CONSUME_MAX)
			break;
	}
	if (s->wall) {
		wall_catch_up(s->wall, now);
		wall_flush(s->wall);
	}
	return 0;
}

int session_drain(struct session *s, int64_t now)
{
	/* everything sampled until now, within reason: a buffer refilled as fast as it is read
	 * does not hold the caller forever. At most 10 calls (half a second, SAMPLER_CONSUME_NS
	 * each): longer, and the service's metrics scrapes and the watchdog would wait as long. */
	return consume_rounds(s, now, 10);
}

/* Rounds of session_finish at most: with sampling stopped, the ring buffer empties in a few
 * (its size over SAMPLER_CONSUME_MAX records); the bound only guards against a writer that
 * goes on (life-cycle events). */
#define FINISH_ROUNDS 1024

int session_finish(struct session *s, int64_t now)
{
	int err = sampler_pause(s->sampler), r;

	r = consume_rounds(s, now, FINISH_ROUNDS);
	return r ? r : err;
}

int64_t session_read_every(const struct session *s)
{
	int64_t every = READ_SAMPLES * period_ns(s->frequency);

	return every < READ_MIN_NS ? READ_MIN_NS : every > READ_MAX_NS ? READ_MAX_NS : every;
}

int64_t session_next_due(const struct session *s)
{
	int64_t due = tracker_next_due(s->tracker), read;

	/* without a profiled process no sample can arrive: nothing to read on a timer (but
	 * --native-processes samples other processes too) */
	if (stacks_count(s->stacks) || s->opts.native_procs != RP_NATIVE_RUBY) {
		read = s->last_read + session_read_every(s);
		if (read < due)
			due = read;
	}
	if (s->wall && wall_next_due(s->wall) < due)
		due = wall_next_due(s->wall);
	return due;
}

void session_scan(struct session *s, int64_t now)
{
	/* samples of a process found gone must be symbolized before it is forgotten */
	consume(s, now);
	tracker_scan(s->tracker, now);
	/* processes kept for their native samples alone: freed once they are gone */
	stacks_sweep_alone(s->stacks);
}

bool session_has_lifecycle(const struct session *s)
{
	return sampler_has_lifecycle(s->sampler);
}

bool session_all_gone(const struct session *s)
{
	return tracker_all_gone(s->tracker);
}

size_t session_start_pending(const struct session *s, pid_t *pids, size_t max)
{
	return tracker_start_pending(s->tracker, pids, max);
}

void session_report_pending(const struct session *s)
{
	if (s->tracker)
		tracker_report_pending(s->tracker);
}

int session_set_frequency(struct session *s, unsigned int frequency)
{
	int err;

	if (frequency == s->frequency)
		return 0;
	err = sampler_set_frequency(s->sampler, frequency);
	if (err)
		return err;
	s->frequency = frequency;
	stacks_set_period(s->stacks, period_ns(frequency));
	if (s->wall)
		wall_set_frequency(s->wall, frequency);
	return 0;
}

unsigned int session_frequency(const struct session *s)
{
	return s->frequency;
}

struct aggregate *session_agg(struct session *s)
{
	return s->agg;
}

static void poll_context(void *ctx, const struct ruby_target *t, struct procctx *pc)
{
	struct session *s = ctx;
	char service[128] = "";
	enum procctx_result res;

	res = procctx_poll(pc, t->pid, NULL, 0, &s->ctx_stats);
	context_logged(pc, t->pid, res);
	locate_tctx(s, t->pid, pc, NULL, res == PROCCTX_CHANGED);
	if (res != PROCCTX_CHANGED && res != PROCCTX_GONE)
		return;
	/* named again: its service.name may be new; a rule that would now ignore it does not
	 * stop a process already profiled (it keeps its name) */
	if (s->opts.identify &&
	    s->opts.identify(s->opts.identify_ctx, t, pc->published_at_ns ? &pc->attrs : NULL,
			     service, sizeof(service)))
		return;
	if (stacks_relabel(s->stacks, t->pid, s->opts.identify ? service : NULL))
		log_warn("pid %d: cannot label its samples from its new process context: out of "
			 "memory",
			 (int)t->pid);
}

void session_poll_contexts(struct session *s)
{
	stacks_foreach_ruby(s->stacks, poll_context, s);
}

size_t session_active(const struct session *s)
{
	return stacks_count(s->stacks);
}

size_t session_profiled(const struct session *s)
{
	return stacks_profiled(s->stacks);
}

void session_counters(struct session *s, struct session_counters *out)
{
	memset(out, 0, sizeof(*out));
	sampler_counters(s->sampler, &out->sampler);
	stacks_stats(s->stacks, &out->stacks);
	tracker_stats(s->tracker, &out->tracker);
	aggregate_stats(s->agg, &out->agg);
	bounds_stats(&out->bounds);
	checksum_stats(&out->checksum);
	out->procctx = s->ctx_stats;
	out->native_on = stacks_native_stats(s->stacks, &out->native);
	if (s->wall) {
		out->wall_on = true;
		wall_counters(s->wall, &out->wall);
	}
}

bool session_wall(const struct session *s)
{
	return s->wall != NULL;
}
