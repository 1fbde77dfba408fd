// SPDX-License-Identifier: GPL-2.0-only
/* aggregate.c - frames interned per process, stacks counted per interval. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/array.h"
#include "lib/hmap.h"
#include "lib/text.h"
#include "profile/aggregate.h"
#include "proc/threadctx.h"

/* a thread name kept for a label: Thread#name up to RTHREAD_NAME_MAX, comm 16 */
#define AGG_NAME_MAX 256

/* Interned strings and frames of one process. */
struct frametab {
	char **strs; /* id -> string; 0 is "" */
	uint32_t *str_next;
	size_t nstrs, strs_cap;
	struct hmap str_index; /* (fnv hash, len) -> first id + 1, chained through str_next */
	struct aggregate_frame *frames; /* id -> frame (index 0 unused) */
	size_t nframes, frames_cap;
	struct hmap frame_index; /* packed frame key -> id */
	uint64_t bytes;
};

struct aggregate_proc {
	struct aggregate_proc_info info; /* strings point into the fields below */
	char *container, *service, *ruby_version, *service_version, *environment, *instance_id;
	struct frametab ft;
	uint32_t generation;
	bool exited;
	bool full;	       /* the frame table refused a frame in this interval */
	size_t index;	       /* in agg.procs */
	struct aggregate *agg; /* its owner (for the counters) */
};

struct stack_entry {
	uint64_t hash;
	struct aggregate_proc *proc;
	pid_t tid;
	uint32_t nframes;
	char *thread_name;
	char *ruby_thread, *ruby_thread_name;
	const char *state;   /* static: aggregate_thread.state */
	const char *syscall; /* static: aggregate_thread.syscall */
	char *ctx;	     /* aggregate_thread.ctx's copy, NULL: none */
	uint32_t ctx_len;
	uint32_t *frames;
	uint32_t next; /* index + 1 of the next entry with the same hash, 0: none */
	int64_t values[AGG_MAX_VALUES];
};

struct aggregate {
	size_t nvalues, max_stacks;
	struct aggregate_proc **procs;
	size_t nprocs, procs_cap;
	struct stack_entry *stacks;
	size_t nstacks, stacks_cap;
	struct hmap stack_index; /* hash -> first index + 1, chained through stack_entry.next */
	uint64_t total;
	uint32_t cuts; /* intervals ended */
	struct aggregate_stats stats;
};

/* ---- per-process frame table ------------------------------------------------------------ */

static int frametab_init(struct frametab *ft)
{
	memset(ft, 0, sizeof(*ft));
	/* string 0 is "" and frame 0 is unused, so that ids are never 0 */
	ft->strs_cap = 64;
	ft->strs = calloc(ft->strs_cap, sizeof(*ft->strs));
	ft->str_next = calloc(ft->strs_cap, sizeof(*ft->str_next));
	ft->frames_cap = 64;
	ft->frames = calloc(ft->frames_cap, sizeof(*ft->frames));
	if (!ft->strs || !ft->str_next || !ft->frames)
		return -ENOMEM;
	ft->strs[0] = strdup("");
	if (!ft->strs[0])
		return -ENOMEM;
	ft->nstrs = 1;
	ft->nframes = 1;
	return 0;
}

static void frametab_free(struct frametab *ft)
{
	size_t i;

	if (ft->strs) {
		for (i = 0; i < ft->nstrs; i++)
			free(ft->strs[i]);
	}
	free(ft->strs);
	free(ft->str_next);
	hmap_clear(&ft->str_index);
	free(ft->frames);
	hmap_clear(&ft->frame_index);
	memset(ft, 0, sizeof(*ft));
}

/* Id of string s (clean: text_is_clean), added if new; (uint32_t)-1 on ENOMEM. */
static uint32_t intern_clean(struct frametab *ft, const char *s)
{
	size_t len = strlen(s), ncap;
	uint64_t h = hash_bytes(HASH_INIT, s, len), head = 0;
	uint32_t id;

	if (!len)
		return 0;
	if (hmap_get(&ft->str_index, h, len, &head)) {
		for (id = (uint32_t)head - 1; id; id = ft->str_next[id]) {
			if (strcmp(ft->strs[id], s) == 0)
				return id;
		}
	}
	ncap = ft->strs_cap;
	/* two arrays, one capacity: the second grows only when the first did */
	if (array_reserve(ft->strs, ncap, ft->nstrs + 1, 64) ||
	    array_reserve(ft->str_next, ft->strs_cap, ft->nstrs + 1, 64))
		return (uint32_t)-1;
	id = (uint32_t)ft->nstrs;
	ft->strs[id] = strdup(s);
	if (!ft->strs[id])
		return (uint32_t)-1;
	ft->str_next[id] = head ? (uint32_t)head - 1 : 0;
	if (hmap_put(&ft->str_index, h, len, id + 1)) {
		free(ft->strs[id]);
		return (uint32_t)-1;
	}
	ft->nstrs++;
	ft->bytes += len + 1;
	return id;
}

/*
 * Id of string s, added if new; (uint32_t)-1 on ENOMEM. Names and paths come from the target:
 * what reaches the profile is cleaned first (text_clean), so equal cleaned names are one string.
 */
static uint32_t intern(struct frametab *ft, const char *s)
{
	uint32_t id;
	char *c;

	if (text_is_clean(s))
		return intern_clean(ft, s);
	c = strdup(s);
	if (!c)
		return (uint32_t)-1;
	text_clean(c);
	id = intern_clean(ft, c);
	free(c);
	return id;
}

/* ---- agg ---------------------------------------------------------------------------------- */

struct aggregate *aggregate__new(size_t nvalues, size_t max_stacks)
{
	struct aggregate *a;

	if (nvalues == 0 || nvalues > AGG_MAX_VALUES) {
		errno = EINVAL;
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->nvalues = nvalues;
	a->max_stacks = max_stacks;
	return a;
}

static void free_stacks(struct aggregate *a)
{
	size_t i;

	for (i = 0; i < a->nstacks; i++) {
		free(a->stacks[i].frames);
		free(a->stacks[i].thread_name);
		free(a->stacks[i].ruby_thread);
		free(a->stacks[i].ruby_thread_name);
		free(a->stacks[i].ctx);
	}
	a->nstacks = 0;
	a->total = 0;
	hmap_clear(&a->stack_index);
}

static void proc_free(struct aggregate_proc *p)
{
	if (!p)
		return;
	frametab_free(&p->ft);
	free(p->container);
	free(p->service);
	free(p->ruby_version);
	free(p->service_version);
	free(p->environment);
	free(p->instance_id);
	free(p);
}

void aggregate__free(struct aggregate *a)
{
	size_t i;

	if (!a)
		return;
	free_stacks(a);
	free(a->stacks);
	for (i = 0; i < a->nprocs; i++)
		proc_free(a->procs[i]);
	free(a->procs);
	free(a);
}

struct aggregate_proc *aggregate_proc__new(struct aggregate *a,
					   const struct aggregate_proc_info *info)
{
	struct aggregate_proc *p;

	if (array_reserve(a->procs, a->procs_cap, a->nprocs + 1, 16))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->info = *info;
	p->container = strdup(info->container ? info->container : "");
	p->service = strdup(info->service ? info->service : "");
	p->ruby_version = strdup(info->ruby_version ? info->ruby_version : "");
	if (p->service)
		text_clean(p->service);
	if (p->ruby_version)
		text_clean(p->ruby_version);
	p->service_version = strdup(info->service_version ? info->service_version : "");
	p->environment = strdup(info->environment ? info->environment : "");
	p->instance_id = strdup(info->instance_id ? info->instance_id : "");
	if (!p->container || !p->service || !p->ruby_version || !p->service_version ||
	    !p->environment || !p->instance_id || frametab_init(&p->ft)) {
		proc_free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->info.container = p->container;
	p->info.service = p->service;
	p->info.ruby_version = p->ruby_version;
	p->info.service_version = p->service_version;
	p->info.environment = p->environment;
	p->info.instance_id = p->instance_id;
	p->index = a->nprocs;
	p->agg = a;
	a->procs[a->nprocs++] = p;
	return p;
}

void aggregate_proc_exit(struct aggregate *a, struct aggregate_proc *p)
{
	p->exited = true;
}

const struct aggregate_proc_info *aggregate_proc_info(const struct aggregate_proc *p)
{
	return &p->info;
}

uint32_t aggregate_proc_generation(const struct aggregate_proc *p)
{
	return p->generation;
}

uint32_t aggregate_cuts(const struct aggregate *a)
{
	return a->cuts;
}

uint32_t aggregate_frame_id(struct aggregate_proc *p, enum aggregate_frame_kind kind,
			    const char *name, const char *file, int64_t start_line, int64_t line)
{
	struct frametab *ft = &p->ft;
	uint32_t name_id, file_id, id;
	uint64_t k1, k2, val;
	struct aggregate_frame *f;

	if (ft->nframes >= AGG_MAX_FRAMES_PER_PROC || !ft->strs) {
		p->full = true;
		p->agg->stats.frames_refused++;
		errno = ENOSPC;
		return 0;
	}
	name_id = intern(ft, name ? name : "");
	file_id = intern(ft, file ? file : "");
	if (name_id == (uint32_t)-1 || file_id == (uint32_t)-1) {
		errno = ENOMEM;
		return 0;
	}
	k1 = (uint64_t)name_id << 32 | file_id;
	k2 = (uint64_t)(uint32_t)line << 32 | ((uint64_t)(uint32_t)start_line & 0x3fffffff) << 2 |
	     (uint64_t)kind;
	if (hmap_get(&ft->frame_index, k1, k2, &val))
		return (uint32_t)val;
	if (array_reserve(ft->frames, ft->frames_cap, ft->nframes + 1, 64)) {
		errno = ENOMEM;
		return 0;
	}
	id = (uint32_t)ft->nframes;
	f = &ft->frames[id];
	f->kind = kind;
	f->name = ft->strs[name_id];
	f->file = ft->strs[file_id];
	f->start_line = start_line;
	f->line = line;
	f->build_id = NULL;
	memset(&f->at, 0, sizeof(f->at));
	if (hmap_put(&ft->frame_index, k1, k2, id)) {
		errno = ENOMEM;
		return 0;
	}
	ft->nframes++;
	return id;
}

uint32_t aggregate_native_frame_id(struct aggregate_proc *p, const char *name, const char *file,
				   const char *build_id)
{
	uint32_t id = aggregate_frame_id(p, AGG_FRAME_NATIVE, name, file, 0, 0), bid;

	if (!id || !build_id || !build_id[0] || p->ft.frames[id].build_id)
		return id;
	/* the frame stays without it when memory runs out */
	bid = intern(&p->ft, build_id);
	if (bid != (uint32_t)-1)
		p->ft.frames[id].build_id = p->ft.strs[bid];
	return id;
}

void aggregate_native_frame_at(struct aggregate_proc *p, uint32_t id,
			       const struct aggregate_native_addr *at)
{
	struct aggregate_frame *f = id && id < p->ft.nframes ? &p->ft.frames[id] : NULL;

	if (f && f->kind == AGG_FRAME_NATIVE && !f->at.addr)
		f->at = *at;
}

const struct aggregate_frame *aggregate_frame_get(const struct aggregate_proc *p, uint32_t id)
{
	return id && id < p->ft.nframes ? &p->ft.frames[id] : NULL;
}

static uint64_t stack_hash(const struct aggregate_proc *p, const struct aggregate_thread *th,
			   const uint32_t *frames, size_t n)
{
	uint64_t h = HASH_INIT;

	h = hash_bytes(h, &p, sizeof(p));
	h = hash_bytes(h, &th->tid, sizeof(th->tid));
	/* the NULs keep ("ab", "c") and ("a", "bc") apart */
	h = hash_str(h, th->name);
	h = hash_str(h, th->ruby_thread);
	h = hash_str(h, th->ruby_thread_name);
	h = hash_str(h, th->state);
	h = hash_str(h, th->syscall);
	h = hash_bytes(h, &th->ctx_len, sizeof(th->ctx_len));
	if (th->ctx_len)
		h = hash_bytes(h, th->ctx, th->ctx_len);
	return hash_bytes(h, frames, n * sizeof(*frames));
}

static bool same_thread(const struct stack_entry *e, const struct aggregate_thread *th)
{
	return e->tid == th->tid && strcmp(e->thread_name, th->name) == 0 &&
	       strcmp(e->ruby_thread, th->ruby_thread) == 0 &&
	       strcmp(e->ruby_thread_name, th->ruby_thread_name) == 0 &&
	       strcmp(e->state, th->state) == 0 && strcmp(e->syscall, th->syscall) == 0 &&
	       e->ctx_len == th->ctx_len &&
	       (!th->ctx_len || memcmp(e->ctx, th->ctx, th->ctx_len) == 0);
}

int aggregate_add(struct aggregate *a, struct aggregate_proc *p, pid_t tid, const char *thread_name,
		  const uint32_t *frames, size_t nframes, const int64_t *values)
{
	struct aggregate_thread th = {.tid = tid, .name = thread_name};

	return aggregate_add_thread(a, p, &th, frames, nframes, values);
}

int aggregate_add_thread(struct aggregate *a, struct aggregate_proc *p,
			 const struct aggregate_thread *thread, const uint32_t *frames,
			 size_t nframes, const int64_t *values)
{
	struct aggregate_thread th = {
		.tid = thread->tid,
		.name = thread->name ? thread->name : "",
		.ruby_thread = thread->ruby_thread ? thread->ruby_thread : "",
		.ruby_thread_name = thread->ruby_thread_name ? thread->ruby_thread_name : "",
		.state = thread->state ? thread->state : "",
		.syscall = thread->syscall ? thread->syscall : "",
		.ctx = thread->ctx,
		.ctx_len = thread->ctx ? thread->ctx_len : 0,
	};
	char name[AGG_NAME_MAX], ruby_name[AGG_NAME_MAX];
	struct stack_entry *e;
	uint64_t h, head = 0;
	uint32_t idx;
	size_t i;

	/* thread names are the target's: labels get them cleaned (text.h) */
	th.name = text_clean_copy(th.name, name, sizeof(name));
	th.ruby_thread_name = text_clean_copy(th.ruby_thread_name, ruby_name, sizeof(ruby_name));
	h = stack_hash(p, &th, frames, nframes);
	if (hmap_get(&a->stack_index, h, 0, &head)) {
		for (idx = (uint32_t)head; idx; idx = e->next) {
			e = &a->stacks[idx - 1];
			if (e->hash == h && e->proc == p && e->nframes == nframes &&
			    same_thread(e, &th) &&
			    memcmp(e->frames, frames, nframes * sizeof(*frames)) == 0) {
				for (i = 0; i < a->nvalues; i++)
					e->values[i] += values[i];
				a->total += (uint64_t)values[0];
				return 0;
			}
		}
	}
	if (a->nstacks >= a->max_stacks) {
		a->stats.dropped_full += (uint64_t)values[0];
		return -ENOSPC;
	}
	if (array_reserve(a->stacks, a->stacks_cap, a->nstacks + 1, 256))
		return -ENOMEM;
	e = &a->stacks[a->nstacks];
	memset(e, 0, sizeof(*e));
	e->frames = malloc((nframes ? nframes : 1) * sizeof(*frames));
	e->thread_name = strdup(th.name);
	e->ruby_thread = strdup(th.ruby_thread);
	e->ruby_thread_name = strdup(th.ruby_thread_name);
	if (th.ctx_len) {
		e->ctx = malloc(th.ctx_len);
		if (e->ctx)
			memcpy(e->ctx, th.ctx, th.ctx_len);
		e->ctx_len = (uint32_t)th.ctx_len;
	}
	if (!e->frames || !e->thread_name || !e->ruby_thread || !e->ruby_thread_name ||
	    (th.ctx_len && !e->ctx) || hmap_put(&a->stack_index, h, 0, (uint64_t)a->nstacks + 1)) {
		free(e->frames);
		free(e->thread_name);
		free(e->ruby_thread);
		free(e->ruby_thread_name);
		free(e->ctx);
		return -ENOMEM;
	}
	memcpy(e->frames, frames, nframes * sizeof(*frames));
	e->hash = h;
	e->proc = p;
	e->tid = th.tid;
	e->state = th.state;
	e->syscall = th.syscall;
	e->nframes = (uint32_t)nframes;
	e->next = (uint32_t)head;
	for (i = 0; i < a->nvalues; i++)
		e->values[i] = values[i];
	a->nstacks++;
	a->total += (uint64_t)values[0];
	return 0;
}

void aggregate_foreach(const struct aggregate *a,
		       void (*fn)(void *ctx, const struct aggregate_stack *st), void *ctx)
{
	struct aggregate_stack st;
	size_t i;

	for (i = 0; i < a->nstacks; i++) {
		st.proc = a->stacks[i].proc;
		st.pid = a->stacks[i].proc->info.pid;
		st.tid = a->stacks[i].tid;
		st.thread_name = a->stacks[i].thread_name;
		st.ruby_thread = a->stacks[i].ruby_thread;
		st.ruby_thread_name = a->stacks[i].ruby_thread_name;
		st.state = a->stacks[i].state;
		st.syscall = a->stacks[i].syscall;
		st.ctx = a->stacks[i].ctx;
		st.ctx_len = a->stacks[i].ctx_len;
		st.frames = a->stacks[i].frames;
		st.nframes = a->stacks[i].nframes;
		st.values = a->stacks[i].values;
		fn(ctx, &st);
	}
}

void aggregate_foreach_proc(const struct aggregate *a,
			    void (*fn)(void *ctx, const struct aggregate_proc *p), void *ctx)
{
	size_t i;

	for (i = 0; i < a->nprocs; i++)
		fn(ctx, a->procs[i]);
}

uint64_t aggregate_total(const struct aggregate *a)
{
	return a->total;
}

size_t aggregate_nstacks(const struct aggregate *a)
{
	return a->nstacks;
}

void aggregate_stats(const struct aggregate *a, struct aggregate_stats *out)
{
	size_t i;

	*out = a->stats;
	out->procs = a->nprocs;
	out->stacks = a->nstacks;
	out->interned_frames = 0;
	out->interned_bytes = 0;
	for (i = 0; i < a->nprocs; i++) {
		out->interned_frames += a->procs[i]->ft.nframes - 1;
		out->interned_bytes += a->procs[i]->ft.bytes;
	}
}

void aggregate_cut(struct aggregate *a)
{
	size_t i, n = 0;
	struct aggregate_proc *p;

	a->cuts++;
	free_stacks(a);
	/* A long interval's table of stacks is given back; the next grows again as needed. */
	if (a->stacks_cap > 4096) {
		free(a->stacks);
		a->stacks = NULL;
		a->stacks_cap = 0;
	}
	for (i = 0; i < a->nprocs; i++) {
		p = a->procs[i];
		if (p->exited) {
			proc_free(p);
			a->stats.procs_freed++;
			continue;
		}
		if (p->full) {
			frametab_free(&p->ft);
			if (frametab_init(&p->ft)) {
				/* out of memory: the next frames are refused and counted */
				frametab_free(&p->ft);
			}
			p->full = false;
			p->generation++;
			a->stats.frame_resets++;
		}
		p->index = n;
		a->procs[n++] = p;
	}
	a->nprocs = n;
	if (a->procs_cap > 64 && n < a->procs_cap / 4) {
		a->procs_cap = n > 16 ? n : 16;
		a->procs = realloc(a->procs, a->procs_cap * sizeof(*a->procs)) ?: a->procs;
	}
}

/* pprof export ------------------------------------------------------------------------------ */

struct export_ctx {
	const struct aggregate *a;
	struct pprof *p;
	const char *service;
	unsigned int flags; /* AGG_PPROF_* */
	uint64_t **locs;    /* per process index: frame id -> location id (0: not yet added) */
	uint64_t maps[5];   /* mapping per frame kind */
	uint64_t *buf;
	size_t buf_cap;
	int err;
};

static const char *const kind_mapping[] = {
	[AGG_FRAME_RUBY] = "[ruby]",
	[AGG_FRAME_CFUNC] = "[ruby cfunc]",
	[AGG_FRAME_MARK] = "[rubyprofd]",
	[AGG_FRAME_NATIVE] = "[native]",
};

static uint64_t frame_location(struct export_ctx *x, const struct aggregate_proc *proc, uint32_t id)
{
	const struct aggregate_frame *f = aggregate_frame_get(proc, id);
	uint64_t fn, *locs;

	if (!f)
		return 0;
	if (!x->locs[proc->index]) {
		x->locs[proc->index] = calloc(proc->ft.nframes, sizeof(uint64_t));
		if (!x->locs[proc->index])
			return 0;
	}
	locs = x->locs[proc->index];
	if (locs[id])
		return locs[id];
	if (!x->maps[f->kind] && !(f->kind == AGG_FRAME_NATIVE && f->file[0])) {
		x->maps[f->kind] = pprof_mapping(x->p, 0, 0, 0, kind_mapping[f->kind], "");
		if (!x->maps[f->kind])
			return 0;
	}
	/* No system name: pprof then takes the name as already demangled (its C++ demangler turns
	 * Ruby labels such as "<main>" into ""). */
	fn = pprof_function(x->p, f->name, "", f->file, f->start_line);
	if (!fn)
		return 0;
	/* a native frame's mapping is its object where the process mapped it (interned: one per
	 * object and address, which forked workers share), its address the function's entry */
	if (f->kind == AGG_FRAME_NATIVE && f->file[0])
		locs[id] = pprof_location(x->p,
					  pprof_mapping(x->p, f->at.map_start, f->at.map_limit,
							f->at.map_offset, f->file,
							f->build_id ? f->build_id : ""),
					  f->at.addr, fn, f->line);
	else
		locs[id] = pprof_location(x->p, x->maps[f->kind], 0, fn, f->line);
	return locs[id];
}

static void export_stack(void *ctx, const struct aggregate_stack *st)
{
	struct export_ctx *x = ctx;
	const struct aggregate_proc_info *info = &st->proc->info;
	struct pprof_label labels[12 + 2 + THREADCTX_ATTRS_MAX];
	const char *c, *end;
	int64_t values[2];
	size_t i, nl = 0;

	if (x->err)
		return;
	if (x->service && strcmp(info->service, x->service) != 0)
		return;
	if (array_reserve(x->buf, x->buf_cap, st->nframes, 64)) {
		x->err = -ENOMEM;
		return;
	}
	for (i = 0; i < st->nframes; i++) {
		x->buf[i] = frame_location(x, st->proc, st->frames[i]);
		if (!x->buf[i]) {
			x->err = -ENOMEM;
			return;
		}
	}
	labels[nl++] = (struct pprof_label){.key = "pid", .num = st->pid};
	if (info->nspid && info->nspid != st->pid)
		labels[nl++] = (struct pprof_label){.key = "ns_pid", .num = info->nspid};
	if (info->container[0])
		labels[nl++] = (struct pprof_label){.key = "container_id", .str = info->container};
	/* one per process, as the pid (OpenTelemetry's service.instance.id, with '_' for '.') */
	if (info->instance_id[0])
		labels[nl++] = (struct pprof_label){.key = "service_instance_id",
						    .str = info->instance_id};
	labels[nl++] = (struct pprof_label){.key = "tid", .num = st->tid};
	if (!(x->flags & AGG_PPROF_NO_THREAD_NAME)) {
		if (st->thread_name && st->thread_name[0])
			labels[nl++] =
				(struct pprof_label){.key = "thread_name", .str = st->thread_name};
		if (st->ruby_thread && st->ruby_thread[0])
			labels[nl++] =
				(struct pprof_label){.key = "ruby_thread", .str = st->ruby_thread};
		if (st->ruby_thread_name && st->ruby_thread_name[0])
			labels[nl++] = (struct pprof_label){.key = "ruby_thread_name",
							    .str = st->ruby_thread_name};
	}
	/* wall-clock samples: the thread's state (not a thread-name label: always kept) */
	if (st->state && st->state[0])
		labels[nl++] = (struct pprof_label){.key = "thread_state", .str = st->state};
	if (st->syscall && st->syscall[0])
		labels[nl++] = (struct pprof_label){.key = "syscall", .str = st->syscall};
	/* the thread context's: trace_id, span_id, attributes (name NUL value NUL ...) */
	for (c = st->ctx, end = c ? c + st->ctx_len : NULL;
	     c && c < end && nl + 1 < sizeof(labels) / sizeof(labels[0]);) {
		const char *v = c + strlen(c) + 1;

		if (v >= end)
			break;
		labels[nl++] = (struct pprof_label){.key = c, .str = v};
		c = v + strlen(v) + 1;
	}
	values[0] = st->values[0];
	values[1] = x->a->nvalues > 1 ? st->values[1] : 0;
	x->err = pprof_add_sample(x->p, x->buf, st->nframes, values, labels, nl);
}

int aggregate_to_pprof(const struct aggregate *a, struct pprof *p, const char *service,
		       unsigned int flags)
{
	struct export_ctx x = {.a = a, .p = p, .service = service, .flags = flags};
	size_t i;

	x.locs = calloc(a->nprocs ? a->nprocs : 1, sizeof(*x.locs));
	if (!x.locs)
		return -ENOMEM;
	aggregate_foreach(a, export_stack, &x);
	for (i = 0; i < a->nprocs; i++)
		free(x.locs[i]);
	free(x.locs);
	free(x.buf);
	return x.err;
}
