// SPDX-License-Identifier: GPL-2.0-only
/* aggregate.c - interned frames and counted stacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "hmap.h"

struct stack_entry {
	uint64_t hash;
	pid_t pid, tid;
	uint32_t thread_name; /* string id */
	uint32_t nframes;
	uint32_t *frames;
	uint64_t count;
};

struct agg {
	/* strings: id -> string, (hash, ...) lookups through `str_index` */
	char **strs;
	size_t nstrs, strs_cap;
	struct hmap
		str_index; /* (fnv hash, len) -> first id + 1 of that key; chained by str_next */
	uint32_t *str_next;

	struct agg_frame *frames; /* id -> frame (index 0 unused) */
	size_t nframes, frames_cap;
	struct hmap frame_index; /* packed frame key -> id */

	struct stack_entry *stacks;
	size_t nstacks, stacks_cap, max_stacks;
	uint32_t *slots; /* open addressing over stacks: index + 1, 0 = empty */
	size_t nslots;

	struct hmap procs; /* pid -> nspid << 32 | container string id */

	uint64_t total, dropped;
};

static uint64_t fnv1a(const void *data, size_t len, uint64_t h)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

struct agg *agg__new(size_t max_stacks)
{
	struct agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->max_stacks = max_stacks;
	/* string 0 is "" and frame 0 is unused, so that ids are never 0 */
	a->strs_cap = 256;
	a->strs = calloc(a->strs_cap, sizeof(*a->strs));
	a->str_next = calloc(a->strs_cap, sizeof(*a->str_next));
	a->frames_cap = 256;
	a->frames = calloc(a->frames_cap, sizeof(*a->frames));
	if (!a->strs || !a->str_next || !a->frames)
		goto fail;
	a->strs[0] = strdup("");
	if (!a->strs[0])
		goto fail;
	a->nstrs = 1;
	a->nframes = 1;
	return a;
fail:
	agg__free(a);
	errno = ENOMEM;
	return NULL;
}

void agg__free(struct agg *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->nstrs; i++)
		free(a->strs[i]);
	free(a->strs);
	free(a->str_next);
	hmap_clear(&a->str_index);
	free(a->frames);
	hmap_clear(&a->frame_index);
	for (i = 0; i < a->nstacks; i++)
		free(a->stacks[i].frames);
	free(a->stacks);
	free(a->slots);
	hmap_clear(&a->procs);
	free(a);
}

/* Id of string s, added if new; (uint32_t)-1 on ENOMEM. */
static uint32_t intern(struct agg *a, const char *s)
{
	size_t len = strlen(s), ncap;
	uint64_t h = fnv1a(s, len, FNV_INIT), head = 0;
	uint32_t id, *nn;
	char **ns;

	if (!len)
		return 0;
	if (hmap_get(&a->str_index, h, len, &head)) {
		for (id = (uint32_t)head - 1; id; id = a->str_next[id]) {
			if (strcmp(a->strs[id], s) == 0)
				return id;
		}
	}
	if (a->nstrs == a->strs_cap) {
		ncap = a->strs_cap * 2;
		ns = realloc(a->strs, ncap * sizeof(*ns));
		if (!ns)
			return (uint32_t)-1;
		a->strs = ns;
		nn = realloc(a->str_next, ncap * sizeof(*nn));
		if (!nn)
			return (uint32_t)-1;
		a->str_next = nn;
		a->strs_cap = ncap;
	}
	id = (uint32_t)a->nstrs;
	a->strs[id] = strdup(s);
	if (!a->strs[id])
		return (uint32_t)-1;
	a->str_next[id] = head ? (uint32_t)head - 1 : 0;
	if (hmap_put(&a->str_index, h, len, id + 1)) {
		free(a->strs[id]);
		return (uint32_t)-1;
	}
	a->nstrs++;
	return id;
}

uint32_t agg_frame_id(struct agg *a, enum agg_frame_kind kind, const char *name, const char *file,
		      int64_t start_line, int64_t line)
{
	uint32_t name_id = intern(a, name ? name : ""), file_id = intern(a, file ? file : "");
	uint64_t k1, k2, val;
	struct agg_frame *nf, *f;
	uint32_t id;

	if (name_id == (uint32_t)-1 || file_id == (uint32_t)-1)
		return 0;
	k1 = (uint64_t)name_id << 32 | file_id;
	k2 = (uint64_t)(uint32_t)line << 32 | ((uint64_t)(uint32_t)start_line & 0x3fffffff) << 2 |
	     (uint64_t)kind;
	if (hmap_get(&a->frame_index, k1, k2, &val))
		return (uint32_t)val;
	if (a->nframes == a->frames_cap) {
		nf = realloc(a->frames, a->frames_cap * 2 * sizeof(*nf));
		if (!nf)
			return 0;
		a->frames = nf;
		a->frames_cap *= 2;
	}
	id = (uint32_t)a->nframes;
	f = &a->frames[id];
	f->kind = kind;
	f->name = a->strs[name_id];
	f->file = a->strs[file_id];
	f->start_line = start_line;
	f->line = line;
	if (hmap_put(&a->frame_index, k1, k2, id))
		return 0;
	a->nframes++;
	return id;
}

const struct agg_frame *agg_frame_get(const struct agg *a, uint32_t id)
{
	return id && id < a->nframes ? &a->frames[id] : NULL;
}

static uint64_t stack_hash(pid_t pid, pid_t tid, uint32_t tname, const uint32_t *frames, size_t n)
{
	uint64_t h = FNV_INIT;

	h = fnv1a(&pid, sizeof(pid), h);
	h = fnv1a(&tid, sizeof(tid), h);
	h = fnv1a(&tname, sizeof(tname), h);
	return fnv1a(frames, n * sizeof(*frames), h);
}

static int rehash(struct agg *a)
{
	size_t nslots = a->nslots ? a->nslots * 2 : 1024, i, j;
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < a->nstacks; i++) {
		for (j = a->stacks[i].hash & (nslots - 1); slots[j]; j = (j + 1) & (nslots - 1))
			;
		slots[j] = (uint32_t)i + 1;
	}
	free(a->slots);
	a->slots = slots;
	a->nslots = nslots;
	return 0;
}

int agg_set_process(struct agg *a, pid_t pid, pid_t nspid, const char *container)
{
	uint32_t cid = intern(a, container ? container : "");

	if (cid == (uint32_t)-1)
		return -ENOMEM;
	return hmap_put(&a->procs, (uint64_t)pid, 0, (uint64_t)(uint32_t)nspid << 32 | cid);
}

int agg_add(struct agg *a, pid_t pid, pid_t tid, const char *thread_name, const uint32_t *frames,
	    size_t nframes, uint64_t count)
{
	uint32_t tname = intern(a, thread_name ? thread_name : "");
	struct stack_entry *e, *ns;
	uint64_t h;
	size_t j;

	if (tname == (uint32_t)-1)
		return -ENOMEM;
	h = stack_hash(pid, tid, tname, frames, nframes);
	if (a->nslots) {
		for (j = h & (a->nslots - 1); a->slots[j]; j = (j + 1) & (a->nslots - 1)) {
			e = &a->stacks[a->slots[j] - 1];
			if (e->hash == h && e->pid == pid && e->tid == tid &&
			    e->thread_name == tname && e->nframes == nframes &&
			    memcmp(e->frames, frames, nframes * sizeof(*frames)) == 0) {
				e->count += count;
				a->total += count;
				return 0;
			}
		}
	}
	if (a->nstacks >= a->max_stacks) {
		a->dropped += count;
		return -ENOSPC;
	}
	if ((a->nstacks + 1) * 2 > a->nslots && rehash(a))
		return -ENOMEM;
	if (a->nstacks == a->stacks_cap) {
		ns = realloc(a->stacks, (a->stacks_cap ? a->stacks_cap * 2 : 256) * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		a->stacks = ns;
		a->stacks_cap = a->stacks_cap ? a->stacks_cap * 2 : 256;
	}
	e = &a->stacks[a->nstacks];
	e->frames = malloc((nframes ? nframes : 1) * sizeof(*frames));
	if (!e->frames)
		return -ENOMEM;
	memcpy(e->frames, frames, nframes * sizeof(*frames));
	e->hash = h;
	e->pid = pid;
	e->tid = tid;
	e->thread_name = tname;
	e->nframes = (uint32_t)nframes;
	e->count = count;
	for (j = h & (a->nslots - 1); a->slots[j]; j = (j + 1) & (a->nslots - 1))
		;
	a->slots[j] = (uint32_t)a->nstacks + 1;
	a->nstacks++;
	a->total += count;
	return 0;
}

void agg_foreach(const struct agg *a, void (*fn)(void *ctx, const struct agg_stack *st), void *ctx)
{
	struct agg_stack st;
	size_t i;

	for (i = 0; i < a->nstacks; i++) {
		st.pid = a->stacks[i].pid;
		st.tid = a->stacks[i].tid;
		st.thread_name = a->strs[a->stacks[i].thread_name];
		st.frames = a->stacks[i].frames;
		st.nframes = a->stacks[i].nframes;
		st.count = a->stacks[i].count;
		fn(ctx, &st);
	}
}

uint64_t agg_total(const struct agg *a)
{
	return a->total;
}

uint64_t agg_dropped(const struct agg *a)
{
	return a->dropped;
}

size_t agg_nstacks(const struct agg *a)
{
	return a->nstacks;
}

/* pprof export ------------------------------------------------------------------------------ */

struct export_ctx {
	const struct agg *a;
	struct pprof *p;
	int64_t period;
	uint64_t *locs;	  /* frame id -> location id (0: not yet added) */
	uint64_t maps[4]; /* mapping per frame kind */
	uint64_t *buf;
	size_t buf_cap;
	int err;
};

static const char *const kind_mapping[] = {
	[AGG_FRAME_RUBY] = "[ruby]",
	[AGG_FRAME_CFUNC] = "[ruby cfunc]",
	[AGG_FRAME_MARK] = "[rubyprofd]",
};

static uint64_t frame_location(struct export_ctx *x, uint32_t id)
{
	const struct agg_frame *f = &x->a->frames[id];
	uint64_t fn;

	if (x->locs[id])
		return x->locs[id];
	if (!x->maps[f->kind]) {
		x->maps[f->kind] = pprof_mapping(x->p, 0, 0, 0, kind_mapping[f->kind], "");
		if (!x->maps[f->kind])
			return 0;
	}
	/* No system name: pprof then takes the name as already demangled (its C++ demangler turns
	 * Ruby labels such as "<main>" into ""). */
	fn = pprof_function(x->p, f->name, "", f->file, f->start_line);
	if (!fn)
		return 0;
	x->locs[id] = pprof_location(x->p, x->maps[f->kind], 0, fn, f->line);
	return x->locs[id];
}

static void export_stack(void *ctx, const struct agg_stack *st)
{
	struct export_ctx *x = ctx;
	struct pprof_label labels[5];
	int64_t values[2];
	size_t i, nl = 0;
	uint64_t *nb, proc = 0;
	pid_t nspid;
	uint32_t container;

	if (x->err)
		return;
	if (st->nframes > x->buf_cap) {
		nb = realloc(x->buf, st->nframes * sizeof(*nb));
		if (!nb) {
			x->err = -ENOMEM;
			return;
		}
		x->buf = nb;
		x->buf_cap = st->nframes;
	}
	for (i = 0; i < st->nframes; i++) {
		x->buf[i] = frame_location(x, st->frames[i]);
		if (!x->buf[i]) {
			x->err = -ENOMEM;
			return;
		}
	}
	labels[nl++] = (struct pprof_label){.key = "pid", .num = st->pid};
	if (hmap_get(&x->a->procs, (uint64_t)st->pid, 0, &proc)) {
		nspid = (pid_t)(proc >> 32);
		container = (uint32_t)proc;
		if (nspid && nspid != st->pid)
			labels[nl++] = (struct pprof_label){.key = "ns_pid", .num = nspid};
		if (container)
			labels[nl++] = (struct pprof_label){.key = "container_id",
							    .str = x->a->strs[container]};
	}
	labels[nl++] = (struct pprof_label){.key = "tid", .num = st->tid};
	if (st->thread_name && st->thread_name[0])
		labels[nl++] = (struct pprof_label){.key = "thread_name", .str = st->thread_name};
	values[0] = (int64_t)st->count;
	values[1] = (int64_t)st->count * x->period;
	x->err = pprof_add_sample(x->p, x->buf, st->nframes, values, labels, nl);
}

int agg_to_pprof(const struct agg *a, struct pprof *p, int64_t period_ns)
{
	struct export_ctx x = {.a = a, .p = p, .period = period_ns};

	x.locs = calloc(a->nframes, sizeof(*x.locs));
	if (!x.locs)
		return -ENOMEM;
	agg_foreach(a, export_stack, &x);
	free(x.locs);
	free(x.buf);
	return x.err;
}
