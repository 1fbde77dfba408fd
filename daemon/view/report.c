// SPDX-License-Identifier: GPL-2.0-only
/* report.c - self/total shares per function (name and file, all lines together). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/hmap.h"
#include "view/report.h"

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
	if (x->nrows == x->cap) {
		nr = realloc(x->rows, (x->cap ? x->cap * 2 : 64) * sizeof(*nr));
		if (!nr)
			return NULL;
		x->rows = nr;
		x->cap = x->cap ? x->cap * 2 : 64;
	}
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
	struct fn_row *r;
	size_t i;

	if (x->err || !st->nframes)
		return;
	x->nstack++;
	for (i = 0; i < st->nframes; i++) {
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

int report_top(FILE *out, const struct aggregate *a, unsigned int top)
{
	struct top_ctx x = {0};
	uint64_t total = aggregate_total(a);
	size_t i;

	aggregate_foreach(a, count_stack, &x);
	if (x.err)
		goto cleanup;
	qsort(x.rows, x.nrows, sizeof(*x.rows), by_self);
	if (total && top) {
		fprintf(out, "  %6s %7s %8s  %s\n", "self", "total", "samples", "function");
		for (i = 0; i < x.nrows && i < top; i++) {
			fprintf(out, "  %5.1f%% %6.1f%% %8llu  %s%s",
				100.0 * x.rows[i].self / total, 100.0 * x.rows[i].total / total,
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
