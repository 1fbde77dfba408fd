// SPDX-License-Identifier: GPL-2.0-only
/*
 * toptable.c - the oneshot summary's tables: self/total shares per function (name and file, all
 * lines together); with clock = wall, each thread's time per state and each state's leaf
 * functions.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "lib/hash.h"
#include "lib/hmap.h"
#include "profile/wall.h"
#include "rubyprof.h"
#include "view/toptable.h"

/* part's share of whole, in percent. */
static double share(double part, double whole)
{
	return 100.0 * part / whole;
}

struct fn_row {
	const char *name;
	const char *file;
	enum aggregate_frame_kind kind;
	uint64_t self, total;
	uint64_t last_stack; /* stack number that last counted `total`, to count it once */
	size_t next;	     /* index + 1 of the next row with the same hash */
};

struct top_ctx {
	struct hmap by_fn; /* (hash of name and file, kind) -> first row index + 1, chained */
	struct fn_row *rows;
	size_t nrows, cap;
	uint64_t nstack;
	uint64_t total; /* values[0] of the stacks counted */
	toptable_keep_fn keep;
	void *keep_ctx;
	size_t drop_root;
	int err;
};

/*
 * One row per function (name, file, kind) across every process: the same method in two
 * processes is one line of the summary. A C function's file is its caller's (as in Ruby's
 * backtraces), not its own: it is one function wherever it is called from.
 */
static struct fn_row *row_of(struct top_ctx *x, const struct aggregate_frame *f)
{
	const char *file = f->kind == AGG_FRAME_RUBY ? f->file : "";
	uint64_t h = hash_str(hash_str(HASH_INIT, f->name), file), head = 0;
	struct fn_row *nr;
	size_t idx;

	if (hmap_get(&x->by_fn, h, f->kind, &head)) {
		for (idx = head; idx; idx = x->rows[idx - 1].next) {
			nr = &x->rows[idx - 1];
			if (strcmp(nr->name, f->name) == 0 && strcmp(nr->file, file) == 0)
				return nr;
		}
	}
	if (array_reserve(x->rows, x->cap, x->nrows + 1, 64))
		return NULL;
	nr = &x->rows[x->nrows];
	memset(nr, 0, sizeof(*nr));
	nr->name = f->name;
	nr->file = file;
	nr->kind = f->kind;
	nr->next = head;
	if (hmap_put(&x->by_fn, h, f->kind, x->nrows + 1))
		return NULL;
	x->nrows++;
	return nr;
}

static void count_stack(void *ctx, const struct aggregate_stack *st)
{
	struct top_ctx *x = ctx;
	size_t i, n = st->nframes;
	struct fn_row *r;

	if (x->err || (x->keep && !x->keep(x->keep_ctx, st)))
		return;
	x->total += (uint64_t)st->values[0];
	n = n > x->drop_root ? n - x->drop_root : 0;
	if (!n)
		return;
	x->nstack++;
	for (i = 0; i < n; i++) {
		r = row_of(x, aggregate_frame_get(st->proc, st->frames[i]));
		if (!r) {
			x->err = -ENOMEM;
			return;
		}
		if (i == 0)
			r->self += (uint64_t)st->values[0];
		if (r->last_stack != x->nstack) {
			r->last_stack = x->nstack;
			r->total += (uint64_t)st->values[0];
		}
	}
}

static int by_self(const void *a, const void *b)
{
	const struct fn_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

int toptable_write_of(FILE *out, const struct aggregate *a, unsigned int top, toptable_keep_fn keep,
		      void *ctx, size_t drop_root)
{
	struct top_ctx x = {.keep = keep, .keep_ctx = ctx, .drop_root = drop_root};
	uint64_t total;
	size_t i;

	aggregate_foreach(a, count_stack, &x);
	if (x.err)
		goto cleanup;
	total = x.total;
	qsort(x.rows, x.nrows, sizeof(*x.rows), by_self);
	if (total && top) {
		fprintf(out, "  %6s %7s %8s  %s\n", "self", "total", "samples", "function");
		for (i = 0; i < x.nrows && i < top; i++) {
			fprintf(out, "  %5.1f%% %6.1f%% %8llu  %s%s",
				share((double)x.rows[i].self, (double)total),
				share((double)x.rows[i].total, (double)total),
				(unsigned long long)x.rows[i].self, x.rows[i].name,
				x.rows[i].kind == AGG_FRAME_CFUNC ? " [c]" : "");
			if (x.rows[i].file[0] && x.rows[i].kind == AGG_FRAME_RUBY)
				fprintf(out, "  %s", x.rows[i].file);
			fputc('\n', out);
		}
	}
cleanup:
	hmap_clear(&x.by_fn);
	free(x.rows);
	return x.err;
}

int toptable_write(FILE *out, const struct aggregate *a, unsigned int top)
{
	return toptable_write_of(out, a, top, NULL, NULL, 0);
}

/* ---- clock = wall: each thread's wall time per state ------------------------------------ */

/* Threads the summary lists at most (the rest are counted in one line). */
#define REPORT_WALL_THREADS 64
/* The states wall_state_name names, RP_TSTATE_NONE (no label) to RP_TSTATE_UNKNOWN. */
#define REPORT_WALL_STATES  (RP_TSTATE_UNKNOWN + 1)

struct wall_row_sum {
	pid_t pid;
	const char *id, *name; /* the aggregate's strings (alive while it is) */
	int64_t ns[REPORT_WALL_STATES];
	int64_t total;
};

/* Leaf functions kept per state for the summary's split top list (more are counted). */
#define REPORT_WALL_LEAVES 32
#define REPORT_WALL_TOP	   3

struct wall_leaf {
	const char *name; /* the aggregate's string */
	int64_t ns;
};

struct wall_table {
	struct wall_row_sum rows[REPORT_WALL_THREADS];
	size_t n;
	uint64_t more; /* samples of threads beyond the bound */
	struct wall_leaf leaves[REPORT_WALL_STATES][REPORT_WALL_LEAVES];
	size_t nleaves[REPORT_WALL_STATES];
	int64_t state_ns[REPORT_WALL_STATES];
	uint64_t more_leaves; /* stacks whose leaf found no room */
};

static unsigned int state_of(const char *name)
{
	unsigned int i;

	for (i = 0; i < REPORT_WALL_STATES; i++) {
		if (wall_state_name(i) && strcmp(wall_state_name(i), name) == 0)
			return i;
	}
	return RP_TSTATE_UNKNOWN;
}

/* The stack's time under its leaf function, in its state. */
static void add_leaf(struct wall_table *r, unsigned int state, const struct aggregate_stack *st)
{
	const struct aggregate_frame *f =
		st->nframes ? aggregate_frame_get(st->proc, st->frames[0]) : NULL;
	const char *name = f ? f->name : "[no frames]";
	struct wall_leaf *l = r->leaves[state];
	size_t i;

	r->state_ns[state] += st->values[1];
	for (i = 0; i < r->nleaves[state]; i++) {
		if (strcmp(l[i].name, name) == 0) {
			l[i].ns += st->values[1];
			return;
		}
	}
	if (r->nleaves[state] == REPORT_WALL_LEAVES) {
		r->more_leaves++;
		return;
	}
	l[r->nleaves[state]++] = (struct wall_leaf){.name = name, .ns = st->values[1]};
}

static int leaf_cmp(const void *a, const void *b)
{
	const struct wall_leaf *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : strcmp(x->name, y->name);
}

static void wall_stack(void *ctx, const struct aggregate_stack *st)
{
	struct wall_table *r = ctx;
	struct wall_row_sum *row = NULL;
	size_t i;

	if (!st->state || !st->state[0])
		return;
	for (i = 0; i < r->n; i++) {
		if (r->rows[i].pid == st->pid && strcmp(r->rows[i].id, st->ruby_thread) == 0)
			row = &r->rows[i];
	}
	if (!row) {
		if (r->n == REPORT_WALL_THREADS) {
			r->more++;
			return;
		}
		row = &r->rows[r->n++];
		row->pid = st->pid;
		row->id = st->ruby_thread;
		row->name = st->ruby_thread_name[0] ? st->ruby_thread_name : st->thread_name;
	}
	row->ns[state_of(st->state)] += st->values[1];
	row->total += st->values[1];
	add_leaf(r, state_of(st->state), st);
}

void toptable_wall(FILE *f, const struct aggregate *a)
{
	struct wall_table *r = calloc(1, sizeof(*r));
	unsigned int k;
	size_t i;

	if (!r)
		return;
	aggregate_foreach(a, wall_stack, r);
	fprintf(f, "wall time per thread and state:\n");
	for (i = 0; i < r->n; i++) {
		fprintf(f, "  pid %d thread %s (%s): %.3f s", (int)r->rows[i].pid,
			r->rows[i].id[0] ? r->rows[i].id : "?",
			r->rows[i].name[0] ? r->rows[i].name : "unnamed", r->rows[i].total / 1e9);
		for (k = 0; k < REPORT_WALL_STATES; k++) {
			if (r->rows[i].ns[k])
				fprintf(f, ", %s %.1f%%", wall_state_name(k),
					share((double)r->rows[i].ns[k], (double)r->rows[i].total));
		}
		fputc('\n', f);
	}
	if (r->more)
		fprintf(f, "  (and %" PRIu64 " stacks of more threads)\n", r->more);
	fprintf(f, "wall time per state, top leaf functions:\n");
	for (k = 0; k < REPORT_WALL_STATES; k++) {
		if (!r->state_ns[k])
			continue;
		qsort(r->leaves[k], r->nleaves[k], sizeof(r->leaves[k][0]), leaf_cmp);
		fprintf(f, "  %-10s %8.3f s", wall_state_name(k), r->state_ns[k] / 1e9);
		for (i = 0; i < r->nleaves[k] && i < REPORT_WALL_TOP; i++)
			fprintf(f, "%s %.1f%% %s", i ? "," : ":",
				share((double)r->leaves[k][i].ns, (double)r->state_ns[k]),
				r->leaves[k][i].name);
		fputc('\n', f);
	}
	if (r->more_leaves)
		fprintf(f, "  (%" PRIu64 " stacks under more leaf functions than listed)\n",
			r->more_leaves);
	free(r);
}
