// SPDX-License-Identifier: GPL-2.0-only
/*
 * pprofread.c - decodes a perftools.profiles.Profile by hand: gunzip with zlib into one buffer
 * (bounded), then one pass over the message's fields into flat pools, then the references are
 * checked and indexed by id.
 *
 * The message's nesting is fixed by the schema (Profile > Sample > Label, Profile > Location >
 * Line): only those messages are descended into, unknown fields are skipped by their wire type,
 * so no input nests deeper than three levels.
 */
#define ZLIB_CONST
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/array.h"
#include "lib/fileio.h"
#include "lib/hmap.h"
#include "lib/pbread.h"
#include "lib/text.h"
#include "view/pprofread.h"

/* ---- growable pools --------------------------------------------------------------------------- */

struct pool {
	void *data;
	size_t len, cap, elem;
};

/* Room for one more element; a pointer to it (zeroed), or NULL (ENOMEM). */
static void *pool_push(struct pool *p)
{
	void *tmp;

	tmp = array_realloc(p->data, &p->cap, p->len + 1, p->elem, 16);
	if (!tmp)
		return NULL;
	p->data = tmp;
	tmp = (char *)p->data + p->len++ * p->elem;
	memset(tmp, 0, p->elem);
	return tmp;
}

/* While decoding, nested arrays are offsets into pools (which move as they grow). */
struct rsample {
	size_t loc_off, nlocs, val_off, nvals, lab_off, nlabs;
};

struct rlocation {
	struct pprofread_location loc;
	size_t line_off;
};

struct pprofread {
	struct pprofread_profile prof;
	struct pool strs;     /* size_t offsets into chars */
	struct pool chars;    /* NUL-terminated copies */
	struct pool types;    /* struct pprofread_value_type */
	struct pool rsamples; /* struct rsample */
	struct pool locids;   /* uint64_t */
	struct pool values;   /* int64_t */
	struct pool labels;   /* struct pprofread_label */
	struct pool rlocs;    /* struct rlocation */
	struct pool lines;    /* struct pprofread_line */
	struct pool funcs;    /* struct pprofread_function */
	struct pool maps;     /* struct pprofread_mapping */
	struct pool comments; /* uint64_t */
	const char **strings; /* built at the end */
	struct pprofread_sample *samples;
	struct pprofread_location *locations;
	struct hmap loc_by_id, fn_by_id, map_by_id; /* id -> index + 1 */
	/* Location ids are usually 1..n (ours are): then id -> index + 1 is an array, not a hash
	 * lookup per frame of every sample. NULL when the ids are sparse. */
	uint32_t *loc_dense;
	size_t loc_dense_len;
};

/*
 * Row `off` of a pool of rows of `size` bytes. A pool that never got a row has no memory (NULL +
 * 0 is undefined): a static stand-in then, never read (whatever points there counts 0 rows).
 */
static const void *pool_at(const struct pool *p, size_t size, size_t off)
{
	static const uint64_t none[8];

	return p->data ? (const char *)p->data + size * off : (const void *)none;
}

/* The reader a decoder fills. */
static struct pprofread *reader(const struct pbread_dec *d)
{
	return d->ctx;
}

static int nomem(struct pbread_dec *d)
{
	return pbread_fail(d, d->pos, -ENOMEM, "out of memory");
}

/*
 * A repeated message field f: fn reads it into a new element of pool. count is how many there
 * are so far (the pool's length, or the parent's count of them, which is bumped); at max the
 * profile is refused.
 */
static int sub_push(struct pbread_dec *d, const struct pbread_field *f, struct pool *pool,
		    size_t *count, uint64_t max, const char *what, pbread_fn fn)
{
	void *obj;

	if ((count ? *count : pool->len) >= max)
		return pbread_fail(d, f->at, -EFBIG, "more than %llu %s", (unsigned long long)max,
				   what);
	obj = pool_push(pool);
	if (!obj)
		return nomem(d);
	if (count)
		(*count)++;
	return pbread_sub(d, f->start, f->end, fn, obj);
}

/*
 * A repeated scalar: packed (PB_WT_LEN) or one value (PB_WT_VARINT). Appends to pool (8-byte elements);
 * *count is bumped per value, and past max the profile is refused.
 */
static int repeated(struct pbread_dec *d, const struct pbread_field *f, struct pool *pool,
		    size_t *count, uint64_t max, const char *what)
{
	size_t pos = d->pos, oend = d->end;
	uint64_t *slot, v = f->v;

	if (f->wt == PB_WT_VARINT) {
		if (*count >= max)
			return pbread_fail(d, pos, -EFBIG, "more than %llu %s",
					   (unsigned long long)max, what);
		slot = pool_push(pool);
		if (!slot)
			return nomem(d);
		*slot = v;
		(*count)++;
		return 0;
	}
	if (f->wt != PB_WT_LEN)
		return pbread_fail(d, pos, -EINVAL, "%s: wire type %u", what, f->wt);
	d->pos = f->start;
	d->end = f->end;
	while (d->pos < d->end && !d->ret) {
		if (*count >= max) {
			pbread_fail_msg(d, d->pos, -EFBIG, "more than %llu %s",
					(unsigned long long)max, what);
			break;
		}
		if (pbread_varint(d, &v))
			break;
		slot = pool_push(pool);
		if (!slot) {
			nomem(d);
			break;
		}
		*slot = v;
		(*count)++;
	}
	d->pos = pos;
	d->end = oend;
	return d->ret;
}

/* ---- messages ---------------------------------------------------------------------------- */

/*
 * The varint fields of a message: field N goes to *slot[N - 1] (a NULL slot, a number past n
 * and other wire types are skipped). int64 fields are two's complement varints, stored through
 * a uint64_t pointer (the unsigned type may alias the signed one).
 */
static void set_varint(const struct pbread_field *f, uint64_t *const *slot, size_t n)
{
	if (f->wt == PB_WT_VARINT && f->num <= n && slot[f->num - 1])
		*slot[f->num - 1] = f->v;
}

/* A message of varint fields only (see set_varint). */
static int dec_varints(struct pbread_dec *d, uint64_t *const *slot, size_t n)
{
	struct pbread_field f;

	while (pbread_next_field(d, &f))
		set_varint(&f, slot, n);
	return d->ret;
}

#define DEC_VARINTS(d, ...)                                                                        \
	dec_varints((d), (uint64_t *const[]){__VA_ARGS__},                                         \
		    sizeof((uint64_t *const[]){__VA_ARGS__}) / sizeof(uint64_t *))

static int dec_value_type(struct pbread_dec *d, void *obj)
{
	struct pprofread_value_type *vt = obj;

	return DEC_VARINTS(d, &vt->type, &vt->unit);
}

static int dec_label(struct pbread_dec *d, void *obj)
{
	struct pprofread_label *l = obj;

	return DEC_VARINTS(d, &l->key, &l->str, (uint64_t *)&l->num, &l->num_unit);
}

static int dec_line(struct pbread_dec *d, void *obj)
{
	struct pprofread_line *l = obj;

	return DEC_VARINTS(d, &l->function_id, (uint64_t *)&l->line);
}

static int dec_function(struct pbread_dec *d, void *obj)
{
	struct pprofread_function *fn = obj;

	return DEC_VARINTS(d, &fn->id, &fn->name, &fn->system_name, &fn->filename,
			   (uint64_t *)&fn->start_line);
}

static int dec_mapping(struct pbread_dec *d, void *obj)
{
	struct pprofread_mapping *m = obj;

	return DEC_VARINTS(d, &m->id, &m->start, &m->limit, &m->offset, &m->filename, &m->build_id);
}

static int dec_sample(struct pbread_dec *d, void *obj)
{
	struct rsample *s = obj;
	struct pprofread *r = reader(d);
	struct pbread_field f;

	s->loc_off = r->locids.len;
	s->val_off = r->values.len;
	s->lab_off = r->labels.len;
	while (pbread_next_field(d, &f)) {
		if (f.num == 1) {
			if (r->locids.len >= PPROFREAD_MAX_STACK_TOTAL)
				return pbread_fail(d, f.at, -EFBIG,
						   "more than %llu location ids in all samples",
						   (unsigned long long)PPROFREAD_MAX_STACK_TOTAL);
			repeated(d, &f, &r->locids, &s->nlocs, PPROFREAD_MAX_STACK,
				 "locations in a sample");
		} else if (f.num == 2) {
			repeated(d, &f, &r->values, &s->nvals, PPROFREAD_MAX_VALUES,
				 "values in a sample");
		} else if (f.num == 3 && f.wt == PB_WT_LEN) {
			sub_push(d, &f, &r->labels, &s->nlabs, PPROFREAD_MAX_LABELS,
				 "labels in a sample", dec_label);
		}
	}
	return d->ret;
}

static int dec_location(struct pbread_dec *d, void *obj)
{
	struct rlocation *rl = obj;
	struct pprofread *r = reader(d);
	uint64_t *const slot[] = {&rl->loc.id, &rl->loc.mapping_id, &rl->loc.address};
	struct pbread_field f;

	rl->line_off = r->lines.len;
	while (pbread_next_field(d, &f)) {
		if (f.wt == PB_WT_LEN && f.num == 4)
			sub_push(d, &f, &r->lines, &rl->loc.nlines, PPROFREAD_MAX_LINES,
				 "lines in a location", dec_line);
		else
			set_varint(&f, slot, sizeof(slot) / sizeof(slot[0]));
	}
	return d->ret;
}

static int add_string(struct pbread_dec *d, size_t start, size_t end)
{
	struct pprofread *r = reader(d);
	size_t *off, len = end - start;
	char *c;

	if (r->strs.len >= PPROFREAD_MAX_STRINGS)
		return pbread_fail(d, start, -EFBIG, "more than %u strings", PPROFREAD_MAX_STRINGS);
	off = pool_push(&r->strs);
	if (!off)
		return nomem(d);
	*off = r->chars.len;
	/* len is below the message's size, itself bounded: no overflow */
	c = array_realloc(r->chars.data, &r->chars.cap, r->chars.len + len + 1, 1, 4096);
	if (!c)
		return nomem(d);
	r->chars.data = c;
	c = (char *)r->chars.data + r->chars.len;
	memcpy(c, d->buf + start, len);
	c[len] = '\0';
	r->chars.len += len + 1;
	return 0;
}

struct table_field {
	size_t pool; /* offset of its struct pool in struct pprofread */
	uint64_t max;
	const char *what;
	pbread_fn fn;
};

static int dec_profile(struct pbread_dec *d)
{
	struct pprofread *r = reader(d);
	uint64_t *const slot[] = {[8] = (uint64_t *)&r->prof.time_ns,
				  [9] = (uint64_t *)&r->prof.duration_ns,
				  [11] = (uint64_t *)&r->prof.period};
	/* the repeated messages of a Profile by field number: the pool each goes to, its bound */
	static const struct table_field tables[] = {
		[1] = {offsetof(struct pprofread, types), PPROFREAD_MAX_VALUES, "sample types",
		       dec_value_type},
		[2] = {offsetof(struct pprofread, rsamples), PPROFREAD_MAX_SAMPLES, "samples",
		       dec_sample},
		[3] = {offsetof(struct pprofread, maps), PPROFREAD_MAX_TABLE, "mappings",
		       dec_mapping},
		[4] = {offsetof(struct pprofread, rlocs), PPROFREAD_MAX_TABLE, "locations",
		       dec_location},
		[5] = {offsetof(struct pprofread, funcs), PPROFREAD_MAX_TABLE, "functions",
		       dec_function},
	};
	struct pbread_field f;
	const struct table_field *t;

	while (pbread_next_field(d, &f)) {
		if (f.num == 13) {
			r->prof.ncomments = r->comments.len;
			repeated(d, &f, &r->comments, &r->prof.ncomments, 1u << 20, "comments");
			continue;
		}
		if (f.wt != PB_WT_LEN) {
			set_varint(&f, slot, sizeof(slot) / sizeof(slot[0]));
			continue;
		}
		if (f.num == 6) {
			add_string(d, f.start, f.end);
		} else if (f.num == 11) {
			pbread_sub(d, f.start, f.end, dec_value_type, &r->prof.period_type);
		} else if (f.num < sizeof(tables) / sizeof(tables[0]) && tables[f.num].fn) {
			t = &tables[f.num];
			sub_push(d, &f, (struct pool *)((char *)r + t->pool), NULL, t->max, t->what,
				 t->fn);
		}
	}
	return d->ret;
}

/* ---- checks and indexes ------------------------------------------------------------------- */

static int check_str(struct pbread_dec *d, uint64_t idx, const char *what, uint64_t id)
{
	if (idx < reader(d)->strs.len)
		return 0;
	return pbread_fail(d, d->end, -EINVAL,
			   "%s %llu: string index %llu past the table (%zu strings)", what,
			   (unsigned long long)id, (unsigned long long)idx, reader(d)->strs.len);
}

static int index_ids(struct pbread_dec *d, struct hmap *h, const void *base, size_t n, size_t elem,
		     const char *what)
{
	uint64_t id, old;
	size_t i;

	for (i = 0; i < n; i++) {
		id = *(const uint64_t *)((const char *)base + i * elem);
		if (!id)
			return pbread_fail(d, d->end, -EINVAL, "%s #%zu has id 0", what, i + 1);
		if (hmap_get(h, id, 0, &old))
			return pbread_fail(d, d->end, -EINVAL, "%s id %llu appears twice", what,
					   (unsigned long long)id);
		if (hmap_put(h, id, 0, i + 1))
			return nomem(d);
	}
	return 0;
}

static int build_dense(struct pprofread *r)
{
	const struct rlocation *rl = r->rlocs.data;
	uint64_t max = 0;
	size_t i;

	for (i = 0; i < r->rlocs.len; i++)
		max = rl[i].loc.id > max ? rl[i].loc.id : max;
	if (!r->rlocs.len || max > 2 * (uint64_t)r->rlocs.len + 1024)
		return 0;
	r->loc_dense = calloc(max + 1, sizeof(*r->loc_dense));
	if (!r->loc_dense)
		return -ENOMEM;
	r->loc_dense_len = max + 1;
	for (i = 0; i < r->rlocs.len; i++)
		r->loc_dense[rl[i].loc.id] = (uint32_t)(i + 1);
	return 0;
}

/* Builds the public view of the pools and checks every reference. */
static int finish(struct pbread_dec *d)
{
	struct pprofread *r = reader(d);
	struct pprofread_profile *p = &r->prof;
	const struct rsample *rs = r->rsamples.data;
	const struct rlocation *rl = r->rlocs.data;
	const struct pprofread_function *fn = r->funcs.data;
	const struct pprofread_mapping *m = r->maps.data;
	const struct pprofread_label *l;
	const struct pprofread_line *ln;
	const size_t *off = r->strs.data;
	size_t i, j, nt;
	uint64_t v;

	if (r->strs.len == 0 || ((const char *)r->chars.data)[off[0]] != '\0')
		return pbread_fail(d, d->end, -EINVAL, "the string table does not start with \"\"");
	r->strings = calloc(r->strs.len, sizeof(*r->strings));
	r->samples = calloc(r->rsamples.len ? r->rsamples.len : 1, sizeof(*r->samples));
	r->locations = calloc(r->rlocs.len ? r->rlocs.len : 1, sizeof(*r->locations));
	if (!r->strings || !r->samples || !r->locations)
		return nomem(d);
	/* A profile may come from anywhere: what a view prints (a terminal, a page) is cleaned. */
	for (i = 0; i < r->strs.len; i++) {
		text_clean((char *)r->chars.data + off[i]);
		r->strings[i] = (const char *)r->chars.data + off[i];
	}
	nt = r->types.len;
	for (i = 0; i < nt; i++) {
		const struct pprofread_value_type *vt =
			(const struct pprofread_value_type *)r->types.data + i;

		if (check_str(d, vt->type, "sample type", i + 1) ||
		    check_str(d, vt->unit, "sample type", i + 1))
			return d->ret;
	}
	if (check_str(d, p->period_type.type, "period type", 1) ||
	    check_str(d, p->period_type.unit, "period type", 1))
		return d->ret;
	if (index_ids(d, &r->map_by_id, m, r->maps.len, sizeof(*m), "mapping") ||
	    index_ids(d, &r->fn_by_id, fn, r->funcs.len, sizeof(*fn), "function") ||
	    index_ids(d, &r->loc_by_id, rl, r->rlocs.len, sizeof(*rl), "location"))
		return d->ret;
	if (build_dense(r))
		return nomem(d);
	for (i = 0; i < r->maps.len; i++) {
		if (check_str(d, m[i].filename, "mapping", m[i].id) ||
		    check_str(d, m[i].build_id, "mapping", m[i].id))
			return d->ret;
	}
	for (i = 0; i < r->funcs.len; i++) {
		if (check_str(d, fn[i].name, "function", fn[i].id) ||
		    check_str(d, fn[i].system_name, "function", fn[i].id) ||
		    check_str(d, fn[i].filename, "function", fn[i].id))
			return d->ret;
	}
	for (i = 0; i < r->rlocs.len; i++) {
		r->locations[i] = rl[i].loc;
		r->locations[i].lines =
			pool_at(&r->lines, sizeof(struct pprofread_line), rl[i].line_off);
		if (rl[i].loc.mapping_id && !hmap_get(&r->map_by_id, rl[i].loc.mapping_id, 0, &v))
			return pbread_fail(d, d->end, -EINVAL, "location %llu: no mapping %llu",
					   (unsigned long long)rl[i].loc.id,
					   (unsigned long long)rl[i].loc.mapping_id);
		for (j = 0; j < rl[i].loc.nlines; j++) {
			ln = r->locations[i].lines + j;
			if (ln->function_id && !hmap_get(&r->fn_by_id, ln->function_id, 0, &v))
				return pbread_fail(d, d->end, -EINVAL,
						   "location %llu: no function %llu",
						   (unsigned long long)rl[i].loc.id,
						   (unsigned long long)ln->function_id);
		}
	}
	for (i = 0; i < r->rsamples.len; i++) {
		if (rs[i].nvals != nt)
			return pbread_fail(d, d->end, -EINVAL,
					   "sample %zu: %zu values for %zu sample types", i + 1,
					   rs[i].nvals, nt);
		r->samples[i].location_ids = pool_at(&r->locids, sizeof(uint64_t), rs[i].loc_off);
		r->samples[i].nlocations = rs[i].nlocs;
		r->samples[i].values = pool_at(&r->values, sizeof(int64_t), rs[i].val_off);
		r->samples[i].labels =
			pool_at(&r->labels, sizeof(struct pprofread_label), rs[i].lab_off);
		r->samples[i].nlabels = rs[i].nlabs;
		for (j = 0; j < rs[i].nlocs; j++) {
			if (!pprofread_location_index(r, r->samples[i].location_ids[j]))
				return pbread_fail(
					d, d->end, -EINVAL, "sample %zu: no location %llu", i + 1,
					(unsigned long long)r->samples[i].location_ids[j]);
		}
		for (j = 0; j < rs[i].nlabs; j++) {
			l = r->samples[i].labels + j;
			if (check_str(d, l->key, "sample", i + 1) ||
			    check_str(d, l->str, "sample", i + 1) ||
			    check_str(d, l->num_unit, "sample", i + 1))
				return d->ret;
		}
	}
	for (i = 0; i < r->comments.len; i++) {
		if (check_str(d, ((const uint64_t *)r->comments.data)[i], "comment", i + 1))
			return d->ret;
	}
	p->strings = r->strings;
	p->nstrings = r->strs.len;
	p->sample_types = r->types.data;
	p->nsample_types = nt;
	p->samples = r->samples;
	p->nsamples = r->rsamples.len;
	p->mappings = r->maps.data;
	p->nmappings = r->maps.len;
	p->locations = r->locations;
	p->nlocations = r->rlocs.len;
	p->functions = r->funcs.data;
	p->nfunctions = r->funcs.len;
	p->comments = r->comments.data;
	p->ncomments = r->comments.len;
	return 0;
}

/* ---- gzip ---------------------------------------------------------------------------------- */

/* Inflates a gzip stream into a malloc'd buffer of at most PPROFREAD_MAX_BYTES. */
static int gunzip(struct pbread_dec *d, const uint8_t *in, size_t len, uint8_t **out,
		  size_t *out_len)
{
	const size_t piece = 1u << 30; /* zlib's counts are uInt: feed and drain in pieces */
	size_t cap = len * 4 + 4096, n = 0;
	z_stream zs = {0};
	uint8_t *buf, *tmp;
	int zret, ret = 0;

	if (cap > PPROFREAD_MAX_BYTES)
		cap = PPROFREAD_MAX_BYTES;
	buf = malloc(cap);
	if (!buf)
		return nomem(d);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
		free(buf);
		return pbread_fail(d, 0, -ENOMEM, "zlib: inflateInit2 failed");
	}
	zs.next_in = in;
	for (;;) {
		if (n == cap) {
			if (cap >= PPROFREAD_MAX_BYTES) {
				ret = pbread_fail(d, zs.total_in, -EFBIG,
						  "gzip: decompresses to more than %llu bytes",
						  (unsigned long long)PPROFREAD_MAX_BYTES);
				goto cleanup;
			}
			cap = cap * 2 > PPROFREAD_MAX_BYTES ? PPROFREAD_MAX_BYTES : cap * 2;
			tmp = realloc(buf, cap);
			if (!tmp) {
				ret = nomem(d);
				goto cleanup;
			}
			buf = tmp;
		}
		zs.avail_in = (uInt)(len - zs.total_in > piece ? piece : len - zs.total_in);
		zs.next_out = buf + n;
		zs.avail_out = (uInt)(cap - n > piece ? piece : cap - n);
		zret = inflate(&zs, Z_NO_FLUSH);
		n = zs.total_out;
		if (zret == Z_STREAM_END)
			break;
		if (zret == Z_OK || (zret == Z_BUF_ERROR && zs.avail_out == 0))
			continue;
		/* Z_BUF_ERROR with room to write: the input ended inside the stream */
		ret = pbread_fail(d, zs.total_in, zret == Z_MEM_ERROR ? -ENOMEM : -EINVAL,
				  "gzip: %s at compressed byte %lu",
				  zret == Z_BUF_ERROR ? "truncated stream"
				  : zs.msg	      ? zs.msg
						      : "corrupt stream",
				  zs.total_in);
		goto cleanup;
	}
	*out = buf;
	*out_len = n;
	buf = NULL;
cleanup:
	inflateEnd(&zs);
	free(buf);
	return ret;
}

/* ---- public -------------------------------------------------------------------------------- */

/* The pools' rows (a pool that never got one holds NULL). */
static void pools_free(struct pprofread *r)
{
	struct pool *const pools[] = {&r->strs,	  &r->chars,  &r->types,  &r->rsamples,
				      &r->locids, &r->values, &r->labels, &r->rlocs,
				      &r->lines,  &r->funcs,  &r->maps,	  &r->comments};
	size_t i;

	for (i = 0; i < sizeof(pools) / sizeof(pools[0]); i++)
		free(pools[i]->data);
}

void pprofread__free(struct pprofread *r)
{
	if (!r)
		return;
	pools_free(r);
	free(r->strings);
	free(r->samples);
	free(r->locations);
	free(r->loc_dense);
	hmap_clear(&r->loc_by_id);
	hmap_clear(&r->fn_by_id);
	hmap_clear(&r->map_by_id);
	free(r);
}

static struct pprofread *reader_alloc(void)
{
	struct pprofread *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->strs.elem = sizeof(size_t);
	r->chars.elem = 1;
	r->types.elem = sizeof(struct pprofread_value_type);
	r->rsamples.elem = sizeof(struct rsample);
	r->locids.elem = sizeof(uint64_t);
	r->values.elem = sizeof(int64_t);
	r->labels.elem = sizeof(struct pprofread_label);
	r->rlocs.elem = sizeof(struct rlocation);
	r->lines.elem = sizeof(struct pprofread_line);
	r->funcs.elem = sizeof(struct pprofread_function);
	r->maps.elem = sizeof(struct pprofread_mapping);
	r->comments.elem = sizeof(uint64_t);
	return r;
}

struct pprofread *pprofread__new(const uint8_t *data, size_t len, const char *name, char *err,
				 size_t errlen)
{
	struct pbread_dec d = {.name = name ? name : "profile", .err = err, .errlen = errlen};
	uint8_t *plain = NULL;
	size_t plain_len = len;

	if (err && errlen)
		err[0] = '\0';
	d.ctx = reader_alloc();
	if (!d.ctx) {
		errno = ENOMEM;
		return NULL;
	}
	if (len >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		if (gunzip(&d, data, len, &plain, &plain_len))
			goto cleanup;
		data = plain;
	} else if (len > PPROFREAD_MAX_BYTES) {
		pbread_fail_msg(&d, 0, -EFBIG, "more than %llu bytes",
				(unsigned long long)PPROFREAD_MAX_BYTES);
		goto cleanup;
	}
	d.buf = data;
	d.end = plain_len;
	if (dec_profile(&d))
		goto cleanup;
	finish(&d);
cleanup:
	free(plain);
	if (d.ret) {
		pprofread__free(d.ctx);
		errno = -d.ret;
		return NULL;
	}
	return d.ctx;
}

struct pprofread *pprofread__open(const char *path, char *err, size_t errlen)
{
	struct pprofread *r = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int e;

	e = -fileio_read_file(path, 0, PPROFREAD_MAX_BYTES, &buf, &len);
	if (e) {
		snprintf(err, errlen, "%s: %s", path,
			 e == EFBIG    ? "larger than the reader's bound"
			 : e == EINVAL ? "not a regular file"
			 : e == ENOMEM ? "out of memory"
				       : strerror(e));
		errno = e;
		return NULL;
	}
	r = pprofread__new(buf, len, path, err, errlen);
	e = errno;
	free(buf);
	if (!r)
		errno = e;
	return r;
}

const struct pprofread_profile *pprofread_profile(const struct pprofread *r)
{
	return &r->prof;
}

size_t pprofread_location_index(const struct pprofread *r, uint64_t id)
{
	uint64_t i;

	if (r->loc_dense)
		return id < r->loc_dense_len ? r->loc_dense[id] : 0;
	return hmap_get(&r->loc_by_id, id, 0, &i) ? (size_t)i : 0;
}

const struct pprofread_location *pprofread_location(const struct pprofread *r, uint64_t id)
{
	size_t i = pprofread_location_index(r, id);

	return i ? &r->locations[i - 1] : NULL;
}

const struct pprofread_function *pprofread_function(const struct pprofread *r, uint64_t id)
{
	uint64_t i;

	return hmap_get(&r->fn_by_id, id, 0, &i)
		       ? (const struct pprofread_function *)r->funcs.data + i - 1
		       : NULL;
}

const struct pprofread_mapping *pprofread_mapping(const struct pprofread *r, uint64_t id)
{
	uint64_t i;

	return hmap_get(&r->map_by_id, id, 0, &i)
		       ? (const struct pprofread_mapping *)r->maps.data + i - 1
		       : NULL;
}

const char *pprofread_str(const struct pprofread *r, uint64_t idx)
{
	return idx < r->strs.len ? r->strings[idx] : "";
}
