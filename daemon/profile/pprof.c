// SPDX-License-Identifier: GPL-2.0-only
/*
 * pprof.c - builds a perftools.profiles.Profile (profile.proto, proto3) without a protobuf
 * library: strings, mappings, functions and locations are interned through hash maps (hmap.h),
 * samples are kept in flat pools, and the message is encoded by hand into one growable buffer,
 * then gzip'd with zlib.
 *
 * A NULL string argument means "" (string table index 0), which proto3 leaves out of the
 * encoding.
 */
#define ZLIB_CONST
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/array.h"
#include "lib/buf.h"
#include "lib/fileio.h"
#include "lib/hash.h"
#include "lib/hmap.h"
#include "profile/pprof.h"

/* ---- growable arrays ---------------------------------------------------------------------- */

struct vec {
	void *data;
	size_t len;  /* elements in use */
	size_t cap;  /* elements allocated */
	size_t elem; /* bytes per element */
};

/* Makes room for `need` more elements. 0 or -ENOMEM. */
static int vec_reserve(struct vec *v, size_t need)
{
	void *tmp;

	if (need <= v->cap - v->len)
		return 0;
	if (need > SIZE_MAX - v->len)
		return -ENOMEM;
	tmp = array_realloc(v->data, &v->cap, v->len + need, v->elem, 16);
	if (!tmp)
		return -ENOMEM;
	v->data = tmp;
	return 0;
}

static void *vec_at(const struct vec *v, size_t i)
{
	return (char *)v->data + i * v->elem;
}

/* ---- content-addressed tables -------------------------------------------------------------- */

/*
 * Strings and records are interned in a struct hmap keyed by a hash of their content (plus the
 * string's length) with their index as value. Different contents may share a hash, so a key
 * holds every index added under it and each is compared with the content.
 */

/* ---- interned strings --------------------------------------------------------------------- */

struct pp_str {
	char *s; /* owned, NUL-terminated */
	size_t len;
};

/* ---- interned records: fixed-width arrays of uint64_t, compared bytewise -------------------- */

struct rtab {
	struct vec recs;   /* elem = width * sizeof(uint64_t) */
	struct hmap index; /* content hash -> index into recs */
};

/* ---- the profile -------------------------------------------------------------------------- */

enum {
	MAPPING_START,
	MAPPING_LIMIT,
	MAPPING_OFFSET,
	MAPPING_FILENAME,
	MAPPING_BUILD_ID,
	MAPPING_WIDTH,
};

enum {
	FUNCTION_NAME,
	FUNCTION_SYSTEM_NAME,
	FUNCTION_FILENAME,
	FUNCTION_START_LINE,
	FUNCTION_WIDTH,
};

enum {
	LOCATION_MAPPING_ID,
	LOCATION_ADDRESS,
	LOCATION_FUNCTION_ID,
	LOCATION_LINE,
	LOCATION_WIDTH,
};

struct pp_sample {
	size_t loc_off; /* into pprof.sample_locs */
	size_t nlocs;
	size_t label_off; /* into pprof.sample_labels */
	size_t nlabels;
	int64_t values[2];
};

struct pp_label {
	uint64_t key; /* string indices */
	uint64_t str;
	uint64_t num_unit;
	int64_t num;
};

struct pprof {
	struct vec strs;       /* struct pp_str; [0] is "" */
	struct hmap str_index; /* content hash, length -> index into strs */
	struct rtab mappings;
	struct rtab functions;
	struct rtab locations;
	struct vec samples;	  /* struct pp_sample */
	struct vec sample_locs;	  /* uint64_t location ids of all samples */
	struct vec sample_labels; /* struct pp_label of all samples */
	struct vec comments;	  /* uint64_t string indices */
	int64_t period;
	int64_t time_ns;
	int64_t duration_ns;
	uint64_t str_samples, str_count, str_cpu, str_nanoseconds;
};

/* String table index of s (NULL: ""). 0 or -ENOMEM. */
static int str_intern(struct pprof *p, const char *s, uint64_t *idx)
{
	struct hmap_iter it = {0};
	const struct pp_str *old;
	struct pp_str *e;
	uint64_t hash, i;
	size_t len;
	int err;

	if (!s)
		s = "";
	len = strlen(s);
	hash = hash_bytes(HASH_INIT, s, len);
	while (hmap_next_dup(&p->str_index, hash, len, &it, &i)) {
		old = vec_at(&p->strs, i);
		if (old->len == len && !memcmp(old->s, s, len)) {
			*idx = i;
			return 0;
		}
	}
	if (p->strs.len >= UINT32_MAX)
		return -ENOMEM;
	err = vec_reserve(&p->strs, 1);
	if (err)
		return err;
	e = vec_at(&p->strs, p->strs.len);
	e->s = malloc(len + 1);
	if (!e->s)
		return -ENOMEM;
	memcpy(e->s, s, len + 1);
	e->len = len;
	err = hmap_add(&p->str_index, hash, len, p->strs.len);
	if (err) {
		free(e->s);
		return err;
	}
	*idx = p->strs.len++;
	return 0;
}

/* Id (index + 1) of the record rec in t, added if new; 0 with errno = ENOMEM on failure. */
static uint64_t rec_intern(struct rtab *t, const uint64_t *rec)
{
	struct hmap_iter it = {0};
	uint64_t hash, i;
	int err;

	hash = hash_bytes(HASH_INIT, rec, t->recs.elem);
	while (hmap_next_dup(&t->index, hash, 0, &it, &i)) {
		if (!memcmp(vec_at(&t->recs, i), rec, t->recs.elem))
			return i + 1;
	}
	if (t->recs.len >= UINT32_MAX) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = vec_reserve(&t->recs, 1);
	if (err)
		goto cleanup;
	err = hmap_add(&t->index, hash, 0, t->recs.len);
	if (err)
		goto cleanup;
	memcpy(vec_at(&t->recs, t->recs.len), rec, t->recs.elem);
	return ++t->recs.len;
cleanup:
	errno = -err;
	return 0;
}

static void rtab_init(struct rtab *t, size_t width)
{
	t->recs.elem = width * sizeof(uint64_t);
}

static void rtab_release(struct rtab *t)
{
	free(t->recs.data);
	hmap_clear(&t->index);
}

void pprof__free(struct pprof *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->strs.len; i++)
		free(((struct pp_str *)vec_at(&p->strs, i))->s);
	free(p->strs.data);
	hmap_clear(&p->str_index);
	rtab_release(&p->mappings);
	rtab_release(&p->functions);
	rtab_release(&p->locations);
	free(p->samples.data);
	free(p->sample_locs.data);
	free(p->sample_labels.data);
	free(p->comments.data);
	free(p);
}

struct pprof *pprof__new(void)
{
	struct pprof *p;
	uint64_t empty;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->strs.elem = sizeof(struct pp_str);
	p->samples.elem = sizeof(struct pp_sample);
	p->sample_locs.elem = sizeof(uint64_t);
	p->sample_labels.elem = sizeof(struct pp_label);
	p->comments.elem = sizeof(uint64_t);
	rtab_init(&p->mappings, MAPPING_WIDTH);
	rtab_init(&p->functions, FUNCTION_WIDTH);
	rtab_init(&p->locations, LOCATION_WIDTH);

	/* "" is interned first: the format requires string_table[0] == "". */
	err = str_intern(p, "", &empty);
	if (!err)
		err = str_intern(p, "samples", &p->str_samples);
	if (!err)
		err = str_intern(p, "count", &p->str_count);
	if (!err)
		err = str_intern(p, "cpu", &p->str_cpu);
	if (!err)
		err = str_intern(p, "nanoseconds", &p->str_nanoseconds);
	if (err)
		goto cleanup;
	return p;
cleanup:
	pprof__free(p);
	errno = -err;
	return NULL;
}

int pprof_set_wall(struct pprof *p)
{
	/* "cpu" stays interned (unused): the table has no removal, and it costs 4 bytes */
	return str_intern(p, "wall", &p->str_cpu);
}

void pprof_set_period(struct pprof *p, int64_t period_ns)
{
	p->period = period_ns;
}

void pprof_set_time(struct pprof *p, int64_t time_ns, int64_t duration_ns)
{
	p->time_ns = time_ns;
	p->duration_ns = duration_ns;
}

int pprof_add_comment(struct pprof *p, const char *comment)
{
	uint64_t idx;
	int err;

	err = vec_reserve(&p->comments, 1);
	if (err)
		return err;
	err = str_intern(p, comment, &idx);
	if (err)
		return err;
	*(uint64_t *)vec_at(&p->comments, p->comments.len++) = idx;
	return 0;
}

/* The strings strs[i] (where not NULL) interned into rec[i], then rec into t: its id, or 0 with
 * errno set. */
static uint64_t rec_intern_strs(struct pprof *p, struct rtab *t, uint64_t *rec,
				const char *const *strs, size_t n)
{
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		err = strs[i] ? str_intern(p, strs[i], &rec[i]) : 0;
		if (err) {
			errno = -err;
			return 0;
		}
	}
	return rec_intern(t, rec);
}

uint64_t pprof_mapping(struct pprof *p, uint64_t start, uint64_t limit, uint64_t offset,
		       const char *filename, const char *build_id)
{
	uint64_t rec[MAPPING_WIDTH] = {
		[MAPPING_START] = start,
		[MAPPING_LIMIT] = limit,
		[MAPPING_OFFSET] = offset,
	};
	const char *strs[MAPPING_WIDTH] = {
		[MAPPING_FILENAME] = filename,
		[MAPPING_BUILD_ID] = build_id,
	};

	return rec_intern_strs(p, &p->mappings, rec, strs, MAPPING_WIDTH);
}

uint64_t pprof_function(struct pprof *p, const char *name, const char *system_name,
			const char *filename, int64_t start_line)
{
	uint64_t rec[FUNCTION_WIDTH] = {
		[FUNCTION_START_LINE] = (uint64_t)start_line,
	};
	const char *strs[FUNCTION_WIDTH] = {
		[FUNCTION_NAME] = name,
		[FUNCTION_SYSTEM_NAME] = system_name,
		[FUNCTION_FILENAME] = filename,
	};

	return rec_intern_strs(p, &p->functions, rec, strs, FUNCTION_WIDTH);
}

/* Unknown ids are refused (EINVAL): the encoded profile would not load. */
uint64_t pprof_location(struct pprof *p, uint64_t mapping_id, uint64_t address,
			uint64_t function_id, int64_t line)
{
	uint64_t rec[LOCATION_WIDTH] = {
		[LOCATION_MAPPING_ID] = mapping_id,
		[LOCATION_ADDRESS] = address,
		[LOCATION_FUNCTION_ID] = function_id,
		[LOCATION_LINE] = (uint64_t)line,
	};

	if (mapping_id > p->mappings.recs.len || !function_id ||
	    function_id > p->functions.recs.len) {
		errno = EINVAL;
		return 0;
	}
	return rec_intern(&p->locations, rec);
}

int pprof_add_sample(struct pprof *p, const uint64_t *location_ids, size_t nlocations,
		     const int64_t values[2], const struct pprof_label *labels, size_t nlabels)
{
	struct pp_sample *s;
	struct pp_label *l;
	size_t i;
	int err;

	for (i = 0; i < nlocations; i++) {
		if (!location_ids[i] || location_ids[i] > p->locations.recs.len)
			return -EINVAL;
	}
	for (i = 0; i < nlabels; i++) {
		if (!labels[i].key)
			return -EINVAL;
	}
	err = vec_reserve(&p->samples, 1);
	if (!err)
		err = vec_reserve(&p->sample_locs, nlocations);
	if (!err)
		err = vec_reserve(&p->sample_labels, nlabels);
	if (err)
		return err;

	/* Labels are written past the pool's end and committed last: a failure leaves no trace. */
	for (i = 0; i < nlabels; i++) {
		l = vec_at(&p->sample_labels, p->sample_labels.len + i);
		memset(l, 0, sizeof(*l));
		err = str_intern(p, labels[i].key, &l->key);
		if (err)
			return err;
		if (labels[i].str) {
			err = str_intern(p, labels[i].str, &l->str);
		} else {
			l->num = labels[i].num;
			if (labels[i].num_unit)
				err = str_intern(p, labels[i].num_unit, &l->num_unit);
		}
		if (err)
			return err;
	}
	if (nlocations)
		memcpy(vec_at(&p->sample_locs, p->sample_locs.len), location_ids,
		       nlocations * sizeof(*location_ids));

	s = vec_at(&p->samples, p->samples.len++);
	s->loc_off = p->sample_locs.len;
	s->nlocs = nlocations;
	s->label_off = p->sample_labels.len;
	s->nlabels = nlabels;
	s->values[0] = values[0];
	s->values[1] = values[1];
	p->sample_locs.len += nlocations;
	p->sample_labels.len += nlabels;
	return 0;
}

/* ---- protobuf encoding -------------------------------------------------------------------- */

/*
 * The encoding is built in a struct buf (buf.h), whose first failure sticks in err and turns later
 * writes into no-ops.
 */

/* A varint field; zero is proto3's default and left out. */
static void pb_uint(struct buf *b, unsigned int field, uint64_t v)
{
	if (!v)
		return;
	buf_pb_tag(b, field, BUF_PB_VARINT);
	buf_pb_varint(b, v);
}

/* int64 fields are two's complement varints (negative values take 10 bytes). */
static void pb_int(struct buf *b, unsigned int field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

/*
 * A length-delimited field whose size is not known up front: pb_begin writes the tag and
 * returns where the body starts; pb_end inserts the body's length there. Bodies are small and
 * nesting is at most three deep, so the moves cost little.
 */
static size_t pb_begin(struct buf *b, unsigned int field)
{
	buf_pb_tag(b, field, BUF_PB_LEN);
	return b->len;
}

static void pb_end(struct buf *b, size_t start)
{
	uint8_t tmp[11]; /* a varint and the NUL */
	struct buf len;

	if (b->err)
		return;
	buf_init_fixed(&len, tmp, sizeof(tmp));
	buf_pb_varint(&len, b->len - start);
	buf_insert(b, start, tmp, len.len);
}

/* Profile, ValueType, Sample, Label, Mapping, Location, Line and Function field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
};

enum {
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
};

enum {
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
};

enum {
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	LABEL_NUM_UNIT = 4,
};

enum {
	MAPPING_F_ID = 1,
	MAPPING_F_MEMORY_START = 2,
	MAPPING_F_MEMORY_LIMIT = 3,
	MAPPING_F_FILE_OFFSET = 4,
	MAPPING_F_FILENAME = 5,
	MAPPING_F_BUILD_ID = 6,
	MAPPING_F_HAS_FUNCTIONS = 7,
	MAPPING_F_HAS_FILENAMES = 8,
	MAPPING_F_HAS_LINE_NUMBERS = 9,
};

enum {
	LOCATION_F_ID = 1,
	LOCATION_F_MAPPING_ID = 2,
	LOCATION_F_ADDRESS = 3,
	LOCATION_F_LINE = 4,
};

enum {
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
};

enum {
	FUNCTION_F_ID = 1,
	FUNCTION_F_NAME = 2,
	FUNCTION_F_SYSTEM_NAME = 3,
	FUNCTION_F_FILENAME = 4,
	FUNCTION_F_START_LINE = 5,
};

static void encode_value_type(struct buf *b, unsigned int field, uint64_t type, uint64_t unit)
{
	size_t start = pb_begin(b, field);

	pb_uint(b, VALUE_TYPE_TYPE, type);
	pb_uint(b, VALUE_TYPE_UNIT, unit);
	pb_end(b, start);
}

static void encode_sample(struct buf *b, const struct pprof *p, const struct pp_sample *s)
{
	const uint64_t *locs = vec_at(&p->sample_locs, s->loc_off);
	const struct pp_label *l;
	size_t start, packed, i;

	start = pb_begin(b, PROFILE_SAMPLE);
	if (s->nlocs) {
		packed = pb_begin(b, SAMPLE_LOCATION_ID);
		for (i = 0; i < s->nlocs; i++)
			buf_pb_varint(b, locs[i]);
		pb_end(b, packed);
	}
	packed = pb_begin(b, SAMPLE_VALUE);
	buf_pb_varint(b, (uint64_t)s->values[0]);
	buf_pb_varint(b, (uint64_t)s->values[1]);
	pb_end(b, packed);
	for (i = 0; i < s->nlabels; i++) {
		l = vec_at(&p->sample_labels, s->label_off + i);
		packed = pb_begin(b, SAMPLE_LABEL);
		pb_uint(b, LABEL_KEY, l->key);
		pb_uint(b, LABEL_STR, l->str);
		pb_int(b, LABEL_NUM, l->num);
		pb_uint(b, LABEL_NUM_UNIT, l->num_unit);
		pb_end(b, packed);
	}
	pb_end(b, start);
}

/*
 * A Mapping or a Function: the id as field 1, then the record's values in their fields, which
 * follow the record's order from field 2 on (checked below). Returns the message's start, for
 * the caller to add to it and end it.
 */
static size_t encode_record(struct buf *b, unsigned int field, uint64_t id, const uint64_t *rec,
			    size_t n)
{
	size_t start = pb_begin(b, field), i;

	pb_uint(b, 1, id);
	for (i = 0; i < n; i++)
		pb_uint(b, (unsigned int)i + 2, rec[i]);
	return start;
}

_Static_assert(MAPPING_F_ID == 1 && MAPPING_F_MEMORY_START == MAPPING_START + 2 &&
		       MAPPING_F_MEMORY_LIMIT == MAPPING_LIMIT + 2 &&
		       MAPPING_F_FILE_OFFSET == MAPPING_OFFSET + 2 &&
		       MAPPING_F_FILENAME == MAPPING_FILENAME + 2 &&
		       MAPPING_F_BUILD_ID == MAPPING_BUILD_ID + 2,
	       "a Mapping's fields follow its record");
_Static_assert(FUNCTION_F_ID == 1 && FUNCTION_F_NAME == FUNCTION_NAME + 2 &&
		       FUNCTION_F_SYSTEM_NAME == FUNCTION_SYSTEM_NAME + 2 &&
		       FUNCTION_F_FILENAME == FUNCTION_FILENAME + 2 &&
		       FUNCTION_F_START_LINE == FUNCTION_START_LINE + 2,
	       "a Function's fields follow its record");

static void encode_mapping(struct buf *b, uint64_t id, const uint64_t *m)
{
	size_t start = encode_record(b, PROFILE_MAPPING, id, m, MAPPING_WIDTH);

	/* Frames are symbolized already: readers must not try to symbolize them again. */
	pb_uint(b, MAPPING_F_HAS_FUNCTIONS, 1);
	pb_uint(b, MAPPING_F_HAS_FILENAMES, 1);
	pb_uint(b, MAPPING_F_HAS_LINE_NUMBERS, 1);
	pb_end(b, start);
}

static void encode_location(struct buf *b, uint64_t id, const uint64_t *l)
{
	size_t start, line;

	start = pb_begin(b, PROFILE_LOCATION);
	pb_uint(b, LOCATION_F_ID, id);
	pb_uint(b, LOCATION_F_MAPPING_ID, l[LOCATION_MAPPING_ID]);
	pb_uint(b, LOCATION_F_ADDRESS, l[LOCATION_ADDRESS]);
	line = pb_begin(b, LOCATION_F_LINE);
	pb_uint(b, LINE_FUNCTION_ID, l[LOCATION_FUNCTION_ID]);
	pb_uint(b, LINE_LINE, l[LOCATION_LINE]);
	pb_end(b, line);
	pb_end(b, start);
}

static void encode_function(struct buf *b, uint64_t id, const uint64_t *f)
{
	pb_end(b, encode_record(b, PROFILE_FUNCTION, id, f, FUNCTION_WIDTH));
}

static void encode_profile(struct buf *b, const struct pprof *p)
{
	const struct pp_str *str;
	size_t i, start;

	encode_value_type(b, PROFILE_SAMPLE_TYPE, p->str_samples, p->str_count);
	encode_value_type(b, PROFILE_SAMPLE_TYPE, p->str_cpu, p->str_nanoseconds);
	for (i = 0; i < p->samples.len; i++)
		encode_sample(b, p, vec_at(&p->samples, i));
	for (i = 0; i < p->mappings.recs.len; i++)
		encode_mapping(b, i + 1, vec_at(&p->mappings.recs, i));
	for (i = 0; i < p->locations.recs.len; i++)
		encode_location(b, i + 1, vec_at(&p->locations.recs, i));
	for (i = 0; i < p->functions.recs.len; i++)
		encode_function(b, i + 1, vec_at(&p->functions.recs, i));
	/* Every entry is written, "" at index 0 included: readers index the table by position. */
	for (i = 0; i < p->strs.len; i++) {
		str = vec_at(&p->strs, i);
		buf_pb_bytes(b, PROFILE_STRING_TABLE, str->s, str->len);
	}
	pb_int(b, PROFILE_TIME_NANOS, p->time_ns);
	pb_int(b, PROFILE_DURATION_NANOS, p->duration_ns);
	encode_value_type(b, PROFILE_PERIOD_TYPE, p->str_cpu, p->str_nanoseconds);
	pb_int(b, PROFILE_PERIOD, p->period);
	if (p->comments.len) {
		start = pb_begin(b, PROFILE_COMMENT);
		for (i = 0; i < p->comments.len; i++)
			buf_pb_varint(b, *(const uint64_t *)vec_at(&p->comments, i));
		pb_end(b, start);
	}
}

/* ---- gzip and files ----------------------------------------------------------------------- */

static int zlib_errno(int zret)
{
	return zret == Z_MEM_ERROR ? -ENOMEM : -EIO;
}

/* gzip's in[0..len) into a malloc'd *out. 0 or -errno. */
static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	uint8_t *buf = NULL, *tmp;
	size_t cap, fed = 0, chunk;
	bool init = false;
	int zret, ret = 0;

	zret = deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (zret != Z_OK) {
		ret = zlib_errno(zret);
		goto cleanup;
	}
	init = true;
	/* The bound is usually enough; the loop below grows the buffer if it is not. */
	cap = deflateBound(&zs, len) + 64;
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto cleanup;
	}
	zs.next_out = buf;
	zs.avail_out = cap > UINT_MAX ? UINT_MAX : (uInt)cap;

	/* Bounded: each round consumes input or fills output, and both are finite. */
	for (;;) {
		/* avail_in/avail_out are 32-bit: feed and drain in chunks. */
		if (!zs.avail_in && fed < len) {
			chunk = len - fed > UINT_MAX ? UINT_MAX : len - fed;
			zs.next_in = in + fed;
			zs.avail_in = (uInt)chunk;
			fed += chunk;
		}
		if (!zs.avail_out) {
			size_t used = (size_t)(zs.next_out - buf);

			if (used == cap) {
				if (cap > SIZE_MAX / 2) {
					ret = -ENOMEM;
					goto cleanup;
				}
				tmp = realloc(buf, cap * 2);
				if (!tmp) {
					ret = -ENOMEM;
					goto cleanup;
				}
				buf = tmp;
				cap *= 2;
			}
			zs.next_out = buf + used;
			zs.avail_out = cap - used > UINT_MAX ? UINT_MAX : (uInt)(cap - used);
		}
		zret = deflate(&zs, fed == len ? Z_FINISH : Z_NO_FLUSH);
		if (zret == Z_STREAM_END)
			break;
		if (zret != Z_OK && !(zret == Z_BUF_ERROR && !zs.avail_out)) {
			ret = zlib_errno(zret);
			goto cleanup;
		}
	}
	*out_len = (size_t)(zs.next_out - buf);
	*out = buf;
	buf = NULL;
cleanup:
	if (init)
		deflateEnd(&zs);
	free(buf);
	return ret;
}

int pprof_encode(struct pprof *p, int gzip, uint8_t **out, size_t *out_len)
{
	struct buf b = {0};
	int ret;

	encode_profile(&b, p);
	ret = b.err;
	if (ret)
		goto cleanup;
	if (gzip) {
		ret = gzip_buf(b.p, b.len, out, out_len);
		goto cleanup;
	}
	*out = b.p;
	*out_len = b.len;
	b.p = NULL;
cleanup:
	free(b.p);
	return ret;
}

int pprof_write_file(struct pprof *p, const char *path)
{
	uint8_t *data = NULL;
	size_t len;
	int ret;

	ret = pprof_encode(p, 1, &data, &len);
	if (!ret)
		ret = fileio_write_file(path, data, len);
	free(data);
	return ret;
}
