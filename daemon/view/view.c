// SPDX-License-Identifier: GPL-2.0-only
/*
 * view.c - the merged call tree of `rubyprofd report`, its filters, and the text writers
 * (collapsed stacks, top, speedscope JSON). The flame graph writers are in view_flame.c.
 *
 * Samples are added root first into a tree whose children are found through one hash map keyed by
 * (parent, frame), so a stack costs one lookup per frame. The top table reuses the --oneshot
 * summary (report.c) on an aggregate.h table filled alongside the tree.
 */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/hash.h"
#include "lib/hmap.h"
#include "lib/text.h"
#include "profile/aggregate.h"
#include "view/report.h"
#include "view/view.h"

struct vframe {
	struct view_frame f;
	int8_t focus; /* -1 unknown, 0 no match, 1 matches --focus */
};

struct view {
	struct view_filter flt;
	regex_t focus;
	bool has_focus;
	struct vframe *frames; /* index 0 unused: ids start at 1 */
	size_t nframes, frames_cap;
	struct hmap frame_by_key; /* (hash of name and file, kind and line) -> id, duplicates */
	struct view_node *nodes;
	size_t nnodes, nodes_cap;
	struct hmap child;	/* (parent << 32 | frame, 0) -> node */
	uint32_t refused_frame; /* "[too many frames]", 0 until needed */
	struct aggregate *agg;	/* for top */
	struct aggregate_proc *aproc;
	uint32_t *path_frames, *path_nodes; /* the last stack added, root first, and its nodes */
	size_t path_len, path_cap;
	struct view_stats st;
};

const char *view_kind_name(enum view_kind k)
{
	static const char *const names[VIEW_NKINDS] = {
		[VIEW_RUBY] = "ruby", [VIEW_CFUNC] = "cfunc",	[VIEW_GC] = "gc",
		[VIEW_JIT] = "jit",   [VIEW_NATIVE] = "native", [VIEW_OTHER] = "other",
	};

	return (unsigned int)k < VIEW_NKINDS ? names[k] : "other";
}

void view__free(struct view *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 1; v->frames && i < v->nframes; i++) {
		free((char *)v->frames[i].f.name);
		free((char *)v->frames[i].f.file);
	}
	free(v->frames);
	free(v->nodes);
	hmap_clear(&v->frame_by_key);
	hmap_clear(&v->child);
	if (v->has_focus)
		regfree(&v->focus);
	aggregate__free(v->agg);
	free(v->path_frames);
	free(v->path_nodes);
	free(v);
}

struct view *view__new(const struct view_filter *f, char *err, size_t errlen)
{
	struct aggregate_proc_info info = {.pid = 1};
	struct view *v = calloc(1, sizeof(*v));
	int e = ENOMEM, rc;

	if (!v)
		goto fail;
	v->flt = *f;
	if (f->focus) {
		rc = regcomp(&v->focus, f->focus, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			char msg[128];

			regerror(rc, &v->focus, msg, sizeof(msg));
			snprintf(err, errlen, "--focus '%s': %s", f->focus, msg);
			e = EINVAL;
			goto fail;
		}
		v->has_focus = true;
	}
	v->frames = calloc(64, sizeof(*v->frames));
	v->nodes = calloc(1024, sizeof(*v->nodes));
	if (!v->frames || !v->nodes)
		goto fail;
	v->frames_cap = 64;
	v->nframes = 1;
	v->nodes_cap = 1024;
	v->nnodes = 1; /* the root */
	if (f->want_top) {
		v->agg = aggregate__new(1, VIEW_MAX_STACKS);
		v->aproc = v->agg ? aggregate_proc__new(v->agg, &info) : NULL;
		if (!v->aproc)
			goto fail;
	}
	return v;
fail:
	if (e == ENOMEM)
		snprintf(err, errlen, "out of memory");
	view__free(v);
	errno = e;
	return NULL;
}

/* The frame id of (kind, name, file, line); 0 when out of memory. Past the bound, one frame. */
static uint32_t frame_intern(struct view *v, enum view_kind kind, const char *name,
			     const char *file, int64_t line)
{
	uint64_t h = hash_str(hash_str(HASH_INIT, name), file), id;
	uint64_t k2 = (uint64_t)kind | (uint64_t)line << 8;
	struct hmap_iter it = {0};
	struct vframe *nf;

	while (hmap_next_dup(&v->frame_by_key, h, k2, &it, &id)) {
		if (strcmp(v->frames[id].f.name, name) == 0 &&
		    strcmp(v->frames[id].f.file, file) == 0)
			return (uint32_t)id;
	}
	if (v->nframes >= VIEW_MAX_FRAMES) {
		v->st.frames_refused++;
		if (v->refused_frame)
			return v->refused_frame;
		/* room for it was kept: the bound is checked one below the table's end */
		kind = VIEW_OTHER;
		name = "[too many frames]";
		file = "";
		line = 0;
	}
	if (array_reserve(v->frames, v->frames_cap, v->nframes + 1, 1))
		return 0;
	nf = &v->frames[v->nframes];
	nf->f.kind = kind;
	nf->f.line = line;
	nf->f.name = strdup(name);
	nf->f.file = strdup(file);
	nf->focus = -1;
	if (!nf->f.name || !nf->f.file) {
		free((char *)nf->f.name);
		free((char *)nf->f.file);
		return 0;
	}
	if (v->nframes >= VIEW_MAX_FRAMES) {
		v->refused_frame = (uint32_t)v->nframes++;
		return v->refused_frame;
	}
	if (hmap_add(&v->frame_by_key, h, k2, v->nframes)) {
		free((char *)nf->f.name);
		free((char *)nf->f.file);
		return 0;
	}
	v->st.frames = v->nframes;
	return (uint32_t)v->nframes++;
}

static bool is_gc_mark(const char *name)
{
	return strcmp(name, "(garbage collection)") == 0 || strcmp(name, "(marking)") == 0 ||
	       strcmp(name, "(sweeping)") == 0 || strcmp(name, "(compacting)") == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/*
 * A frame's kind from what rubyprofd writes (pprof mapping "[ruby]", "[ruby cfunc]" or
 * "[rubyprofd]" for its markers) and, for other profilers' files, from the mapping being a file.
 */
static enum view_kind kind_of(const char *mapping, const char *name, const char *file)
{
	if (strcmp(name, "[JIT code]") == 0)
		return VIEW_JIT;
	if (strcmp(mapping, "[ruby]") == 0)
		return VIEW_RUBY;
	if (strcmp(mapping, "[ruby cfunc]") == 0)
		return VIEW_CFUNC;
	if (strcmp(mapping, "[rubyprofd]") == 0)
		return is_gc_mark(name) ? VIEW_GC : VIEW_OTHER;
	if (is_gc_mark(name))
		return VIEW_GC;
	if (ends_with(file, ".rb"))
		return VIEW_RUBY;
	return mapping[0] ? VIEW_NATIVE : VIEW_OTHER;
}

/* The child of parent for frame, created when absent; 0 at the node bound or on ENOMEM (*err). */
static uint32_t child_of(struct view *v, uint32_t parent, uint32_t frame, int *err)
{
	uint64_t key = (uint64_t)parent << 32 | frame, id;
	struct view_node *n;
	uint32_t c;
	int k = 0;

	/* Most nodes have few children (a deep recursion has one): a short walk of the list is
	 * cheaper than a hash lookup, which misses the cache on big trees. */
	for (c = v->nodes[parent].child; c && k < 4; c = v->nodes[c].sibling, k++) {
		if (v->nodes[c].frame == frame)
			return c;
	}
	/* c == 0: the whole list was walked */
	if (c && hmap_get(&v->child, key, 0, &id))
		return (uint32_t)id;
	if (v->nnodes >= VIEW_MAX_NODES)
		return 0;
	if (array_reserve(v->nodes, v->nodes_cap, v->nnodes + 1, 1) ||
	    hmap_put(&v->child, key, 0, v->nnodes)) {
		*err = -ENOMEM;
		return 0;
	}
	n = &v->nodes[v->nnodes];
	memset(n, 0, sizeof(*n));
	n->frame = frame;
	n->parent = parent;
	n->depth = v->nodes[parent].depth + 1;
	n->sibling = v->nodes[parent].child;
	v->nodes[parent].child = (uint32_t)v->nnodes;
	if (n->depth > v->st.depth_max)
		v->st.depth_max = n->depth;
	v->st.nodes = v->nnodes;
	return (uint32_t)v->nnodes++;
}

/*
 * Adds one stack (frame ids leaf first) to the tree. The previous stack's path is kept: stacks
 * of one process come in runs sharing their root side, whose nodes are then reused without a
 * lookup per frame (a 10,000-frame recursion costs a compare per frame, not a hash lookup).
 */
static int tree_add(struct view *v, const uint32_t *frames, size_t n, uint64_t value)
{
	uint32_t node = 0, next;
	size_t d = 0, depth;
	int err = 0;

	if (n > v->path_cap) {
		size_t cap = v->path_cap;

		/* two arrays, one capacity: the second grows only when the first did */
		if (array_reserve(v->path_frames, cap, n, 64) ||
		    array_reserve(v->path_nodes, v->path_cap, n, 64))
			return -ENOMEM;
	}
	/* the shared root side: same frames at the same depths as the previous stack */
	while (d < n && d < v->path_len && v->path_frames[d] == frames[n - 1 - d]) {
		node = v->path_nodes[d];
		v->nodes[node].total += value;
		d++;
	}
	for (depth = d; depth < n; depth++) {
		next = child_of(v, node, frames[n - 1 - depth], &err);
		if (err)
			return err;
		if (!next) {
			v->st.nodes_truncated++;
			break;
		}
		node = next;
		v->nodes[node].total += value;
		v->path_frames[depth] = frames[n - 1 - depth];
		v->path_nodes[depth] = node;
	}
	v->path_len = depth;
	v->nodes[node].self += value;
	v->nodes[0].total += value;
	return 0;
}

static bool frame_focused(struct view *v, uint32_t id)
{
	struct vframe *f = &v->frames[id];

	if (f->focus < 0)
		f->focus = regexec(&v->focus, f->f.name, 0, NULL, 0) == 0 ||
			   (f->f.file[0] && regexec(&v->focus, f->f.file, 0, NULL, 0) == 0);
	return f->focus > 0;
}

/* Per file: what its locations are as view frames (inlined lines expand to several). */
struct file_ctx {
	uint64_t
		*loc_frames; /* per location index: offset + 1 into lf, count in the high 16 bits */
	uint32_t *lf;	     /* frame ids of the locations, in pool order */
	size_t nlf, lf_cap;
	uint32_t *stack; /* the current sample's frames, leaf first */
	size_t stack_cap;
	uint32_t *astack; /* the same for the agg (top) */
};

static int lf_push(struct file_ctx *x, uint32_t id)
{
	if (array_reserve(x->lf, x->lf_cap, x->nlf + 1, 256))
		return -ENOMEM;
	x->lf[x->nlf++] = id;
	return 0;
}

/* Resolves every location of r into view frames (and agg frames for top, after them). */
static int resolve_locations(struct view *v, struct file_ctx *x, const struct pprofread *r)
{
	const struct pprofread_profile *p = pprofread_profile(r);
	const struct pprofread_location *l;
	const struct pprofread_function *fn;
	const struct pprofread_mapping *m;
	const char *mapping, *name, *file;
	char at[64], *lined = NULL;
	enum view_kind kind;
	size_t i, j, off;
	uint32_t id;
	int ret = 0;

	x->loc_frames = calloc(p->nlocations ? p->nlocations : 1, sizeof(*x->loc_frames));
	x->lf = malloc(256 * sizeof(*x->lf));
	if (!x->loc_frames || !x->lf)
		return -ENOMEM;
	x->lf_cap = 256;
	for (i = 0; i < p->nlocations; i++) {
		l = &p->locations[i];
		m = pprofread_mapping(r, l->mapping_id);
		mapping = m ? pprofread_str(r, m->filename) : "";
		off = x->nlf;
		for (j = 0; j < l->nlines || (j == 0 && l->nlines == 0); j++) {
			fn = l->nlines ? pprofread_function(r, l->lines[j].function_id) : NULL;
			name = fn ? pprofread_str(r, fn->name) : "";
			file = fn ? pprofread_str(r, fn->filename) : "";
			if (!name[0] && fn)
				name = pprofread_str(r, fn->system_name);
			if (!name[0]) {
				/* no symbol: the address, as pprof shows it */
				snprintf(at, sizeof(at), "0x%" PRIx64, l->address);
				name = at;
			}
			kind = kind_of(mapping, name, file);
			id = frame_intern(v, kind, name, file, fn ? fn->start_line : 0);
			if (!id)
				return -ENOMEM;
			ret = lf_push(x, id);
			if (!ret && v->agg) {
				/* top: rows per function, or per line with the line in the file */
				if (v->flt.by_line) {
					if (asprintf(&lined, "%s:%" PRId64, file,
						     l->nlines ? l->lines[j].line : 0) < 0)
						return -ENOMEM;
					file = lined;
				}
				id = aggregate_frame_id(v->aproc,
							kind == VIEW_RUBY    ? AGG_FRAME_RUBY
							: kind == VIEW_CFUNC ? AGG_FRAME_CFUNC
									     : AGG_FRAME_MARK,
							name, file, fn ? fn->start_line : 0,
							l->nlines ? l->lines[j].line : 0);
				free(lined);
				lined = NULL;
				ret = id ? lf_push(x, id) : -errno;
			}
			if (ret)
				return ret;
		}
		x->loc_frames[i] = (uint64_t)(off + 1) | (uint64_t)(x->nlf - off) << 48;
	}
	return 0;
}

static const struct pprofread_label *label_get(const struct pprofread *r,
					       const struct pprofread_sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++) {
		if (strcmp(pprofread_str(r, s->labels[i].key), key) == 0)
			return &s->labels[i];
	}
	return NULL;
}

/* A label equals text: its string, or its number written in decimal. */
static bool label_is(const struct pprofread *r, const struct pprofread_label *l, const char *text)
{
	char num[32];

	if (!l)
		return false;
	if (l->str)
		return strcmp(pprofread_str(r, l->str), text) == 0;
	snprintf(num, sizeof(num), "%" PRId64, l->num);
	return strcmp(num, text) == 0;
}

static bool sample_passes(const struct view *v, const struct pprofread *r,
			  const struct pprofread_sample *s)
{
	const struct pprofread_label *l;
	char num[32];
	size_t i;

	if (v->flt.pid) {
		snprintf(num, sizeof(num), "%d", (int)v->flt.pid);
		if (!label_is(r, label_get(r, s, "pid"), num))
			return false;
	}
	if (v->flt.thread) {
		l = label_get(r, s, "tid");
		if (!label_is(r, l, v->flt.thread) &&
		    !label_is(r, label_get(r, s, "thread_name"), v->flt.thread) &&
		    !label_is(r, label_get(r, s, "ruby_thread"), v->flt.thread) &&
		    !label_is(r, label_get(r, s, "ruby_thread_name"), v->flt.thread))
			return false;
	}
	for (i = 0; i < v->flt.nlabels; i++) {
		if (!label_is(r, label_get(r, s, v->flt.label_key[i]), v->flt.label_val[i]))
			return false;
	}
	return true;
}

/* The index of the sample type named "samples", else 0. */
static size_t value_index(const struct pprofread *r)
{
	const struct pprofread_profile *p = pprofread_profile(r);
	size_t i;

	for (i = 0; i < p->nsample_types; i++) {
		if (strcmp(pprofread_str(r, p->sample_types[i].type), "samples") == 0)
			return i;
	}
	return 0;
}

static int grow_stack(struct file_ctx *x, size_t n)
{
	size_t cap = x->stack_cap;

	/* two arrays, one capacity: the second grows only when the first did */
	if (array_reserve(x->stack, cap, n, 64) || array_reserve(x->astack, x->stack_cap, n, 64))
		return -ENOMEM;
	return 0;
}

static int add_samples(struct view *v, struct file_ctx *x, const struct pprofread *r)
{
	const struct pprofread_profile *p = pprofread_profile(r);
	const struct pprofread_sample *s;
	size_t vi = value_index(r), i, j, k, n, per, total_frames;
	uint64_t lf, off, cnt;
	bool focused;
	int64_t val;
	int ret;

	per = v->agg ? 2 : 1; /* frames per line in lf: the view's, then the agg's */
	if (grow_stack(x, 64))
		return -ENOMEM;
	for (i = 0; i < p->nsamples; i++) {
		s = &p->samples[i];
		val = p->nsample_types ? s->values[vi] : 0;
		if (val <= 0)
			continue;
		v->st.samples++;
		if (!sample_passes(v, r, s))
			continue;
		total_frames = 0;
		for (j = 0; j < s->nlocations; j++) {
			/* every id resolves: pprofread checked them */
			lf = x->loc_frames[pprofread_location_index(r, s->location_ids[j]) - 1];
			total_frames += (size_t)(lf >> 48) / per;
		}
		if (total_frames > x->stack_cap && grow_stack(x, total_frames))
			return -ENOMEM;
		n = 0;
		focused = !v->has_focus;
		for (j = 0; j < s->nlocations; j++) {
			lf = x->loc_frames[pprofread_location_index(r, s->location_ids[j]) - 1];
			off = (lf & ((1ULL << 48) - 1)) - 1;
			cnt = lf >> 48;
			for (k = 0; k < cnt; k += per) {
				x->stack[n] = x->lf[off + k];
				if (per == 2)
					x->astack[n] = x->lf[off + k + 1];
				if (!focused)
					focused = frame_focused(v, x->stack[n]);
				n++;
			}
		}
		if (!focused)
			continue;
		if (!n) {
			/* A sample without frames: one marker frame keeps it in every view's totals
			 * (folded stacks cannot have an empty stack). */
			if (x->stack_cap < 1 && grow_stack(x, 1))
				return -ENOMEM;
			x->stack[0] = frame_intern(v, VIEW_OTHER, "[no frames]", "", 0);
			x->astack[0] = v->agg ? aggregate_frame_id(v->aproc, AGG_FRAME_MARK,
								   "[no frames]", "", 0, 0)
					      : 0;
			if (!x->stack[0] || (v->agg && !x->astack[0]))
				return -ENOMEM;
			n = 1;
		}
		v->st.samples_kept++;
		ret = tree_add(v, x->stack, n, (uint64_t)val);
		if (ret)
			return ret;
		if (v->agg) {
			const struct pprofread_label *tl = label_get(r, s, "tid");
			const struct pprofread_label *tn = label_get(r, s, "thread_name");

			ret = aggregate_add(v->agg, v->aproc, tl ? (pid_t)tl->num : 0,
					    tn ? pprofread_str(r, tn->str) : "", x->astack, n,
					    &val);
			if (ret == -ENOSPC)
				v->st.top_dropped++;
			else if (ret)
				return ret;
		}
	}
	return 0;
}

int view_add_profile(struct view *v, const struct pprofread *r, const char *name, char *err,
		     size_t errlen)
{
	const struct pprofread_profile *p = pprofread_profile(r);
	int64_t start = p->time_ns, end = p->time_ns + (p->duration_ns > 0 ? p->duration_ns : 0);
	struct file_ctx x = {0};
	int ret;

	if ((v->flt.since_ns && end < v->flt.since_ns) ||
	    (v->flt.until_ns && start > v->flt.until_ns)) {
		v->st.files_skipped++;
		return 1;
	}
	v->st.files++;
	if (!v->st.time_min_ns || start < v->st.time_min_ns)
		v->st.time_min_ns = start;
	if (end > v->st.time_max_ns)
		v->st.time_max_ns = end;
	ret = resolve_locations(v, &x, r);
	if (!ret)
		ret = add_samples(v, &x, r);
	if (ret)
		snprintf(err, errlen, "%s: %s", name, strerror(-ret));
	free(x.loc_frames);
	free(x.lf);
	free(x.stack);
	free(x.astack);
	return ret;
}

int view_add_file(struct view *v, const char *path, char *err, size_t errlen)
{
	struct pprofread *r = pprofread__open(path, err, errlen);
	int ret;

	if (!r)
		return -errno;
	ret = view_add_profile(v, r, path, err, errlen);
	pprofread__free(r);
	return ret;
}

static int by_name(const void *a, const void *b, void *ctx)
{
	const struct view *v = ctx;
	const struct view_node *x = &v->nodes[*(const uint32_t *)a],
			       *y = &v->nodes[*(const uint32_t *)b];
	int c = strcmp(v->frames[x->frame].f.name, v->frames[y->frame].f.name);

	if (c)
		return c;
	c = strcmp(v->frames[x->frame].f.file, v->frames[y->frame].f.file);
	if (c)
		return c;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

int view_finish(struct view *v)
{
	uint32_t *kids = NULL, c;
	size_t cap = 0, n, i, j;

	hmap_clear(&v->child); /* lookups are over: its memory goes back */
	for (i = 0; i < v->nnodes; i++) {
		n = 0;
		for (c = v->nodes[i].child; c; c = v->nodes[c].sibling) {
			if (array_reserve(kids, cap, n + 1, 64)) {
				free(kids);
				return -ENOMEM;
			}
			kids[n++] = c;
		}
		if (n < 2)
			continue;
		qsort_r(kids, n, sizeof(*kids), by_name, v);
		v->nodes[i].child = kids[0];
		for (j = 0; j + 1 < n; j++)
			v->nodes[kids[j]].sibling = kids[j + 1];
		v->nodes[kids[n - 1]].sibling = 0;
	}
	free(kids);
	return 0;
}

uint64_t view_total(const struct view *v)
{
	return v->nodes[0].total;
}

size_t view_nnodes(const struct view *v)
{
	return v->nnodes;
}

const struct view_node *view_node(const struct view *v, uint32_t i)
{
	return i < v->nnodes ? &v->nodes[i] : NULL;
}

const struct view_frame *view_frame(const struct view *v, uint32_t id)
{
	return id && id < v->nframes ? &v->frames[id].f : NULL;
}

size_t view_nframes(const struct view *v)
{
	return v->nframes;
}

void view_stats(const struct view *v, struct view_stats *out)
{
	*out = v->st;
}

/* ---- walking the tree ----------------------------------------------------------------------- */

uint32_t view_next_node(const struct view *v, uint32_t i)
{
	if (v->nodes[i].child)
		return v->nodes[i].child;
	while (i) {
		if (v->nodes[i].sibling)
			return v->nodes[i].sibling;
		i = v->nodes[i].parent;
	}
	return 0;
}

/* Frame ids from the root's child down to node i into path (depth entries). */
static void path_of(const struct view *v, uint32_t i, uint32_t *path)
{
	for (; i; i = v->nodes[i].parent)
		path[v->nodes[i].depth - 1] = v->nodes[i].frame;
}

/* Folded stacks: ';' and newlines would break the format, spaces are fine. */
static void put_folded_name(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' ? ':' : *s == '\n' || *s == '\r' ? ' ' : *s, out);
}

int view_write_collapsed(const struct view *v, FILE *out)
{
	uint32_t *path = calloc(v->st.depth_max + 1, sizeof(*path)), i;
	size_t d;

	if (!path)
		return -ENOMEM;
	for (i = view_next_node(v, 0); i; i = view_next_node(v, i)) {
		if (!v->nodes[i].self)
			continue;
		path_of(v, i, path);
		for (d = 0; d < v->nodes[i].depth; d++) {
			if (d)
				fputc(';', out);
			put_folded_name(out, v->frames[path[d]].f.name);
		}
		fprintf(out, " %" PRIu64 "\n", v->nodes[i].self);
	}
	free(path);
	return ferror(out) ? -EIO : 0;
}

int view_write_top(const struct view *v, FILE *out, unsigned int top)
{
	int ret;

	if (!v->agg)
		return -EINVAL;
	fprintf(out, "%" PRIu64 " samples in %" PRIu64 " profile%s%s\n", view_total(v), v->st.files,
		v->st.files == 1 ? "" : "s", v->flt.by_line ? ", by line" : "");
	ret = report_top(out, v->agg, top);
	if (!ret && v->st.top_dropped)
		fprintf(out, "(%" PRIu64 " stacks left out: more than %u distinct stacks)\n",
			v->st.top_dropped, VIEW_MAX_STACKS);
	if (!ret && ferror(out))
		ret = -EIO;
	return ret;
}

static void json_put(void *ctx, const char *s, size_t len)
{
	fwrite(s, 1, len, ctx);
}

/* A JSON string (quotes included); '<', '>' and '&' escaped too, so that it is safe inside
 * <script>; invalid UTF-8 as \ufffd (text_json). */
void view_put_json_string(FILE *out, const char *s)
{
	text_json(s, true, json_put, out);
}

int view_write_speedscope(const struct view *v, FILE *out, const char *title)
{
	uint32_t *path = calloc(v->st.depth_max + 1, sizeof(*path)), i;
	const struct view_frame *f;
	bool first = true;
	size_t d;

	if (!path)
		return -ENOMEM;
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\"exporter\":\"rubyprofd " RUBYPROF_VERSION "\",\"name\":",
	      out);
	view_put_json_string(out, title);
	fputs(",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", out);
	/* speedscope's frame i is our frame i + 1 */
	for (i = 1; i < v->nframes; i++) {
		f = &v->frames[i].f;
		fputs(i > 1 ? ",\n{\"name\":" : "\n{\"name\":", out);
		view_put_json_string(out, f->name);
		if (f->file[0]) {
			fputs(",\"file\":", out);
			view_put_json_string(out, f->file);
			if (f->line > 0)
				fprintf(out, ",\"line\":%" PRId64, f->line);
		}
		fputc('}', out);
	}
	fputs("]},\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
	view_put_json_string(out, title);
	fprintf(out, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[",
		view_total(v));
	/* one sample per distinct stack (a node with self samples), root first, weighted */
	for (i = view_next_node(v, 0); i; i = view_next_node(v, i)) {
		if (!v->nodes[i].self)
			continue;
		path_of(v, i, path);
		fputs(first ? "\n[" : ",\n[", out);
		first = false;
		for (d = 0; d < v->nodes[i].depth; d++)
			fprintf(out, d ? ",%u" : "%u", path[d] - 1);
		fputc(']', out);
	}
	fputs("],\"weights\":[", out);
	first = true;
	for (i = view_next_node(v, 0); i; i = view_next_node(v, i)) {
		if (!v->nodes[i].self)
			continue;
		fprintf(out, first ? "%" PRIu64 : ",%" PRIu64, v->nodes[i].self);
		first = false;
	}
	fputs("]}]}\n", out);
	free(path);
	return ferror(out) ? -EIO : 0;
}

static int w_flame(const struct view *v, FILE *out, const char *title, unsigned int top)
{
	return view_write_flamegraph(v, out, title);
}

static int w_svg(const struct view *v, FILE *out, const char *title, unsigned int top)
{
	return view_write_svg(v, out, title);
}

static int w_speedscope(const struct view *v, FILE *out, const char *title, unsigned int top)
{
	return view_write_speedscope(v, out, title);
}

static int w_collapsed(const struct view *v, FILE *out, const char *title, unsigned int top)
{
	return view_write_collapsed(v, out);
}

static int w_top(const struct view *v, FILE *out, const char *title, unsigned int top)
{
	return view_write_top(v, out, top);
}

static const struct {
	const char *name, *ext;
	int (*write)(const struct view *v, FILE *out, const char *title, unsigned int top);
} formats[] = {
	{"flamegraph", ".html", w_flame},
	{"svg", ".svg", w_svg},
	{"speedscope", ".speedscope.json", w_speedscope},
	{"collapsed", ".folded", w_collapsed},
	{"top", ".txt", w_top},
};

const char *view_format_ext(const char *format)
{
	size_t i;

	for (i = 0; format && i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(formats[i].name, format) == 0)
			return formats[i].ext;
	}
	return NULL;
}

int view_write(const struct view *v, const char *format, FILE *out, const char *title,
	       unsigned int top)
{
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(formats[i].name, format) == 0)
			return formats[i].write(v, out, title, top);
	}
	return -EINVAL;
}
