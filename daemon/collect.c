// SPDX-License-Identifier: GPL-2.0-only
/* collect.c - sampled stacks to aggregated, symbolized frames. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collect.h"
#include "wall.h"
#include "hmap.h"
#include "symbolize.h"

/* Entries of a process's frame cache before it is dropped and refilled. */
#define MAX_FRAME_CACHE (1u << 18)

struct target {
	struct ruby_target t;
	struct symbolizer *sym;
	struct rthreads *rth; /* Ruby thread labels */
	struct agg_proc *proc;
	uint32_t generation; /* agg_proc_generation() that `frames` holds ids of */
	uint32_t cuts;	     /* agg_cuts() when `frames` was started */
	uint64_t sym_gen;    /* symbolizer_generation() when `frames` was started */
	int pidfd;	     /* the process itself (not its pid): -1 when it could not be opened */
	struct hmap frames;  /* (addr, pc or caller frame id) -> agg frame id */
};

struct collector {
	struct agg *agg;
	int64_t period_ns;
	struct hmap by_pid; /* pid -> struct target * */
	size_t live, profiled;
	uint32_t *buf; /* frame ids of the stack being added */
	uint8_t *kind; /* RP_FRAME_KIND_* of its raw frames */
	size_t buf_cap;
	struct collector_stats stats;
};

struct collector *collector__new(struct agg *agg, int64_t period_ns)
{
	struct collector *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->agg = agg;
	c->period_ns = period_ns;
	return c;
}

void collector_set_period(struct collector *c, int64_t period_ns)
{
	c->period_ns = period_ns;
}

/*
 * Whether the process the target was made for still lives. Memory is read by pid; a pid can be
 * reused once its process is gone, so a read is trusted only if the process was still alive
 * after it (a pidfd names the process, not the pid).
 */
static bool still_alive(const struct target *t)
{
	if (t->pidfd < 0)
		return true;
	/* EPERM (another user's process, and no CAP_KILL) still says it lives: a gone process
	 * is ESRCH */
	return syscall(SYS_pidfd_send_signal, t->pidfd, 0, NULL, 0) == 0 || errno == EPERM;
}

static void target_free(struct target *t)
{
	if (!t)
		return;
	if (t->pidfd >= 0)
		close(t->pidfd);
	symbolizer__free(t->sym);
	rthreads__free(t->rth);
	hmap_clear(&t->frames);
	free(t);
}

static void free_target(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	target_free((struct target *)(uintptr_t)val);
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	hmap_foreach(&c->by_pid, free_target, NULL);
	hmap_clear(&c->by_pid);
	free(c->buf);
	free(c->kind);
	free(c);
}

static struct target *find(const struct collector *c, pid_t pid)
{
	uint64_t val;

	return hmap_get(&c->by_pid, (uint64_t)pid, 0, &val) ? (struct target *)(uintptr_t)val
							    : NULL;
}

const struct ruby_target *collector_find(const struct collector *c, pid_t pid)
{
	struct target *t = find(c, pid);

	return t ? &t->t : NULL;
}

size_t collector_count(const struct collector *c)
{
	return c->live;
}

size_t collector_profiled(const struct collector *c)
{
	return c->profiled;
}

static void sym_stats_add(struct symbolizer_stats *sum, const struct symbolizer *sym)
{
	struct symbolizer_stats st;

	if (!sym)
		return;
	symbolizer_stats(sym, &st);
	sum->iseq_failed += st.iseq_failed;
	sum->cfunc_failed += st.cfunc_failed;
	sum->cache_resets += st.cache_resets;
	sum->owner_unknown += st.owner_unknown;
	sum->line_failed += st.line_failed;
	sum->iseq_reused += st.iseq_reused;
}

void collector_remove(struct collector *c, pid_t pid)
{
	struct target *t = find(c, pid);

	if (!t)
		return;
	/* Its samples so far are interned in the aggregate, which keeps them until the interval
	 * ends; the symbolizer and caches die with the process. */
	agg_proc_exit(c->agg, t->proc);
	hmap_del(&c->by_pid, (uint64_t)pid, 0, NULL);
	sym_stats_add(&c->stats.sym, t->sym);
	target_free(t);
	c->live--;
}

int collector_add(struct collector *c, const struct ruby_target *rt, const char *service)
{
	struct agg_proc_info info = {
		.pid = rt->pid,
		.nspid = rt->nspid,
		.container = rt->container_id,
		.service = service,
		.ruby_version = rt->version,
	};
	struct target *t;

	/* A pid seen again is a new process (pid reuse, or a validated fork child). */
	collector_remove(c, rt->pid);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pidfd = (int)syscall(SYS_pidfd_open, rt->pid, 0);
	if (t->pidfd < 0)
		c->stats.no_pidfd++;
	t->t = *rt;
	t->sym =
		symbolizer__new(rt->pid, rt->off, rt->symbols, rt->symbols_cand, rt->nsymbols_cand);
	if (t->sym)
		symbolizer_set_vm(t->sym, rt->vm_ptr);
	t->rth = rthreads__new(rt->pid, rt->off, &c->stats.rthread);
	t->proc = t->sym && t->rth ? agg_proc__new(c->agg, &info) : NULL;
	if (!t->proc) {
		target_free(t);
		return -ENOMEM;
	}
	if (hmap_put(&c->by_pid, (uint64_t)rt->pid, 0, (uintptr_t)t)) {
		agg_proc_exit(c->agg, t->proc);
		target_free(t);
		return -ENOMEM;
	}
	c->live++;
	c->profiled++;
	return 0;
}

int collector_update(struct collector *c, const struct ruby_target *rt)
{
	struct target *t = find(c, rt->pid);

	if (!t)
		return -ENOENT;
	/* a fork child validated on its own: its own layout from now on (NULL on ENOMEM: its
	 * samples then go without Ruby thread labels) */
	if (rt->off != t->t.off || !t->rth) {
		rthreads__free(t->rth);
		t->rth = rthreads__new(rt->pid, rt->off, &c->stats.rthread);
	}
	t->t = *rt;
	return 0;
}

int collector_fork(struct collector *c, pid_t child, pid_t parent, struct ruby_target *out)
{
	struct target *pt = find(c, parent);
	struct ruby_target rt;

	if (!pt)
		return -ENOENT;
	rt = pt->t;
	rt.pid = child;
	/* the child's own namespace pid is read when it is validated */
	rt.nspid = pt->t.nspid == pt->t.pid ? child : 0;
	if (out)
		*out = rt;
	return collector_add(c, &rt, agg_proc_info(pt->proc)->service);
}

static uint32_t mark(struct target *t, const char *name)
{
	return agg_frame_id(t->proc, AGG_FRAME_MARK, name, "", 0, 0);
}

/*
 * A cached frame id is only valid while the process's frame table is the same, and only for one
 * interval: in the next, each frame is symbolized again on its first sight, so that the
 * symbolizer checks its iseq is still the one cached (GC frees iseqs and reuses addresses).
 */
static void check_generation(struct collector *c, struct target *t)
{
	uint32_t gen = agg_proc_generation(t->proc), cuts = agg_cuts(c->agg);
	uint64_t sym_gen = t->sym ? symbolizer_generation(t->sym) : 0;

	if (gen != t->generation || cuts != t->cuts || sym_gen != t->sym_gen) {
		hmap_clear(&t->frames);
		t->generation = gen;
		t->cuts = cuts;
		t->sym_gen = sym_gen;
		if (t->sym)
			symbolizer_new_epoch(t->sym);
		if (t->rth)
			rthreads_new_epoch(t->rth);
	}
}

/* Caller context of C function frames: Ruby reports the path and line of the nearest Ruby frame
 * below them (their caller). */
struct caller {
	const char *path;
	int64_t line;
	uint32_t frame; /* agg id of that Ruby frame, 0 at the root */
};

/* Interned frame of a Ruby frame; *type is its iseq type. 0 on ENOMEM. */
static bool has_me(const struct rp_frame *f)
{
	return (f->info >> RP_FRAME_KIND_SHIFT) & RP_FRAME_FLAG_ME;
}

/*
 * A Ruby frame's key in the frame cache: (iseq, pc); a method's own frame's (method entry, pc),
 * since one iseq runs under several owners (define_method copies, module_function). A JIT
 * frame's pc is stale (its line is 0): there the iseq stands in for it.
 */
static void iseq_key(const struct rp_frame *f, uint64_t *k1, uint64_t *k2)
{
	uint64_t jit = !!((f->info >> RP_FRAME_KIND_SHIFT) & RP_FRAME_FLAG_JIT);

	*k1 = f->addr;
	*k2 = rp_frame_pc(f) | jit << 63;
	if (has_me(f)) {
		*k1 = f->ep;
		*k2 = (jit ? f->addr : rp_frame_pc(f)) | jit << 63 | 1ULL << 61;
	}
}

/* Frame cache values of Ruby frames: agg id, iseq type << 32, internal (4.0+) at bit 40. */
#define FRAME_INTERNAL (1ULL << 40)

static uint32_t iseq_frame(struct collector *c, struct target *t, const struct rp_frame *f,
			   enum iseq_type *type, int *internal)
{
	uint64_t pc = rp_frame_pc(f), key1, key2, val;
	int jit = (f->info >> RP_FRAME_KIND_SHIFT) & RP_FRAME_FLAG_JIT, err;
	struct sym_iseq si;
	uint32_t id;

	iseq_key(f, &key1, &key2);
	if (hmap_get(&t->frames, key1, key2, &val)) {
		*type = (enum iseq_type)((val >> 32) & 0xff);
		*internal = !!(val & FRAME_INTERNAL);
		return (uint32_t)val;
	}
	*internal = 0;
	if (has_me(f))
		err = symbolize_method_frame(t->sym, f->addr, pc, jit, f->ep, &si);
	else
		err = symbolize_iseq(t->sym, f->addr, pc, jit, f->ep, &si);
	if (err || !still_alive(t)) {
		c->stats.frames_failed++;
		*type = ISEQ_TYPE_METHOD;
		return mark(t, "[unknown Ruby frame]");
	}
	*type = si.type;
	*internal = si.internal;
	id = agg_frame_id(t->proc, AGG_FRAME_RUBY, si.label, si.path, si.first_lineno, si.line);
	/* a block of a method run under several owners: named through its own frame each time */
	if (!id || !si.label_final || (si.owner_varies && !has_me(f)))
		return id;
	if (t->frames.len >= MAX_FRAME_CACHE) {
		hmap_clear(&t->frames);
		c->stats.cache_resets++;
	}
	hmap_put(&t->frames, key1, key2,
		 (uint64_t)si.type << 32 | (si.internal ? FRAME_INTERNAL : 0) | id);
	return id;
}

static uint32_t cfunc_frame(struct collector *c, struct target *t, const struct rp_frame *f,
			    const struct caller *caller)
{
	const char *name;
	uint64_t val;
	uint32_t id;

	/* The same C function has the path and line of each of its callers. */
	if (hmap_get(&t->frames, f->addr, (1ULL << 62) | caller->frame, &val))
		return (uint32_t)val;
	if (symbolize_cfunc(t->sym, f->addr, &name) || !still_alive(t)) {
		/* not cached: the name may be readable later (a booting Ruby's symbol table) */
		c->stats.frames_failed++;
		return agg_frame_id(t->proc, AGG_FRAME_CFUNC, "[unknown C function]", caller->path,
				    0, caller->line);
	}
	id = agg_frame_id(t->proc, AGG_FRAME_CFUNC, name, caller->path, 0, caller->line);
	if (!id)
		return 0;
	if (t->frames.len >= MAX_FRAME_CACHE) {
		hmap_clear(&t->frames);
		c->stats.cache_resets++;
	}
	hmap_put(&t->frames, f->addr, (1ULL << 62) | caller->frame, id);
	return id;
}

/*
 * An <internal:...> frame (4.0+) as Ruby shows it: a C method, its method's name at its caller's
 * path and line; at the root (no caller), where it is.
 */
static uint32_t internal_frame(struct collector *c, struct target *t, uint32_t ruby_id,
			       const struct caller *caller)
{
	const struct agg_frame *af;
	uint64_t val;
	uint32_t id;

	if (!caller->frame)
		return ruby_id;
	if (hmap_get(&t->frames, ruby_id, (1ULL << 60) | caller->frame, &val))
		return (uint32_t)val;
	af = agg_frame_get(t->proc, ruby_id);
	id = agg_frame_id(t->proc, AGG_FRAME_CFUNC, af->name, caller->path, 0, caller->line);
	if (!id)
		return 0;
	if (t->frames.len >= MAX_FRAME_CACHE) {
		hmap_clear(&t->frames);
		c->stats.cache_resets++;
	}
	hmap_put(&t->frames, ruby_id, (1ULL << 60) | caller->frame, id);
	return id;
}

/*
 * Frames of one stack into c->buf (leaf first) as Ruby's backtrace shows them; returns how many,
 * or -ENOSPC (a frame table is full) or -ENOMEM. Pass 1 (leaf to root) names the Ruby frames and, on 3.4+, hides the frame that
 * owns a rescue/ensure clause (Ruby prints the clause under the method's name instead); on 4.0+
 * <internal:...> frames act as C methods (symbolize_collapse_internal). Pass 2 (root to leaf)
 * gives each C function its caller's path and line. c->kind holds enum sym_frame_kind.
 */
static int stack_frames(struct collector *c, struct target *t, const struct sampler_stack *st)
{
	struct caller caller = {.path = "", .line = 0, .frame = 0};
	const struct rp_frame *f;
	uint64_t k1, k2, val;
	const struct agg_frame *af;
	enum iseq_type type;
	int skip_next = 0, internal, any_internal = 0;
	size_t i, n = 0;
	uint32_t id;

	/*
	 * Method frames carry their method entry, read at the sample: the owners they name are
	 * learned first, so that the blocks above them in this stack are named with them too.
	 */
	for (i = 0; i < st->nframes; i++) {
		f = &st->frames[i];
		if (rp_frame_kind(f) != RP_FRAME_KIND_ISEQ || !has_me(f))
			continue;
		iseq_key(f, &k1, &k2);
		if (!hmap_get(&t->frames, k1, k2, &val))
			symbolize_method_entry(t->sym, f->addr, f->ep);
	}
	for (i = 0; i < st->nframes; i++) {
		c->kind[i] = SYM_FRAME_C;
		c->buf[i] = 0;
		if (rp_frame_kind(&st->frames[i]) != RP_FRAME_KIND_ISEQ)
			continue;
		id = iseq_frame(c, t, &st->frames[i], &type, &internal);
		if (!id)
			return errno == ENOSPC ? -ENOSPC : -ENOMEM;
		c->buf[i] = skip_next ? 0 : id;
		c->kind[i] = skip_next	? SYM_FRAME_NONE
			     : internal ? SYM_FRAME_INTERNAL
					: SYM_FRAME_RUBY;
		any_internal |= internal;
		skip_next = t->t.off->qualified_labels &&
			    (type == ISEQ_TYPE_RESCUE || type == ISEQ_TYPE_ENSURE);
	}
	if (any_internal)
		symbolize_collapse_internal(c->kind, st->nframes);
	for (i = st->nframes; i-- > 0;) {
		if (c->kind[i] == SYM_FRAME_NONE) {
			c->buf[i] = 0;
		} else if (c->kind[i] == SYM_FRAME_RUBY) {
			af = agg_frame_get(t->proc, c->buf[i]);
			caller.path = af->file;
			caller.line = af->line;
			caller.frame = c->buf[i];
		} else if (c->kind[i] == SYM_FRAME_INTERNAL) {
			c->buf[i] = internal_frame(c, t, c->buf[i], &caller);
			if (!c->buf[i])
				return errno == ENOSPC ? -ENOSPC : -ENOMEM;
		} else {
			c->buf[i] = cfunc_frame(c, t, &st->frames[i], &caller);
			if (!c->buf[i])
				return errno == ENOSPC ? -ENOSPC : -ENOMEM;
		}
	}
	/* drop the hidden frames, keeping the order */
	for (i = 0; i < st->nframes; i++) {
		if (c->buf[i])
			c->buf[n++] = c->buf[i];
	}
	return (int)n;
}

static int reserve(struct collector *c, size_t n)
{
	uint32_t *nb;
	uint8_t *nk;

	if (n <= c->buf_cap)
		return 0;
	if (n > SIZE_MAX / sizeof(*nb))
		return -ENOMEM;
	nb = realloc(c->buf, n * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	c->buf = nb;
	nk = realloc(c->kind, n * sizeof(*nk));
	if (!nk)
		return -ENOMEM;
	c->kind = nk;
	c->buf_cap = n;
	return 0;
}

/*
 * Marks on top of the stack, leaf first: a sample taken while this thread ran the garbage
 * collector gets "(garbage collection)" and its phase above the Ruby stack that triggered it;
 * a sample whose leaf frame is JIT code gets "[JIT code]".
 */
static size_t add_leaf_marks(struct collector *c, struct target *t, const struct sampler_stack *st,
			     size_t n)
{
	static const char *const phases[] = {NULL, "(marking)", "(sweeping)", "(compacting)"};
	uint32_t marks[3];
	size_t k = 0;

	if (st->flags & RP_SAMPLE_GC) {
		c->stats.gc++;
		if (st->first->gc_mode < 4 && phases[st->first->gc_mode])
			marks[k++] = mark(t, phases[st->first->gc_mode]);
		marks[k++] = mark(t, "(garbage collection)");
	} else if (st->flags & RP_SAMPLE_JIT_LEAF) {
		c->stats.jit_leaf++;
		marks[k++] = mark(t, "[JIT code]");
	}
	if (!k)
		return n;
	memmove(c->buf + k, c->buf, n * sizeof(*c->buf));
	memcpy(c->buf, marks, k * sizeof(*marks));
	return n + k;
}

/* A sample that could not be added, counted by why. */
static void count_dropped(struct collector *c, int err)
{
	if (err == -ENOSPC)
		c->stats.agg_dropped++;
	else if (err == -ENOMEM)
		c->stats.dropped_nomem++;
	else
		c->stats.dropped_error++;
}

/*
 * The sample's Ruby thread, if its EC named one that is a live Ruby thread. What was read from
 * the process now (not cached) is trusted only if the process still lives (see still_alive).
 */
static void ruby_thread(struct collector *c, struct target *t, const struct sampler_stack *st,
			struct agg_thread *th)
{
	const struct rthread_label *lab;
	uint64_t reads = c->stats.rthread.reads;

	if (!st->first->ruby_thread || !t->rth ||
	    rthreads_get(t->rth, st->first->ruby_thread, &lab) ||
	    (c->stats.rthread.reads != reads && !still_alive(t)))
		return;
	th->ruby_thread = lab->id;
	th->ruby_thread_name = lab->name;
}

void collector_on_stack(void *ctx, const struct sampler_stack *st)
{
	struct collector *c = ctx;
	char comm[sizeof(st->first->comm) + 1], label[64];
	struct agg_thread th = {0};
	int64_t values[2];
	struct target *t;
	size_t i, n = 0;
	int ret;

	c->stats.stacks++;
	t = find(c, (pid_t)st->first->hdr.pid);
	if (!t) {
		c->stats.unknown_pid++;
		return;
	}
	check_generation(c, t);
	/* room for the leaf marks (GC phase, GC, JIT) and one root mark */
	ret = reserve(c, st->nframes + 4);
	if (ret) {
		count_dropped(c, ret);
		return;
	}
	memcpy(comm, st->first->comm, sizeof(st->first->comm));
	comm[sizeof(st->first->comm)] = '\0';

	if (st->flags & RP_SAMPLE_NO_EC) {
		c->stats.no_ec++;
		c->buf[n++] = mark(t, "[no Ruby context]");
	} else if (st->flags & RP_SAMPLE_NOT_GVL) {
		/* Ruby < 3.0 only knows the GVL holder's stack. */
		c->stats.no_ec++;
		c->buf[n++] = mark(t, "[running without the GVL]");
	} else if (st->flags & RP_SAMPLE_BAD_EC) {
		c->stats.failed_reads++;
		c->buf[n++] = mark(t, "[invalid Ruby context]");
	} else if (st->nframes == 0 && (st->flags & RP_SAMPLE_READ_FAIL)) {
		c->stats.failed_reads++;
		c->buf[n++] = mark(t, "[stack read failed]");
	} else {
		ret = stack_frames(c, t, st);
		if (ret < 0) {
			count_dropped(c, ret);
			return;
		}
		n = (size_t)ret;
		n = add_leaf_marks(c, t, st, n);
		if (st->flags & RP_SAMPLE_READ_FAIL) {
			c->stats.failed_reads++;
			c->buf[n++] = mark(t, "[partial stack: read failed]");
		} else if (st->flags & RP_SAMPLE_TRUNCATED) {
			c->stats.truncated++;
			snprintf(label, sizeof(label), "[truncated: %u frames]", st->truncated);
			c->buf[n++] = mark(t, label);
		}
	}
	/* a frame that could not be interned (its table is full until the interval ends) */
	for (i = 0; i < n; i++) {
		if (!c->buf[i]) {
			c->stats.agg_dropped++;
			return;
		}
	}
	/* a wall-clock sample is one sample of `weight` nanoseconds */
	values[0] = st->first->hdr.wunit == RP_WEIGHT_NS ? 1 : (int64_t)st->first->hdr.weight;
	values[1] = st->first->hdr.wunit == RP_WEIGHT_NS
			    ? (int64_t)st->first->hdr.weight
			    : (int64_t)st->first->hdr.weight * c->period_ns;
	th.tid = (pid_t)st->first->hdr.tid;
	th.name = comm;
	ruby_thread(c, t, st, &th);
	th.state = wall_state_name(st->first->hdr.state);
	th.syscall = wall_syscall_name(st->first->syscall);
	ret = agg_add_thread(c->agg, t->proc, &th, c->buf, n, values);
	if (ret)
		count_dropped(c, ret);
}

static void live_sym_stats(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	sym_stats_add(ctx, ((const struct target *)(uintptr_t)val)->sym);
}

void collector_stats(const struct collector *c, struct collector_stats *out)
{
	*out = c->stats;
	hmap_foreach(&c->by_pid, live_sym_stats, &out->sym);
}
