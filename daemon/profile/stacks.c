// SPDX-License-Identifier: GPL-2.0-only
/* stacks.c - sampled stacks to aggregated, symbolized frames. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/array.h"
#include "lib/hmap.h"
#include "native/kallsyms.h"
#include "profile/stacks.h"
#include "profile/wall.h"
#include "ruby/symbolizer.h"
#include "sample/native.h"

/* Entries of a process's frame cache before it is dropped and refilled. */
#define MAX_FRAME_CACHE	  (1u << 18)
/* Native frames of one sample (--stacks mixed), above its Ruby leaf. */
#define MAX_NATIVE_FRAMES 128
/* --native-processes: processes that are no Ruby kept at once, by default. */
#define MAX_ALONE_DEFAULT 1024
/* The object name of kernel frames, as perf names it ([kernel.kallsyms]). */
#define KERNEL_FILE	  "[kernel.kallsyms]"

struct target {
	struct ruby_target t;
	struct symbolizer *sym;
	struct rthreads *rth; /* Ruby thread labels */
	struct aggregate_proc *proc;
	uint32_t generation; /* aggregate_proc_generation() that `frames` holds ids of */
	uint32_t cuts;	     /* aggregate_cuts() when `frames` was started */
	uint64_t sym_gen;    /* symbolizer_generation() when `frames` was started */
	int pidfd;	     /* the process itself (not its pid): -1 when it could not be opened */
	bool alone;	     /* a process that is no Ruby (--native-processes): no sym, no rth */
	bool ignored;	     /* alone, and its service said to leave it alone */
	struct procctx pc;   /* its OpenTelemetry process context */
	struct hmap frames;  /* (addr, pc or caller frame id) -> agg frame id */
};

/* A CPU's last kernel stack (--kernel-stacks), until the sample it belongs to arrives. */
struct kpending {
	bool valid;
	uint32_t seq, pid, tid, n;
	uint64_t ips[RP_KSTACK_MAX];
};

/*
 * The frame ids of a CPU's last stack, for its next stack when that is a delta of it (the root
 * end shared, sampler_stack.nshared): a shared frame resolves to the id it had, so it is not
 * looked up again. Only ids that a lookup would give again are reused: those the frame cache
 * holds (a failed or provisional name is looked up each time), while the cache is the same.
 */
struct cpu_ids {
	uint32_t *ids; /* c->buf of that stack before the hidden frames were dropped, root first */
	uint32_t n, cap; /* ids, and room */
	uint32_t stable; /* ids[0, stable) are all in the frame cache */
	uint32_t seq;	 /* the stack's sample */
	pid_t pid;	 /* its process; 0: nothing kept */
	uint32_t generation, cuts;
	uint64_t sym_gen; /* the target's sym_gen when kept */
	uint64_t resets;  /* cache_resets when kept */
};

/* enum sym_frame_kind values fit below it: c->kind[i] carries it when frame i is in the cache. */
#define KIND_CACHED 0x80

struct stacks {
	struct aggregate *agg;
	int64_t period_ns;
	struct hmap by_pid; /* pid -> struct target * */
	size_t live, profiled;
	uint32_t *buf; /* frame ids of the stack being added */
	uint8_t *kind; /* enum sym_frame_kind of its frames, and KIND_CACHED */
	size_t buf_cap;
	struct cpu_ids *cpus; /* by CPU, grown to the highest seen */
	size_t ncpus;
	struct stacks_stats stats;
	struct native *native;	/* --stacks mixed; NULL otherwise */
	bool kernel_on;		/* --kernel-stacks */
	struct kallsyms *ksyms; /* its names; NULL when /proc/kallsyms could not be read */
	struct kpending *kcpus; /* by CPU, grown to the highest seen */
	size_t nkcpus;
	bool alone_on; /* --native-processes */
	size_t alone_max, nalone;
	stacks_identify_fn identify;
	void *identify_ctx;
};

struct stacks *stacks__new(struct aggregate *agg, int64_t period_ns)
{
	struct stacks *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->agg = agg;
	c->period_ns = period_ns;
	return c;
}

void stacks_set_period(struct stacks *c, int64_t period_ns)
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
	procctx_release(&t->pc);
	hmap_clear(&t->frames);
	free(t);
}

static void free_target(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	target_free((struct target *)(uintptr_t)val);
}

void stacks__free(struct stacks *c)
{
	if (!c)
		return;
	hmap_foreach(&c->by_pid, free_target, NULL);
	hmap_clear(&c->by_pid);
	for (size_t i = 0; i < c->ncpus; i++)
		free(c->cpus[i].ids);
	free(c->cpus);
	free(c->buf);
	free(c->kind);
	native__free(c->native);
	kallsyms__free(c->ksyms);
	free(c->kcpus);
	free(c);
}

static struct target *find(const struct stacks *c, pid_t pid)
{
	uint64_t val;

	return hmap_get(&c->by_pid, (uint64_t)pid, 0, &val) ? (struct target *)(uintptr_t)val
							    : NULL;
}

/* A kept Ruby (not a process kept for its native samples alone, which has no symbolizer). */
static struct target *find_ruby(const struct stacks *c, pid_t pid)
{
	struct target *t = find(c, pid);

	return t && !t->alone ? t : NULL;
}

size_t stacks_count(const struct stacks *c)
{
	return c->live;
}

size_t stacks_profiled(const struct stacks *c)
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

void stacks_remove(struct stacks *c, pid_t pid)
{
	struct target *t = find(c, pid);

	if (!t)
		return;
	/* the next process with this pid has other frames at the same addresses */
	for (size_t i = 0; i < c->ncpus; i++)
		if (c->cpus[i].pid == pid)
			c->cpus[i].pid = 0;
	/* Its samples so far are interned in the aggregate, which keeps them until the interval
	 * ends; the symbolizer and caches die with the process. */
	aggregate_proc_exit(c->agg, t->proc);
	if (c->native)
		native_forget(c->native, pid);
	hmap_del(&c->by_pid, (uint64_t)pid, 0, NULL);
	sym_stats_add(&c->stats.sym, t->sym);
	if (t->alone)
		c->nalone--;
	else
		c->live--;
	target_free(t);
}

static struct aggregate_proc_info proc_info(const struct ruby_target *rt, const char *service,
					    const struct procctx *pc)
{
	return (struct aggregate_proc_info){
		.pid = rt->pid,
		.nspid = rt->nspid,
		.container = rt->container_id,
		.service = service,
		.ruby_version = rt->version,
		.service_version = pc->attrs.service_version,
		.environment = pc->attrs.environment,
		.instance_id = pc->attrs.instance_id,
	};
}

int stacks_add(struct stacks *c, const struct ruby_target *rt, const char *service,
	       struct procctx *pc)
{
	struct aggregate_proc_info info;
	struct target *t;

	/* A pid seen again is a new process (pid reuse, or a validated fork child). */
	stacks_remove(c, rt->pid);
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
	if (pc) {
		t->pc = *pc;
		memset(pc, 0, sizeof(*pc));
	}
	info = proc_info(rt, service, &t->pc);
	t->proc = t->sym && t->rth ? aggregate_proc__new(c->agg, &info) : NULL;
	if (!t->proc) {
		target_free(t);
		return -ENOMEM;
	}
	if (hmap_put(&c->by_pid, (uint64_t)rt->pid, 0, (uintptr_t)t)) {
		aggregate_proc_exit(c->agg, t->proc);
		target_free(t);
		return -ENOMEM;
	}
	c->live++;
	c->profiled++;
	return 0;
}

int stacks_update(struct stacks *c, const struct ruby_target *rt)
{
	struct target *t = find_ruby(c, rt->pid);

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

int stacks_fork(struct stacks *c, pid_t child, pid_t parent, struct ruby_target *out)
{
	struct target *pt = find_ruby(c, parent);
	struct ruby_target rt;

	if (!pt)
		return -ENOENT;
	rt = pt->t;
	rt.pid = child;
	/* the child's own namespace pid is read when it is validated */
	rt.nspid = pt->t.nspid == pt->t.pid ? child : 0;
	if (out)
		*out = rt;
	/* the parent's context is not the child's (writers map it MADV_DONTFORK) */
	return stacks_add(c, &rt, aggregate_proc_info(pt->proc)->service, NULL);
}

struct foreach_ruby {
	void (*fn)(void *ctx, const struct ruby_target *t, struct procctx *pc);
	void *ctx;
};

static void each_ruby(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct foreach_ruby *x = ctx;
	struct target *t = (struct target *)(uintptr_t)val;

	if (!t->alone)
		x->fn(x->ctx, &t->t, &t->pc);
}

void stacks_foreach_ruby(struct stacks *c,
			 void (*fn)(void *ctx, const struct ruby_target *t, struct procctx *pc),
			 void *ctx)
{
	struct foreach_ruby x = {fn, ctx};

	hmap_foreach(&c->by_pid, each_ruby, &x);
}

int stacks_relabel(struct stacks *c, pid_t pid, const char *service)
{
	struct target *t = find_ruby(c, pid);
	struct aggregate_proc_info info;
	struct aggregate_proc *np;

	if (!t)
		return -ENOENT;
	info = proc_info(&t->t, service ? service : aggregate_proc_info(t->proc)->service, &t->pc);
	np = aggregate_proc__new(c->agg, &info);
	if (!np)
		return -ENOMEM;
	aggregate_proc_exit(c->agg, t->proc);
	t->proc = np;
	/* frame ids cached for the old process are not the new one's */
	hmap_clear(&t->frames);
	t->generation = UINT32_MAX;
	for (size_t i = 0; i < c->ncpus; i++)
		if (c->cpus[i].pid == pid)
			c->cpus[i].pid = 0;
	return 0;
}

static uint32_t mark(struct target *t, const char *name)
{
	return aggregate_frame_id(t->proc, AGG_FRAME_MARK, name, "", 0, 0);
}

/*
 * A cached frame id is only valid while the process's frame table is the same, and only for one
 * interval: in the next, each frame is symbolized again on its first sight, so that the
 * symbolizer checks its iseq is still the one cached (GC frees iseqs and reuses addresses).
 */
static void check_generation(struct stacks *c, struct target *t)
{
	uint32_t gen = aggregate_proc_generation(t->proc), cuts = aggregate_cuts(c->agg);
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

/* Whether a Ruby frame starts a VM invocation (rb_vm_exec): RP_FRAME_FLAG_FINISH. */
static bool is_finish(const struct rp_frame *f)
{
	return (f->info >> RP_FRAME_KIND_SHIFT) & RP_FRAME_FLAG_FINISH;
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

static uint32_t iseq_frame(struct stacks *c, struct target *t, const struct rp_frame *f,
			   enum iseq_type *type, int *internal, bool *cached)
{
	uint64_t pc = rp_frame_pc(f), key1, key2, val;
	int jit = (f->info >> RP_FRAME_KIND_SHIFT) & RP_FRAME_FLAG_JIT, err;
	struct sym_iseq si;
	uint32_t id;

	iseq_key(f, &key1, &key2);
	*cached = true;
	if (hmap_get(&t->frames, key1, key2, &val)) {
		*type = (enum iseq_type)((val >> 32) & 0xff);
		*internal = !!(val & FRAME_INTERNAL);
		return (uint32_t)val;
	}
	*cached = false;
	*internal = 0;
	if (has_me(f))
		err = symbolizer_method_frame(t->sym, f->addr, pc, jit, f->ep, &si);
	else
		err = symbolizer_iseq(t->sym, f->addr, pc, jit, f->ep, &si);
	if (err || !still_alive(t)) {
		c->stats.frames_failed++;
		*type = ISEQ_TYPE_METHOD;
		return mark(t, "[unknown Ruby frame]");
	}
	*type = si.type;
	*internal = si.internal;
	id = aggregate_frame_id(t->proc, AGG_FRAME_RUBY, si.label, si.path, si.first_lineno,
				si.line);
	/* a block of a method run under several owners: named through its own frame each time */
	if (!id || !si.label_final || (si.owner_varies && !has_me(f)))
		return id;
	if (t->frames.len >= MAX_FRAME_CACHE) {
		hmap_clear(&t->frames);
		c->stats.cache_resets++;
	}
	*cached = hmap_put(&t->frames, key1, key2,
			   (uint64_t)si.type << 32 | (si.internal ? FRAME_INTERNAL : 0) | id) == 0;
	return id;
}

static uint32_t cfunc_frame(struct stacks *c, struct target *t, const struct rp_frame *f,
			    const struct caller *caller, bool *cached)
{
	const char *name;
	uint64_t val;
	uint32_t id;

	/* The same C function has the path and line of each of its callers. */
	*cached = true;
	if (hmap_get(&t->frames, f->addr, (1ULL << 62) | caller->frame, &val))
		return (uint32_t)val;
	*cached = false;
	if (symbolizer_cfunc(t->sym, f->addr, &name) || !still_alive(t)) {
		/* not cached: the name may be readable later (a booting Ruby's symbol table) */
		c->stats.frames_failed++;
		return aggregate_frame_id(t->proc, AGG_FRAME_CFUNC, "[unknown C function]",
					  caller->path, 0, caller->line);
	}
	id = aggregate_frame_id(t->proc, AGG_FRAME_CFUNC, name, caller->path, 0, caller->line);
	if (!id)
		return 0;
	if (t->frames.len >= MAX_FRAME_CACHE) {
		hmap_clear(&t->frames);
		c->stats.cache_resets++;
	}
	*cached = hmap_put(&t->frames, f->addr, (1ULL << 62) | caller->frame, id) == 0;
	return id;
}

/*
 * An <internal:...> frame (4.0+) as Ruby shows it: a C method, its method's name at its caller's
 * path and line; at the root (no caller), where it is.
 */
static uint32_t internal_frame(struct stacks *c, struct target *t, uint32_t ruby_id,
			       const struct caller *caller)
{
	const struct aggregate_frame *af;
	uint64_t val;
	uint32_t id;

	if (!caller->frame)
		return ruby_id;
	if (hmap_get(&t->frames, ruby_id, (1ULL << 60) | caller->frame, &val))
		return (uint32_t)val;
	af = aggregate_frame_get(t->proc, ruby_id);
	id = aggregate_frame_id(t->proc, AGG_FRAME_CFUNC, af->name, caller->path, 0, caller->line);
	if (!id)
		return 0;
	if (t->frames.len >= MAX_FRAME_CACHE) {
		hmap_clear(&t->frames);
		c->stats.cache_resets++;
	}
	hmap_put(&t->frames, ruby_id, (1ULL << 60) | caller->frame, id);
	return id;
}

/* The kept ids of st's CPU when st is a delta of that stack, in this process and cache; or NULL. */
static struct cpu_ids *base_ids(struct stacks *c, const struct target *t,
				const struct sampler_stack *st)
{
	struct cpu_ids *p;

	if (!st->nshared || st->first->cpu >= c->ncpus)
		return NULL;
	p = &c->cpus[st->first->cpu];
	if (p->pid != (pid_t)st->first->hdr.pid || p->seq != st->first->base_seq ||
	    p->generation != t->generation || p->cuts != t->cuts || p->sym_gen != t->sym_gen ||
	    p->resets != c->stats.cache_resets || p->n < st->nshared)
		return NULL;
	return p;
}

/*
 * How many frames at the root end of st take their ids from base (st->frames[nframes - k,
 * nframes)): the shared ones that were cached, but the leaf-most shared frame when a frame
 * follows it (whether a frame is hidden depends on the frame above it, and that one changed).
 */
static size_t reusable(const struct cpu_ids *base, const struct sampler_stack *st)
{
	size_t k = st->nshared < st->nframes ? st->nshared - 1 : st->nshared;

	return k < base->stable ? k : base->stable;
}

/*
 * Keeps the ids of this stack (c->buf before the hidden frames go) for the CPU's next one;
 * resets: cache_resets before it was looked up (a reset meanwhile emptied the cache). A stack
 * with <internal:...> frames is kept with nothing reusable: collapsing them looks at the
 * frames on both sides.
 */
static void keep_ids(struct stacks *c, const struct target *t, const struct sampler_stack *st,
		     uint64_t resets, bool any_internal)
{
	uint32_t cpu = st->first->cpu, *ids, k;
	size_t n = st->nframes, cap;
	struct cpu_ids *p;

	/* the sampler checked cpu against the possible CPUs */
	if (array_extend(c->cpus, c->ncpus, (size_t)cpu + 1))
		return;
	p = &c->cpus[cpu];
	p->pid = 0;
	if (n > p->cap) {
		cap = n < 64 ? 64 : n;
		ids = realloc(p->ids, cap * sizeof(*ids));
		if (!ids)
			return;
		p->ids = ids;
		p->cap = (uint32_t)cap;
	}
	for (k = 0; k < n; k++)
		p->ids[k] = c->buf[n - 1 - k];
	for (k = 0; !any_internal && k < n && (c->kind[n - 1 - k] & KIND_CACHED); k++)
		;
	p->stable = k;
	p->n = (uint32_t)n;
	p->seq = st->first->seq;
	p->pid = (pid_t)st->first->hdr.pid;
	p->generation = t->generation;
	p->cuts = t->cuts;
	p->sym_gen = t->sym_gen;
	p->resets = resets;
}

/*
 * Frames of one stack into c->buf (leaf first), the last `reuse` of them from base as Ruby's backtrace shows them; returns how many,
 * or -ENOSPC (a frame table is full) or -ENOMEM. Pass 1 (leaf to root) names the Ruby frames and, on 3.4+, hides the frame that
 * owns a rescue/ensure clause (Ruby prints the clause under the method's name instead); on 4.0+
 * <internal:...> frames act as C methods (symbolizer_collapse_internal). Pass 2 (root to leaf)
 * gives each C function its caller's path and line. c->kind holds enum sym_frame_kind (and
 * KIND_CACHED). The frames a delta shares with the CPU's last stack keep their ids (base_ids)
 * and are not looked up.
 */
static int resolve_frames(struct stacks *c, struct target *t, const struct sampler_stack *st,
			  const struct cpu_ids *base, size_t reuse)
{
	struct caller caller = {.path = "", .line = 0, .frame = 0};
	uint64_t resets = c->stats.cache_resets;
	size_t lim = st->nframes - reuse;
	const struct rp_frame *f;
	uint64_t k1, k2, val;
	const struct aggregate_frame *af;
	enum iseq_type type;
	int skip_next = 0, internal, any_internal = 0;
	size_t i, n = 0;
	uint32_t id;
	bool cached;

	/* frames [lim, nframes): the base's ids of its root-first [0, reuse), none internal */
	for (i = lim; base && i < st->nframes; i++) {
		c->buf[i] = base->ids[st->nframes - 1 - i];
		c->kind[i] = KIND_CACHED |
			     (rp_frame_kind(&st->frames[i]) != RP_FRAME_KIND_ISEQ ? SYM_FRAME_C
			      : c->buf[i]					  ? SYM_FRAME_RUBY
										  : SYM_FRAME_NONE);
	}
	/*
	 * Method frames carry their method entry, read at the sample: the owners they name are
	 * learned first, so that the blocks above them in this stack are named with them too.
	 */
	for (i = 0; i < lim; i++) {
		f = &st->frames[i];
		if (rp_frame_kind(f) != RP_FRAME_KIND_ISEQ || !has_me(f))
			continue;
		iseq_key(f, &k1, &k2);
		if (!hmap_get(&t->frames, k1, k2, &val))
			symbolizer_method_entry(t->sym, f->addr, f->ep);
	}
	for (i = 0; i < lim; i++) {
		c->kind[i] = SYM_FRAME_C;
		c->buf[i] = 0;
		if (rp_frame_kind(&st->frames[i]) != RP_FRAME_KIND_ISEQ)
			continue;
		id = iseq_frame(c, t, &st->frames[i], &type, &internal, &cached);
		if (!id)
			return errno == ENOSPC ? -ENOSPC : -ENOMEM;
		c->buf[i] = skip_next ? 0 : id;
		c->kind[i] = skip_next	? SYM_FRAME_NONE
			     : internal ? SYM_FRAME_INTERNAL
					: SYM_FRAME_RUBY;
		if (cached)
			c->kind[i] |= KIND_CACHED;
		any_internal |= internal;
		skip_next = t->t.off->qualified_labels &&
			    (type == ISEQ_TYPE_RESCUE || type == ISEQ_TYPE_ENSURE);
	}
	if (any_internal) {
		/* collapsing looks at the frames on both sides, the reused ones too: none then */
		if (reuse)
			return -EAGAIN;
		for (i = 0; i < st->nframes; i++)
			c->kind[i] &= (uint8_t)~KIND_CACHED;
		symbolizer_collapse_internal(c->kind, st->nframes);
	}
	/* the C functions below lim take their caller from the reused Ruby frame nearest them */
	for (i = lim; i < st->nframes; i++) {
		if ((c->kind[i] & ~KIND_CACHED) == SYM_FRAME_RUBY) {
			af = aggregate_frame_get(t->proc, c->buf[i]);
			caller = (struct caller){
				.path = af->file, .line = af->line, .frame = c->buf[i]};
			break;
		}
	}
	for (i = lim; i-- > 0;) {
		switch (c->kind[i] & ~KIND_CACHED) {
		case SYM_FRAME_NONE:
			c->buf[i] = 0;
			break;
		case SYM_FRAME_RUBY:
			af = aggregate_frame_get(t->proc, c->buf[i]);
			caller.path = af->file;
			caller.line = af->line;
			caller.frame = c->buf[i];
			break;
		case SYM_FRAME_INTERNAL:
			c->buf[i] = internal_frame(c, t, c->buf[i], &caller);
			if (!c->buf[i])
				return errno == ENOSPC ? -ENOSPC : -ENOMEM;
			break;
		default:
			c->buf[i] = cfunc_frame(c, t, &st->frames[i], &caller, &cached);
			if (!c->buf[i])
				return errno == ENOSPC ? -ENOSPC : -ENOMEM;
			if (cached)
				c->kind[i] |= KIND_CACHED;
		}
	}
	keep_ids(c, t, st, resets, any_internal);
	c->stats.frames_reused += reuse;
	/* drop the hidden frames, keeping the order; c->kind[k] then says whether kept frame k
	 * starts a VM invocation (mixed stacks, add_native) */
	for (i = 0; i < st->nframes; i++) {
		if (c->buf[i]) {
			c->kind[n] = is_finish(&st->frames[i]);
			c->buf[n++] = c->buf[i];
		}
	}
	return (int)n;
}

static int stack_frames(struct stacks *c, struct target *t, const struct sampler_stack *st)
{
	const struct cpu_ids *base = base_ids(c, t, st);
	int ret = resolve_frames(c, t, st, base, base ? reusable(base, st) : 0);

	return ret == -EAGAIN ? resolve_frames(c, t, st, NULL, 0) : ret;
}

static int reserve(struct stacks *c, size_t n)
{
	size_t cap = c->buf_cap;

	/* two arrays, one capacity: the second grows only when the first did */
	if (array_reserve(c->buf, cap, n, 64) || array_reserve(c->kind, c->buf_cap, n, 64))
		return -ENOMEM;
	return 0;
}

/*
 * Marks on top of the stack, leaf first: a sample taken while this thread ran the garbage
 * collector gets "(garbage collection)" and its phase above the Ruby stack that triggered it;
 * a sample whose leaf frame is JIT code gets "[JIT code]".
 */
static size_t add_leaf_marks(struct stacks *c, struct target *t, const struct sampler_stack *st,
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

/* A native frame of the process: its symbol in its object, or its offset there. */
static uint32_t native_frame(struct stacks *c, struct target *t, uint64_t addr)
{
	struct unwind_sym sym;
	const char *base;
	char name[128];
	uint64_t val;
	uint32_t id;

	if (hmap_get(&t->frames, addr, 3ULL << 62, &val))
		return (uint32_t)val;
	if (native_symbolize(c->native, t->t.pid, addr, &sym) || !sym.module) {
		snprintf(name, sizeof(name), "0x%llx", (unsigned long long)addr);
		return aggregate_native_frame_id(t->proc, name, "", NULL);
	}
	/* no symbol: its address in its object, named by the object's file name ("libz.so.1+0x4a26"),
	 * which tells the frame apart from an equal offset in another object in every view */
	if (!sym.name) {
		base = strrchr(sym.module, '/');
		snprintf(name, sizeof(name), "%.96s+0x%llx", base ? base + 1 : sym.module,
			 (unsigned long long)sym.offset);
	}
	id = aggregate_native_frame_id(t->proc, sym.name ? sym.name : name, sym.module,
				       sym.build_id);
	if (!id)
		return 0;
	aggregate_native_frame_at(t->proc, id,
				  &(struct aggregate_native_addr){.addr = sym.func_addr,
								  .map_start = sym.mod_start,
								  .map_limit = sym.mod_end,
								  .map_offset = sym.mod_offset});
	if (t->frames.len >= MAX_FRAME_CACHE) {
		hmap_clear(&t->frames);
		c->stats.cache_resets++;
	}
	hmap_put(&t->frames, addr, 3ULL << 62, id);
	return id;
}

/* Appends native frames pcs[from, to) (return addresses looked up at their call) to out. */
static size_t put_native(struct stacks *c, struct target *t, const uint64_t *pcs, size_t from,
			 size_t to, uint32_t *out, size_t k)
{
	size_t i;

	for (i = from; i < to; i++)
		out[k++] = native_frame(c, t, i ? pcs[i] - 1 : pcs[i]);
	return k;
}

/*
 * --stacks mixed: the native frames of the sample with its Ruby frames. c->buf holds `lead` leaf
 * marks, `nruby` Ruby frames (c->kind[j]: Ruby frame j starts a VM invocation) and root marks,
 * up to n. The native stack, leaf first, is cut at its rb_vm_exec frames into chunks N0, N1..
 * and the Ruby stack after each frame that starts a VM invocation into segments S0, S1..: the
 * C code of chunk Ni called the VM that ran segment Si, so the stack is N0 S0 N1 S1 ... (the
 * chunk below the outermost rb_vm_exec, main() and the thread's start, is left out: stacks stay
 * rooted at their Ruby root). A native stack unwound only part of the way is marked truncated
 * where it ends, the rest of the Ruby stack under it. When the two do not pair up (rb_vm_exec
 * unknown, frames not flagged), the first form: N0 on top of the Ruby stack.
 * Without the sample's copy (lost) or a Dwfl, the Ruby frames stay alone (counted in
 * native_stats). Returns the new length of c->buf.
 */
static size_t add_native(struct stacks *c, struct target *t, const struct sampler_stack *st,
			 size_t n, size_t lead, size_t nruby)
{
	uint64_t pcs[MAX_NATIVE_FRAMES];
	uint8_t marks[MAX_NATIVE_FRAMES];
	size_t i, j, k = 0, seg, nact = 0, nfin = 0, from, cut[MAX_NATIVE_FRAMES + 1];
	struct unwind_result res;
	uint32_t *out;
	bool stopped, pair;

	if (native_unwind(c->native, t->t.pid, st->first->cpu, st->first->seq, t->t.vm_exec, marks,
			  pcs, MAX_NATIVE_FRAMES, &res))
		return n;
	stopped = res.end == UNWIND_END_STOPPED || res.end == UNWIND_END_MAX;
	/* cut[a]: the a-th rb_vm_exec frame; chunk Na is [cut[a - 1] + 1, cut[a]) */
	for (i = 0; i < res.n; i++) {
		if (marks[i])
			cut[nact++] = i;
	}
	for (j = 0; j < nruby; j++)
		nfin += c->kind[j];
	pair = nact && (nact == nfin || (stopped && nact < nfin));
	/* every native frame, a truncation mark, and the Ruby stack with its marks */
	out = malloc((res.n + 1 + n) * sizeof(*out));
	if (!out)
		return n;
	if (!pair) {
		k = put_native(c, t, pcs, 0, nact ? cut[0] : res.n, out, k);
		if (!nact && stopped)
			out[k++] = mark(t, "[native stack truncated]");
		memcpy(out + k, c->buf, n * sizeof(*out));
		k += n;
		goto done;
	}
	cut[nact] = res.n; /* the chunk after the last rb_vm_exec frame found */
	k = put_native(c, t, pcs, 0, cut[0], out, k);
	memcpy(out + k, c->buf, lead * sizeof(*out));
	k += lead;
	for (j = 0, seg = 0; j < nruby; j++) {
		out[k++] = c->buf[lead + j];
		if (!c->kind[j] || j + 1 == nruby)
			continue;
		/* the end of segment `seg`: chunk seg + 1 goes under it, if it was unwound */
		if (++seg > nact)
			continue;
		from = cut[seg - 1] + 1;
		if (seg < nact) {
			k = put_native(c, t, pcs, from, cut[seg], out, k);
		} else if (stopped) {
			k = put_native(c, t, pcs, from, res.n, out, k);
			out[k++] = mark(t, "[native stack truncated]");
		}
	}
	memcpy(out + k, c->buf + lead + nruby, (n - lead - nruby) * sizeof(*out));
	k += n - lead - nruby;
done:
	if (reserve(c, k)) {
		free(out);
		return n;
	}
	memcpy(c->buf, out, k * sizeof(*out));
	free(out);
	return k;
}

int stacks_enable_native(struct stacks *c, size_t max_procs)
{
	if (c->native)
		return 0;
	c->native = native__new(max_procs);
	return c->native ? 0 : -errno;
}

/* A sample that could not be added, counted by why. */
static void count_dropped(struct stacks *c, int err)
{
	if (err == -ENOSPC)
		c->stats.agg_dropped++;
	else if (err == -ENOMEM)
		c->stats.dropped_nomem++;
	else
		c->stats.dropped_error++;
}

/* ---- kernel frames (--kernel-stacks) ------------------------------------------------------ */

int stacks_enable_kernel(struct stacks *c, const char *kallsyms_path)
{
	if (c->kernel_on)
		return 0;
	c->kernel_on = true;
	/* without names the frames are still added, unnamed (and counted) */
	c->ksyms = kallsyms__new(kallsyms_path);
	if (!c->ksyms)
		return -errno;
	return kallsyms_hidden(c->ksyms) ? -EACCES : 0;
}

static struct kpending *kcpu(struct stacks *c, uint32_t cpu)
{
	if (cpu >= NATIVE_MAX_CPUS || array_extend(c->kcpus, c->nkcpus, (size_t)cpu + 1))
		return NULL;
	return &c->kcpus[cpu];
}

void stacks_on_kstack(void *ctx, const struct rp_kstack *k)
{
	struct stacks *c = ctx;
	struct kpending *p;

	if (!c->kernel_on || k->n > RP_KSTACK_MAX)
		return;
	p = kcpu(c, k->cpu);
	if (!p)
		return;
	/* the one before never met its sample (its user stack was lost) */
	if (p->valid)
		c->stats.kernel_unpaired++;
	p->valid = true;
	p->seq = k->seq;
	p->pid = k->hdr.pid;
	p->tid = k->hdr.tid;
	p->n = k->n;
	memcpy(p->ips, k->ips, k->n * sizeof(*k->ips));
}

/* A kernel frame: its kallsyms name in KERNEL_FILE; an unnamed one is counted each time. */
static uint32_t kernel_frame(struct stacks *c, struct target *t, uint64_t addr)
{
	const char *name;
	uint64_t val;
	uint32_t id;

	/* kernel addresses are never user addresses: no other key has them */
	if (hmap_get(&t->frames, addr, 1ULL << 59, &val))
		return (uint32_t)val;
	name = c->ksyms ? kallsyms_lookup(c->ksyms, addr, NULL) : NULL;
	if (!name) {
		c->stats.kernel_unsymbolized++;
		return aggregate_native_frame_id(t->proc, "[unknown kernel function]", KERNEL_FILE,
						 NULL);
	}
	id = aggregate_native_frame_id(t->proc, name, KERNEL_FILE, NULL);
	if (!id)
		return 0;
	if (t->frames.len >= MAX_FRAME_CACHE) {
		hmap_clear(&t->frames);
		c->stats.cache_resets++;
	}
	hmap_put(&t->frames, addr, 1ULL << 59, id);
	return id;
}

/*
 * The kernel frames of sample (cpu, seq) of thread tid, if its CPU's last kernel stack is that
 * sample's, on top of c->buf[0, n) (leaf first: they are the leaves of the native frames, the
 * system call's entry under the user code that made it). Unnamed frames in a row count as one.
 * Returns the new length.
 */
static size_t add_kernel(struct stacks *c, struct target *t, uint32_t cpu, uint32_t seq,
			 uint32_t tid, size_t n)
{
	struct kpending *p = cpu < c->nkcpus ? &c->kcpus[cpu] : NULL;
	uint32_t ids[RP_KSTACK_MAX], id;
	size_t i, k = 0;

	if (!p || !p->valid)
		return n;
	p->valid = false;
	if (p->seq != seq || p->pid != (uint32_t)t->t.pid || p->tid != tid) {
		c->stats.kernel_unpaired++;
		return n;
	}
	for (i = 0; i < p->n; i++) {
		/* a return address is looked up at its call */
		id = kernel_frame(c, t, i ? p->ips[i] - 1 : p->ips[i]);
		if (k && id && id == ids[k - 1] &&
		    strcmp(aggregate_frame_get(t->proc, id)->name, "[unknown kernel function]") ==
			    0)
			continue;
		ids[k++] = id;
	}
	if (reserve(c, n + k))
		return n;
	memmove(c->buf + k, c->buf, n * sizeof(*c->buf));
	memcpy(c->buf, ids, k * sizeof(*ids));
	c->stats.kernel_stacks++;
	c->stats.kernel_frames += k;
	return n + k;
}

/* ---- processes that are no Ruby (--native-processes) --------------------------------------- */

int stacks_enable_alone(struct stacks *c, size_t max_procs, stacks_identify_fn identify, void *ctx)
{
	if (!c->native)
		return -EINVAL;
	c->alone_on = true;
	c->alone_max = max_procs ? max_procs : MAX_ALONE_DEFAULT;
	c->identify = identify;
	c->identify_ctx = ctx;
	return 0;
}

struct gone {
	pid_t *pids;
	size_t n, max;
};

static void find_gone(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	const struct target *t = (const struct target *)(uintptr_t)val;
	struct gone *g = ctx;

	if (t->alone && g->n < g->max && !still_alive(t))
		g->pids[g->n++] = t->t.pid;
}

void stacks_sweep_alone(struct stacks *c)
{
	struct gone g = {0};
	size_t i;

	if (!c->nalone)
		return;
	g.max = c->nalone;
	g.pids = calloc(g.max, sizeof(*g.pids));
	if (!g.pids)
		return;
	hmap_foreach(&c->by_pid, find_gone, &g);
	for (i = 0; i < g.n; i++)
		stacks_remove(c, g.pids[i]);
	free(g.pids);
}

/* A process that is no Ruby, kept from its first sample on. NULL: at the bound (counted). */
static struct target *alone_target(struct stacks *c, pid_t pid)
{
	char service[128] = "";
	struct aggregate_proc_info info = {.pid = pid, .nspid = pid, .service = service};
	struct target *t;
	int err;

	/* their exits are not reported (only a Ruby's are): the bound makes room for the gone */
	if (c->nalone >= c->alone_max) {
		stacks_sweep_alone(c);
		if (c->nalone >= c->alone_max) {
			c->stats.alone_dropped++;
			return NULL;
		}
	}
	err = c->identify ? c->identify(c->identify_ctx, pid, service, sizeof(service)) : 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->alone = true;
	t->ignored = err == -ECANCELED;
	t->t.pid = pid;
	t->t.nspid = pid;
	t->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (t->pidfd < 0)
		c->stats.no_pidfd++;
	t->proc = aggregate_proc__new(c->agg, &info);
	if (!t->proc || hmap_put(&c->by_pid, (uint64_t)pid, 0, (uintptr_t)t)) {
		if (t->proc)
			aggregate_proc_exit(c->agg, t->proc);
		target_free(t);
		return NULL;
	}
	c->nalone++;
	c->stats.alone_procs++;
	return t;
}

void stacks_forget_alone(struct stacks *c, pid_t pid)
{
	struct target *t = find(c, pid);

	if (t && t->alone)
		stacks_remove(c, pid);
}

/* A sample of a process that is no Ruby: its native stack, unwound to its root, is the sample. */
static void add_alone(struct stacks *c, const struct rp_ustack *u, size_t size)
{
	pid_t pid = (pid_t)u->hdr.pid;
	char comm[sizeof(u->comm) + 1];
	uint64_t pcs[MAX_NATIVE_FRAMES];
	struct aggregate_thread th = {0};
	struct unwind_result res;
	int64_t values[2];
	struct target *t;
	size_t i, n;
	int ret;

	c->stats.alone++;
	t = find(c, pid);
	/* a pid seen again after its process ended: another process */
	if (t && t->alone && !still_alive(t)) {
		stacks_remove(c, pid);
		t = NULL;
	}
	if (!t)
		t = alone_target(c, pid);
	/* a Ruby whose procs entry is not (or no longer) set: its samples come with Ruby stacks */
	if (!t || !t->alone || t->ignored) {
		if (t)
			c->stats.alone_failed++;
		return;
	}
	check_generation(c, t);
	if (native_keep(c->native, u, size) ||
	    native_unwind(c->native, pid, u->cpu, u->seq, 0, NULL, pcs, MAX_NATIVE_FRAMES, &res) ||
	    reserve(c, res.n + 1)) {
		c->stats.alone_failed++;
		return;
	}
	n = put_native(c, t, pcs, 0, res.n, c->buf, 0);
	if (res.end == UNWIND_END_STOPPED || res.end == UNWIND_END_MAX)
		c->buf[n++] = mark(t, "[native stack truncated]");
	if (c->kernel_on)
		n = add_kernel(c, t, u->cpu, u->seq, u->hdr.tid, n);
	for (i = 0; i < n; i++) {
		if (!c->buf[i]) {
			c->stats.agg_dropped++;
			return;
		}
	}
	memcpy(comm, u->comm, sizeof(u->comm));
	comm[sizeof(u->comm)] = '\0';
	values[0] = 1;
	values[1] = c->period_ns;
	th.tid = (pid_t)u->hdr.tid;
	th.name = comm;
	th.state = wall_state_name(u->hdr.state);
	ret = aggregate_add_thread(c->agg, t->proc, &th, c->buf, n, values);
	if (ret)
		count_dropped(c, ret);
}

void stacks_on_ustack(void *ctx, const struct rp_ustack *u, size_t size)
{
	struct stacks *c = ctx;

	if (!c->native)
		return;
	if (u->flags & RP_USTACK_ALONE) {
		if (c->alone_on)
			add_alone(c, u, size);
		return;
	}
	native_keep(c->native, u, size);
}

bool stacks_native_stats(const struct stacks *c, struct native_stats *out)
{
	if (!c->native)
		return false;
	native_stats(c->native, out);
	return true;
}

/*
 * The sample's Ruby thread, if its EC named one that is a live Ruby thread. What was read from
 * the process now (not cached) is trusted only if the process still lives (see still_alive).
 */
static void ruby_thread(struct stacks *c, struct target *t, const struct sampler_stack *st,
			struct aggregate_thread *th)
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

void stacks_on_stack(void *ctx, const struct sampler_stack *st)
{
	struct stacks *c = ctx;
	char comm[sizeof(st->first->comm) + 1], label[64];
	struct aggregate_thread th = {0};
	char tctx[THREADCTX_LABELS_MAX];
	int64_t values[2];
	size_t i, n = 0, lead = 0, nruby = 0;
	struct target *t;
	int ret;

	c->stats.stacks++;
	t = find_ruby(c, (pid_t)st->first->hdr.pid);
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
		n = nruby = (size_t)ret;
		n = add_leaf_marks(c, t, st, n);
		/* A thread between its start and its first frame, or past its last: a sample with
		 * no location at all would be dropped by pprof's readers, so it gets a mark. */
		if (n == 0) {
			c->stats.empty_stacks++;
			c->buf[n++] = mark(t, "[no Ruby frames]");
		}
		lead = n - nruby;
		if (st->flags & RP_SAMPLE_READ_FAIL) {
			c->stats.failed_reads++;
			c->buf[n++] = mark(t, "[partial stack: read failed]");
		} else if (st->flags & RP_SAMPLE_TRUNCATED) {
			c->stats.truncated++;
			snprintf(label, sizeof(label), "[truncated: %u frames]", st->truncated);
			c->buf[n++] = mark(t, label);
		}
	}
	if (c->native)
		n = add_native(c, t, st, n, lead, nruby);
	if (c->kernel_on)
		n = add_kernel(c, t, st->first->cpu, st->first->seq, st->first->hdr.tid, n);
	/* a frame that could not be interned (its table is full until the interval ends) */
	for (i = 0; i < n; i++) {
		if (!c->buf[i]) {
			c->stats.agg_dropped++;
			return;
		}
	}
	/* a wall-clock sample is one sample (or a thread's reused visits) of `weight` nanoseconds */
	values[0] = st->first->hdr.wunit != RP_WEIGHT_NS ? (int64_t)st->first->hdr.weight
		    : st->samples			 ? (int64_t)st->samples
							 : 1;
	values[1] = st->first->hdr.wunit == RP_WEIGHT_NS
			    ? (int64_t)st->first->hdr.weight
			    : (int64_t)st->first->hdr.weight * c->period_ns;
	th.tid = (pid_t)st->first->hdr.tid;
	th.name = comm;
	ruby_thread(c, t, st, &th);
	th.state = wall_state_name(st->first->hdr.state);
	th.syscall = wall_syscall_name(st->first->syscall);
	/* its OpenTelemetry thread context: names from the process context's key map */
	if (st->tctx) {
		th.ctx = tctx;
		th.ctx_len = threadctx_labels(st->tctx, st->tctx_len, st->tctx_flags,
					      t->pc.published_at_ns ? &t->pc.attrs : NULL, tctx,
					      &c->stats.tctx);
	}
	ret = aggregate_add_thread(c->agg, t->proc, &th, c->buf, n, values);
	if (ret)
		count_dropped(c, ret);
}

static void live_sym_stats(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	sym_stats_add(ctx, ((const struct target *)(uintptr_t)val)->sym);
}

void stacks_stats(const struct stacks *c, struct stacks_stats *out)
{
	*out = c->stats;
	hmap_foreach(&c->by_pid, live_sym_stats, &out->sym);
}
