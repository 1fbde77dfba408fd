// SPDX-License-Identifier: GPL-2.0-only
/*
 * view.c - the merged call tree of `rubyprofd report`, its filters, and the text writers
 * (collapsed stacks, top, speedscope JSON). The flame graph writers are in view_flame.c.
 *
 * Samples are added root first into a tree whose children are found through one hash map keyed by
 * (parent, frame), so a stack costs one lookup per frame. The top table reuses the --oneshot
 * summary (toptable.c) on an aggregate.h table filled alongside the tree.
 */
#include <ctype.h>
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
#include "view/toptable.h"
#include "view/view.h"

struct vframe {
	struct view_frame f;
	int8_t focus;  /* -1 unknown, 0 no match, 1 matches --focus */
	int8_t gmatch; /* the same for --by frame:REGEX (on the name) */
};

/* A group of --by frame:/label: its stacks are the subtree of its frame under the root. */
struct vgroup {
	char *name;	    /* cleaned (text_clean), cut at VIEW_GROUP_NAME_MAX */
	uint32_t frame;	    /* its view frame (VIEW_GROUP) */
	uint32_t agg_frame; /* its frame in the agg (top), the root end of its stacks */
	uint64_t total;
	uint32_t into; /* index + 1 of the group it was summed into by view_finish; 0: none */
	bool other;    /* "(other groups)" */
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
	regex_t group_re; /* --by frame:REGEX */
	bool has_group_re;
	char *group_text; /* "frame:REGEX", "label:KEY" */
	struct vgroup *groups;
	size_t ngroups, groups_cap;
	struct hmap group_by_name; /* hash of the name -> index, duplicates */
	struct hmap group_by_agg;  /* agg frame id -> index */
	uint32_t other;		   /* index + 1 of "(other groups)", 0 until needed */
	uint32_t *order; /* after view_finish: the groups shown, biggest first, other last */
	size_t norder;
	struct view_stats st;
};

const char *view_kind_name(enum view_kind k)
{
	static const char *const names[VIEW_NKINDS] = {
		[VIEW_RUBY] = "ruby",	[VIEW_CFUNC] = "cfunc",	  [VIEW_GC] = "gc",
		[VIEW_JIT] = "jit",	[VIEW_NATIVE] = "native", [VIEW_OTHER] = "other",
		[VIEW_GROUP] = "group",
	};

	return (unsigned int)k < VIEW_NKINDS ? names[k] : "other";
}

int view_parse_by(const char *arg, struct view_filter *f, char *err, size_t errlen)
{
	bool frame = strncmp(arg, "frame:", 6) == 0;
	regex_t re;
	int rc;

	if (strcmp(arg, "line") == 0 || strcmp(arg, "function") == 0) {
		f->by_line = arg[0] == 'l';
		return 0;
	}
	if (!frame && strncmp(arg, "label:", 6) != 0) {
		snprintf(err, errlen, "'%s': want line, function, frame:REGEX or label:KEY", arg);
		return -EINVAL;
	}
	if (!arg[6]) {
		snprintf(err, errlen, "'%s': the %s is empty", arg, frame ? "REGEX" : "label KEY");
		return -EINVAL;
	}
	if (frame) {
		rc = regcomp(&re, arg + 6, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			char msg[128];

			regerror(rc, &re, msg, sizeof(msg));
			snprintf(err, errlen, "'%s': %s", arg, msg);
			return -EINVAL;
		}
		regfree(&re);
	}
	f->group_by = frame ? VIEW_BY_FRAME : VIEW_BY_LABEL;
	f->group_arg = arg + 6;
	return 0;
}

bool view_label_key_is(const char *key, const char *want)
{
	char name[256];

	if (strcmp(key, want) == 0)
		return true;
	/* want as collectors take label names (text_label_name); a longer name is not cut short */
	return strlen(want) + 2 <= sizeof(name) &&
	       (text_label_name(want, name, sizeof(name)), strcmp(key, name) == 0);
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
	if (v->has_group_re)
		regfree(&v->group_re);
	for (i = 0; v->groups && i < v->ngroups; i++)
		free(v->groups[i].name);
	free(v->groups);
	free(v->order);
	free(v->group_text);
	hmap_clear(&v->group_by_name);
	hmap_clear(&v->group_by_agg);
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
	if (f->group_by == VIEW_BY_FRAME) {
		rc = regcomp(&v->group_re, f->group_arg, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			char msg[128];

			regerror(rc, &v->group_re, msg, sizeof(msg));
			snprintf(err, errlen, "--by 'frame:%s': %s", f->group_arg, msg);
			e = EINVAL;
			goto fail;
		}
		v->has_group_re = true;
	}
	if (f->group_by &&
	    asprintf(&v->group_text, "%s:%s", f->group_by == VIEW_BY_FRAME ? "frame" : "label",
		     f->group_arg) < 0) {
		v->group_text = NULL;
		goto fail;
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
	nf->gmatch = -1;
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

/* The sample's label key (as a user names it: view_label_key_is), NULL when it has none. */
static const struct pprofread_label *label_get(const struct pprofread *r,
					       const struct pprofread_sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++) {
		if (strcmp(pprofread_str(r, s->labels[i].key), key) == 0)
			return &s->labels[i];
	}
	/* none of that name: the name as collectors take it (http.route -> http_route) */
	for (i = 0; i < s->nlabels; i++) {
		if (view_label_key_is(pprofread_str(r, s->labels[i].key), key))
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

/* ---- groups (--by frame:REGEX, --by label:KEY) ---------------------------------------------- */

static bool frame_grouped(struct view *v, uint32_t id)
{
	struct vframe *f = &v->frames[id];

	if (f->gmatch < 0)
		f->gmatch = regexec(&v->group_re, f->f.name, 0, NULL, 0) == 0;
	return f->gmatch > 0;
}

/* A new group of that (clean) name; its index, or -ENOMEM. */
static int group_new(struct view *v, const char *name, uint64_t h, bool other)
{
	struct vgroup *g;
	size_t i = v->ngroups;

	if (array_reserve(v->groups, v->groups_cap, i + 1, 16))
		return -ENOMEM;
	g = &v->groups[i];
	memset(g, 0, sizeof(*g));
	g->other = other;
	g->name = strdup(name);
	if (!g->name)
		return -ENOMEM;
	g->frame = frame_intern(v, VIEW_GROUP, name, "", 0);
	if (v->agg) {
		/* a file no frame of a profile has: the group is never one of their rows */
		g->agg_frame =
			aggregate_frame_id(v->aproc, AGG_FRAME_MARK, name, "[--by group]", 0, 0);
		if (g->agg_frame && hmap_put(&v->group_by_agg, g->agg_frame, 0, i))
			g->agg_frame = 0;
	}
	if (!g->frame || (v->agg && !g->agg_frame) || hmap_add(&v->group_by_name, h, 0, i)) {
		free(g->name);
		return -ENOMEM;
	}
	v->ngroups++;
	if (other)
		v->other = (uint32_t)i + 1;
	else
		v->st.groups++;
	return (int)i;
}

/*
 * The group named raw (what a label or a frame holds: cut and cleaned first), created when new;
 * past VIEW_MAX_GROUPS_SEEN groups, "(other groups)" (counted). Its index, or -ENOMEM.
 */
static int group_get(struct view *v, const char *raw)
{
	char name[VIEW_GROUP_NAME_MAX + 4];
	size_t n = strlen(raw);
	struct hmap_iter it = {0};
	uint64_t h, id;

	if (n > VIEW_GROUP_NAME_MAX) {
		/* never cut inside a UTF-8 sequence */
		n = VIEW_GROUP_NAME_MAX;
		while (n && ((unsigned char)raw[n] & 0xc0) == 0x80)
			n--;
		memcpy(name, raw, n);
		memcpy(name + n, "...", 4);
	} else {
		memcpy(name, raw, n + 1);
	}
	text_clean(name); /* a label's value goes to a terminal: no escapes */
	h = hash_str(HASH_INIT, name);
	while (hmap_next_dup(&v->group_by_name, h, 0, &it, &id)) {
		if (strcmp(v->groups[id].name, name) == 0)
			return (int)id;
	}
	if (v->st.groups < VIEW_MAX_GROUPS_SEEN && strcmp(name, VIEW_OTHER_GROUPS) != 0)
		return group_new(v, name, h, false);
	if (strcmp(name, VIEW_OTHER_GROUPS) != 0)
		v->st.group_samples_unseen++;
	if (v->other)
		return (int)v->other - 1;
	return group_new(v, VIEW_OTHER_GROUPS, hash_str(HASH_INIT, VIEW_OTHER_GROUPS), true);
}

/* The group of a sample whose frames (leaf first) are stack[n]: its index, or -ENOMEM. */
static int sample_group(struct view *v, const struct pprofread *r, const struct pprofread_sample *s,
			const uint32_t *stack, size_t n)
{
	const struct pprofread_label *l;
	char buf[VIEW_GROUP_NAME_MAX * 2 + 64];
	size_t i;

	if (v->flt.group_by == VIEW_BY_FRAME) {
		/* the first match from the root: the action or the job, not what it calls */
		for (i = n; i > 0; i--) {
			if (frame_grouped(v, stack[i - 1]))
				return group_get(v, v->frames[stack[i - 1]].f.name);
		}
		return group_get(v, "(no frame matches)");
	}
	l = label_get(r, s, v->flt.group_arg);
	if (!l) {
		snprintf(buf, sizeof(buf), "(no %.*s)", VIEW_GROUP_NAME_MAX, v->flt.group_arg);
		return group_get(v, buf);
	}
	/* KEY=VALUE: a group reads the same in every view (a flame graph's root frames) */
	if (l->str)
		snprintf(buf, sizeof(buf), "%.*s=%.*s", VIEW_GROUP_NAME_MAX / 2, v->flt.group_arg,
			 VIEW_GROUP_NAME_MAX, pprofread_str(r, l->str));
	else
		snprintf(buf, sizeof(buf), "%.*s=%" PRId64, VIEW_GROUP_NAME_MAX / 2,
			 v->flt.group_arg, l->num);
	return group_get(v, buf);
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
		if (v->flt.group_by) {
			/* the group is the stack's root frame: one subtree per group */
			int g = sample_group(v, r, s, x->stack, n);

			if (g < 0)
				return g;
			if (n + 1 > x->stack_cap && grow_stack(x, n + 1))
				return -ENOMEM;
			x->stack[n] = v->groups[g].frame;
			x->astack[n] = v->groups[g].agg_frame;
			n++;
			v->groups[g].total += (uint64_t)val;
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

/* The root's child for frame, 0 when none (the root's children are few: the groups). */
static uint32_t root_child(const struct view *v, uint32_t frame)
{
	uint32_t c;

	for (c = v->nodes[0].child; c; c = v->nodes[c].sibling) {
		if (v->nodes[c].frame == frame)
			return c;
	}
	return 0;
}

/* Adds the subtree under node src (its children) under node dst, without a recursion. */
static int subtree_merge(struct view *v, uint32_t src, uint32_t dst)
{
	size_t n = 0, cap = 64;
	uint32_t *pending = malloc(cap * sizeof(*pending)), c, d, s;
	int err = 0;

	if (!pending)
		return -ENOMEM;
	pending[n++] = src;
	pending[n++] = dst;
	while (n && !err) {
		d = pending[--n];
		s = pending[--n];
		for (c = v->nodes[s].child; c; c = v->nodes[c].sibling) {
			uint32_t dc = child_of(v, d, v->nodes[c].frame, &err);

			if (err)
				break;
			if (!dc) {
				/* the node bound: the samples stay, as the stack's end */
				v->st.nodes_truncated++;
				v->nodes[d].self += v->nodes[c].total;
				continue;
			}
			v->nodes[dc].self += v->nodes[c].self;
			v->nodes[dc].total += v->nodes[c].total;
			if (v->nodes[c].child) {
				if (array_reserve(pending, cap, n + 2, 64)) {
					err = -ENOMEM;
					break;
				}
				pending[n++] = c;
				pending[n++] = dc;
			}
		}
	}
	free(pending);
	return err;
}

static int by_group_total(const void *a, const void *b, void *ctx)
{
	const struct view *v = ctx;
	const struct vgroup *x = &v->groups[*(const uint32_t *)a],
			    *y = &v->groups[*(const uint32_t *)b];

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

/*
 * The groups in the order they are shown, biggest first; past VIEW_MAX_GROUPS, the smaller ones
 * are summed into "(other groups)" (their subtrees merged under its frame), which comes last.
 */
static int groups_finish(struct view *v)
{
	uint32_t gn, on, prev, c;
	size_t i, k;
	int ret, o;

	v->order = calloc(v->ngroups + 2, sizeof(*v->order));
	if (!v->order)
		return -ENOMEM;
	for (i = 0; i < v->ngroups; i++) {
		if (!v->groups[i].other)
			v->order[v->norder++] = (uint32_t)i;
	}
	qsort_r(v->order, v->norder, sizeof(*v->order), by_group_total, v);
	if (v->norder > VIEW_MAX_GROUPS) {
		if (!v->other) {
			o = group_new(v, VIEW_OTHER_GROUPS, hash_str(HASH_INIT, VIEW_OTHER_GROUPS),
				      true);
			if (o < 0)
				return o;
		}
		ret = 0;
		on = child_of(v, 0, v->groups[v->other - 1].frame, &ret);
		if (ret)
			return ret;
		for (k = VIEW_MAX_GROUPS; k < v->norder; k++) {
			struct vgroup *g = &v->groups[v->order[k]];

			g->into = v->other;
			v->groups[v->other - 1].total += g->total;
			v->st.groups_merged++;
			gn = root_child(v, g->frame);
			if (!gn || !on)
				continue; /* past the node bound: counted when it was added */
			ret = subtree_merge(v, gn, on);
			if (ret)
				return ret;
			v->nodes[on].self += v->nodes[gn].self;
			v->nodes[on].total += v->nodes[gn].total;
			/* unlinked: the tree no longer reaches it */
			for (prev = 0, c = v->nodes[0].child; c && c != gn;
			     prev = c, c = v->nodes[c].sibling)
				;
			if (prev)
				v->nodes[prev].sibling = v->nodes[gn].sibling;
			else
				v->nodes[0].child = v->nodes[gn].sibling;
		}
		v->norder = VIEW_MAX_GROUPS;
	}
	if (v->other && v->groups[v->other - 1].total)
		v->order[v->norder++] = v->other - 1;
	return 0;
}

int view_finish(struct view *v)
{
	uint32_t *kids = NULL, c;
	size_t cap = 0, n, i, j;

	if (v->flt.group_by && groups_finish(v))
		return -ENOMEM;
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

const char *view_group_by_text(const struct view *v)
{
	return v->group_text;
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

struct group_pick {
	const struct view *v;
	uint32_t group;
};

/* Whether a stack of the agg is of the group (its root end is the group's frame). */
static bool stack_in_group(void *ctx, const struct aggregate_stack *st)
{
	const struct group_pick *p = ctx;
	uint64_t id;

	if (!st->nframes || !hmap_get(&p->v->group_by_agg, st->frames[st->nframes - 1], 0, &id))
		return false;
	if (p->v->groups[id].into)
		id = p->v->groups[id].into - 1;
	return id == p->group;
}

/* Each group's share, then its top. */
static int write_group_tops(const struct view *v, FILE *out, unsigned int top)
{
	const struct vgroup *g;
	struct group_pick pick = {.v = v};
	size_t k;
	int ret = 0;

	for (k = 0; k < v->norder && !ret; k++) {
		g = &v->groups[v->order[k]];
		fprintf(out, "\n%s: %.1f%% (%" PRIu64 " samples", g->name,
			view_total(v) ? 100.0 * (double)g->total / (double)view_total(v) : 0.0,
			g->total);
		if (g->other && v->st.groups_merged)
			fprintf(out, " of %" PRIu64 " smaller groups", v->st.groups_merged);
		if (g->other && v->st.group_samples_unseen)
			fprintf(out, "%s %" PRIu64 " samples of groups past the first %u",
				v->st.groups_merged ? "; with" : ", with",
				v->st.group_samples_unseen, VIEW_MAX_GROUPS_SEEN);
		fputs(")\n", out);
		pick.group = v->order[k];
		ret = toptable_write_of(out, v->agg, top, stack_in_group, &pick, 1);
	}
	return ret;
}

int view_write_top(const struct view *v, FILE *out, unsigned int top)
{
	int ret;

	if (!v->agg)
		return -EINVAL;
	fprintf(out, "%" PRIu64 " samples in %" PRIu64 " profile%s%s", view_total(v), v->st.files,
		v->st.files == 1 ? "" : "s", v->flt.by_line ? ", by line" : "");
	if (v->group_text)
		fprintf(out, ", by %s: %" PRIu64 " group%s", v->group_text, v->st.groups,
			v->st.groups == 1 ? "" : "s");
	if (v->group_text && v->st.groups_merged)
		fprintf(out, " (the %u biggest shown, the rest in %s)", VIEW_MAX_GROUPS,
			VIEW_OTHER_GROUPS);
	fputc('\n', out);
	ret = v->group_text ? write_group_tops(v, out, top) : toptable_write(out, v->agg, top);
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

/* The first node of the subtree at top, then the next after i in it (0 after its last). */
static uint32_t subtree_next(const struct view *v, uint32_t top, uint32_t i)
{
	i = view_next_node(v, i);
	if (top && i && v->nodes[i].depth <= v->nodes[top].depth)
		return 0;
	return i;
}

/*
 * One speedscope profile: the stacks of the subtree at top (0: all), each from below top, one
 * sample per distinct stack (a node with self samples), weighted.
 */
static void speedscope_profile(const struct view *v, FILE *out, const char *name, uint32_t top,
			       uint32_t *path)
{
	size_t skip = top ? v->nodes[top].depth : 0, d;
	bool first = true;
	uint32_t i;

	fputs("{\"type\":\"sampled\",\"name\":", out);
	view_put_json_string(out, name);
	fprintf(out, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[",
		v->nodes[top].total);
	for (i = top ? top : subtree_next(v, 0, 0); i; i = subtree_next(v, top, i)) {
		if (!v->nodes[i].self)
			continue;
		path_of(v, i, path);
		fputs(first ? "\n[" : ",\n[", out);
		first = false;
		for (d = skip; d < v->nodes[i].depth; d++)
			fprintf(out, d > skip ? ",%u" : "%u", path[d] - 1);
		fputc(']', out);
	}
	fputs("],\"weights\":[", out);
	first = true;
	for (i = top ? top : subtree_next(v, 0, 0); i; i = subtree_next(v, top, i)) {
		if (!v->nodes[i].self)
			continue;
		fprintf(out, first ? "%" PRIu64 : ",%" PRIu64, v->nodes[i].self);
		first = false;
	}
	fputs("]}", out);
}

int view_write_speedscope(const struct view *v, FILE *out, const char *title)
{
	uint32_t *path = calloc(v->st.depth_max + 1, sizeof(*path)), i, g;
	const struct view_frame *f;
	bool first = true;
	size_t k;

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
	fputs("]},\"profiles\":[", out);
	if (!v->group_text) {
		speedscope_profile(v, out, title, 0, path);
	} else {
		/* with groups, a profile per group (speedscope's profile selector), biggest first */
		for (k = 0; k < v->norder; k++) {
			g = root_child(v, v->groups[v->order[k]].frame);
			if (!g)
				continue;
			if (!first)
				fputc(',', out);
			first = false;
			speedscope_profile(v, out, v->groups[v->order[k]].name, g, path);
		}
	}
	fputs("]}\n", out);
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
