// SPDX-License-Identifier: GPL-2.0-only
/*
 * procctx.c - the OpenTelemetry process context (OTEP 4719), read from a target's memory
 * (procctx.h). The reading protocol of the OTEP, step by step: the header's signature and
 * version; published_at_ns non-zero (0: an update in progress); the payload; the header again,
 * whose published_at_ns must not have moved; then the payload decoded. A torn read starts over,
 * at most PROCCTX_TRIES times a turn.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pbread.h"
#include "lib/text.h"
#include "proc/procctx.h"
#include "proc/procmem.h"
#include "proc/procs.h"

static const char *const refusal_names[PROCCTX_REFUSED_MAX] = {
	[PROCCTX_REFUSED_HEADER] = "header",   [PROCCTX_REFUSED_SIZE] = "size",
	[PROCCTX_REFUSED_TORN] = "torn",       [PROCCTX_REFUSED_MEMORY] = "memory",
	[PROCCTX_REFUSED_PAYLOAD] = "payload", [PROCCTX_REFUSED_VALUE] = "value",
};

const char *procctx_refusal_name(enum procctx_refusal r)
{
	return r < PROCCTX_REFUSED_MAX ? refusal_names[r] : "unknown";
}

void procctx_attrs_release(struct procctx_attrs *a)
{
	free(a->keys);
	memset(a, 0, sizeof(*a));
}

const char *procctx_key(const struct procctx_attrs *a, unsigned int i)
{
	return i < a->nkeys && a->keys ? a->keys + a->key_off[i] : NULL;
}

/* ---- the payload: opentelemetry.proto.resource.v1.Resource ----------------------------------- */

/*
 * Resource { repeated KeyValue attributes = 1; ... }
 * KeyValue { string key = 1; AnyValue value = 2; }
 * AnyValue { oneof { string string_value = 1; bool 2; int64 3; double 4;
 *                    ArrayValue array_value = 5; KeyValueList 6; bytes 7; } }
 * ArrayValue { repeated AnyValue values = 1; }
 */

struct decoding {
	struct procctx_attrs *a;
	size_t keys_len, keys_cap;
};

/* The attributes kept, by key. */
static char *slot_of(struct procctx_attrs *a, const uint8_t *key, size_t len)
{
	static const struct {
		const char *key;
		size_t off;
	} slots[] = {
		{"service.name", offsetof(struct procctx_attrs, service_name)},
		{"service.version", offsetof(struct procctx_attrs, service_version)},
		{"deployment.environment.name", offsetof(struct procctx_attrs, environment)},
		{"service.instance.id", offsetof(struct procctx_attrs, instance_id)},
		{"threadlocal.schema_version", offsetof(struct procctx_attrs, schema_version)},
	};
	size_t i;

	for (i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
		if (strlen(slots[i].key) == len && memcmp(slots[i].key, key, len) == 0)
			return (char *)a + slots[i].off;
	return NULL;
}

/*
 * The string_value of the AnyValue [start, end): its bytes, if it is one that can be kept
 * (UTF-8, no control character, no NUL, at most PROCCTX_VALUE_MAX bytes). 0, -ENOENT (another
 * type, or a value refused), or the decoder's error.
 */
static int any_string(struct pbread_dec *d, size_t start, size_t end, size_t *vs, size_t *vlen)
{
	size_t pos = d->pos, oend = d->end, i, n;
	struct pbread_field f;
	bool found = false;
	int err = 0;

	d->pos = start;
	d->end = end;
	while (pbread_next_field(d, &f)) {
		/* a oneof: the last one on the wire wins */
		found = f.num == 1 && f.wt == PB_WT_LEN;
		if (found) {
			*vs = f.start;
			*vlen = f.end - f.start;
		}
	}
	d->pos = pos;
	d->end = oend;
	if (d->ret)
		return d->ret;
	if (!found || *vlen > PROCCTX_VALUE_MAX)
		return -ENOENT;
	for (i = 0; i < *vlen; i += n) {
		const unsigned char *p = d->buf + *vs + i;

		n = text_utf8_len(p, *vlen - i);
		/* a control character (a NUL too) would end or break a name, a label, a log line */
		if (!n || *p < 0x20 || *p == 0x7f || (n == 2 && p[0] == 0xc2 && p[1] < 0xa0))
			return -ENOENT;
	}
	return err;
}

static int keys_add(struct decoding *x, const uint8_t *s, size_t len)
{
	struct procctx_attrs *a = x->a;
	size_t ncap;
	char *nk;

	if (x->keys_cap - x->keys_len < len + 1) {
		ncap = x->keys_cap ? x->keys_cap : 1024;
		while (ncap - x->keys_len < len + 1)
			ncap *= 2;
		nk = realloc(a->keys, ncap);
		if (!nk)
			return -ENOMEM;
		a->keys = nk;
		x->keys_cap = ncap;
	}
	a->key_off[a->nkeys++] = (uint32_t)x->keys_len;
	memcpy(a->keys + x->keys_len, s, len);
	a->keys[x->keys_len + len] = '\0';
	x->keys_len += len + 1;
	return 0;
}

/* threadlocal.attribute_key_map: AnyValue { array_value = 5: ArrayValue { values = 1 } }. */
static int key_map(struct pbread_dec *d, struct decoding *x, size_t start, size_t end)
{
	size_t pos = d->pos, oend = d->end, apos, aend, vs = 0, vlen = 0;
	struct pbread_field f, g;
	bool array = false;
	int err;

	/* a map given twice: the last one */
	x->a->nkeys = 0;
	x->keys_len = 0;
	d->pos = start;
	d->end = end;
	while (pbread_next_field(d, &f)) {
		if (f.num != 5 || f.wt != PB_WT_LEN)
			continue;
		array = true;
		apos = d->pos;
		aend = d->end;
		d->pos = f.start;
		d->end = f.end;
		while (pbread_next_field(d, &g)) {
			if (g.num != 1 || g.wt != PB_WT_LEN)
				continue;
			/* past the uint8 index: no record can name it */
			if (x->a->nkeys >= PROCCTX_KEYS_MAX) {
				x->a->refused_values++;
				break;
			}
			err = any_string(d, g.start, g.end, &vs, &vlen);
			if (err == -ENOENT) {
				x->a->refused_values++;
				vlen = 0; /* kept as "": the indexes after it stay right */
			} else if (err) {
				break;
			}
			if (keys_add(x, d->buf + vs, vlen)) {
				pbread_fail_msg(d, g.at, -ENOMEM, "out of memory");
				break;
			}
		}
		d->pos = apos;
		d->end = aend;
	}
	d->pos = pos;
	d->end = oend;
	if (!d->ret && !array)
		x->a->refused_values++;
	return d->ret;
}

static int dec_keyvalue(struct pbread_dec *d, void *obj)
{
	struct decoding *x = d->ctx;
	size_t ks = 0, klen = 0, vstart = 0, vend = 0, vs = 0, vlen = 0;
	bool have_key = false, have_value = false;
	struct pbread_field f;
	char *slot;
	int err;

	(void)obj;
	while (pbread_next_field(d, &f)) {
		if (f.num == 1 && f.wt == PB_WT_LEN) {
			have_key = true;
			ks = f.start;
			klen = f.end - f.start;
		} else if (f.num == 2 && f.wt == PB_WT_LEN) {
			have_value = true;
			vstart = f.start;
			vend = f.end;
		}
	}
	if (d->ret || !have_key)
		return d->ret;
	if (klen == 29 && memcmp(d->buf + ks, "threadlocal.attribute_key_map", 29) == 0)
		return key_map(d, x, vstart, have_value ? vend : vstart);
	slot = slot_of(x->a, d->buf + ks, klen);
	if (!slot)
		return 0;
	slot[0] = '\0';
	err = have_value ? any_string(d, vstart, vend, &vs, &vlen) : -ENOENT;
	if (err == -ENOENT) {
		x->a->refused_values++;
		return 0;
	}
	if (err)
		return err;
	memcpy(slot, d->buf + vs, vlen);
	slot[vlen] = '\0';
	return 0;
}

int procctx_decode(const uint8_t *buf, size_t len, struct procctx_attrs *out, char *why,
		   size_t whylen)
{
	struct decoding x = {.a = out};
	struct pbread_dec d = {.buf = buf,
			       .end = len,
			       .name = "Resource",
			       .err = why,
			       .errlen = whylen,
			       .ctx = &x};
	struct pbread_field f;

	procctx_attrs_release(out);
	if (why && whylen)
		why[0] = '\0';
	if (len > PROCCTX_PAYLOAD_MAX)
		return pbread_fail(&d, 0, -EINVAL, "%zu bytes, past the bound of %u", len,
				   PROCCTX_PAYLOAD_MAX);
	while (pbread_next_field(&d, &f))
		if (f.num == 1 && f.wt == PB_WT_LEN)
			pbread_sub(&d, f.start, f.end, dec_keyvalue, NULL);
	if (d.ret) {
		int err = d.ret;

		procctx_attrs_release(out);
		return err;
	}
	return 0;
}

/* ---- the header and the mapping ------------------------------------------------------------- */

int procctx_parse_header(const uint8_t *raw, struct procctx_header *h)
{
	if (memcmp(raw, "OTEL_CTX", 8) != 0)
		return -EINVAL;
	memcpy(&h->version, raw + 8, 4);
	memcpy(&h->payload_size, raw + 12, 4);
	memcpy(&h->published_at_ns, raw + 16, 8);
	memcpy(&h->payload, raw + 24, 8);
	return h->version == PROCCTX_VERSION || h->version == 1 ? 0 : -EINVAL;
}

size_t procctx_find(const struct proc_maps *maps, uint64_t *addrs, size_t max)
{
	size_t i, n = 0;

	for (i = 0; i < maps->n && n < max; i++) {
		const struct proc_map *m = &maps->v[i];

		if (!m->otel_ctx || m->perms[0] != 'r' || m->end - m->start < PROCCTX_HEADER_SIZE)
			continue;
		addrs[n++] = m->start;
	}
	return n;
}

/* ---- the reading protocol -------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static enum procctx_result
refuse(struct procctx *pc, enum procctx_refusal r, const char *fmt, ...);

static enum procctx_result refuse(struct procctx *pc, enum procctx_refusal r, const char *fmt, ...)
{
	va_list ap;

	pc->last = r;
	va_start(ap, fmt);
	vsnprintf(pc->why, sizeof(pc->why), fmt, ap);
	va_end(ap);
	return PROCCTX_REFUSED;
}

static int read_header(pid_t pid, uint64_t addr, struct procctx_header *h, bool *bad)
{
	uint8_t raw[PROCCTX_HEADER_SIZE];
	int err = procmem_read(pid, addr, raw, sizeof(raw));

	*bad = false;
	if (err)
		return err;
	if (procctx_parse_header(raw, h)) {
		*bad = true;
		return -EINVAL;
	}
	return 0;
}

static enum procctx_result read_at(struct procctx *pc, pid_t pid, uint64_t addr, bool force,
				   struct procctx_stats *st)
{
	struct procctx_header h, again;
	struct procctx_attrs attrs = {0};
	enum procctx_result res;
	uint8_t *buf = NULL;
	unsigned int t;
	bool bad;
	int err;

	for (t = 0; t < PROCCTX_TRIES; t++) {
		err = read_header(pid, addr, &h, &bad);
		if (bad) {
			res = refuse(pc, PROCCTX_REFUSED_HEADER,
				     "no OTEL_CTX signature of version 1 or 2 at %#llx",
				     (unsigned long long)addr);
			goto cleanup;
		}
		if (err) {
			res = refuse(pc, PROCCTX_REFUSED_MEMORY, "its header at %#llx: %s",
				     (unsigned long long)addr, strerror(-err));
			goto cleanup;
		}
		/* 0: an update is in progress */
		if (!h.published_at_ns)
			continue;
		if (!force && addr == pc->addr && h.published_at_ns == pc->published_at_ns) {
			st->unchanged++;
			res = PROCCTX_NONE;
			goto cleanup;
		}
		if (h.payload_size > PROCCTX_PAYLOAD_MAX) {
			res = refuse(pc, PROCCTX_REFUSED_SIZE,
				     "payload_size %u is past the bound of %u bytes",
				     h.payload_size, PROCCTX_PAYLOAD_MAX);
			goto cleanup;
		}
		free(buf);
		buf = malloc(h.payload_size ? h.payload_size : 1);
		if (!buf) {
			res = refuse(pc, PROCCTX_REFUSED_MEMORY, "out of memory");
			goto cleanup;
		}
		err = h.payload_size ? procmem_read(pid, h.payload, buf, h.payload_size) : 0;
		if (read_header(pid, addr, &again, &bad) == 0 &&
		    (again.published_at_ns != h.published_at_ns ||
		     again.payload_size != h.payload_size || again.payload != h.payload))
			continue; /* changed while read: start over */
		if (bad) {
			res = refuse(pc, PROCCTX_REFUSED_HEADER,
				     "its header at %#llx changed into no context",
				     (unsigned long long)addr);
			goto cleanup;
		}
		if (err) {
			res = refuse(pc, PROCCTX_REFUSED_MEMORY,
				     "its payload (%u bytes at %#llx): %s", h.payload_size,
				     (unsigned long long)h.payload, strerror(-err));
			goto cleanup;
		}
		err = procctx_decode(buf, h.payload_size, &attrs, pc->why, sizeof(pc->why));
		if (err == -ENOMEM) {
			res = refuse(pc, PROCCTX_REFUSED_MEMORY, "out of memory");
			goto cleanup;
		}
		if (err) {
			pc->last = PROCCTX_REFUSED_PAYLOAD;
			res = PROCCTX_REFUSED;
			goto cleanup;
		}
		procctx_attrs_release(&pc->attrs);
		pc->attrs = attrs;
		memset(&attrs, 0, sizeof(attrs));
		pc->addr = addr;
		pc->published_at_ns = h.published_at_ns;
		st->reads++;
		if (pc->attrs.refused_values)
			st->refused[PROCCTX_REFUSED_VALUE]++;
		res = PROCCTX_CHANGED;
		goto cleanup;
	}
	res = refuse(pc, PROCCTX_REFUSED_TORN,
		     "published_at_ns was 0 or changed at each of %d readings", PROCCTX_TRIES);
cleanup:
	procctx_attrs_release(&attrs);
	free(buf);
	return res;
}

enum procctx_result procctx_read_at(struct procctx *pc, pid_t pid, uint64_t addr,
				    struct procctx_stats *st)
{
	enum procctx_result res = read_at(pc, pid, addr, true, st);

	if (res == PROCCTX_REFUSED)
		st->refused[pc->last]++;
	return res;
}

/* Forgets the context held: the next poll looks for one again. */
static enum procctx_result drop(struct procctx *pc)
{
	bool had = pc->published_at_ns != 0;

	procctx_attrs_release(&pc->attrs);
	pc->addr = 0;
	pc->published_at_ns = 0;
	pc->polls = 0;
	return had ? PROCCTX_GONE : PROCCTX_NONE;
}

enum procctx_result procctx_poll(struct procctx *pc, pid_t pid, const uint64_t *addrs, size_t n,
				 struct procctx_stats *st)
{
	uint64_t found[PROCCTX_MAPPINGS_MAX];
	struct proc_maps maps = {0};
	enum procctx_result res = PROCCTX_NONE;
	uint32_t k;
	size_t i;

	if (pc->addr) {
		res = read_at(pc, pid, pc->addr, false, st);
		/* unmapped, or no longer a context: what it said no longer holds */
		if (res == PROCCTX_REFUSED &&
		    (pc->last == PROCCTX_REFUSED_HEADER || pc->last == PROCCTX_REFUSED_MEMORY))
			return drop(pc);
		if (res == PROCCTX_REFUSED)
			st->refused[pc->last]++;
		return res;
	}
	if (!n) {
		/* each of the first 8 looks, then the 16th, 32nd, 64th and every 64th: an app
		 * publishes at its start, or when its SDK starts a few seconds after it */
		k = pc->polls++;
		if (k >= 8 && ((k + 1) & k) && (k + 1) % 64)
			return PROCCTX_NONE;
		st->maps_scans++;
		if (procs_read_maps(pid, &maps))
			return PROCCTX_NONE;
		n = procctx_find(&maps, found, PROCCTX_MAPPINGS_MAX);
		procs_maps_free(&maps);
		addrs = found;
	}
	for (i = 0; i < n; i++) {
		res = read_at(pc, pid, addrs[i], true, st);
		if (res != PROCCTX_REFUSED)
			break;
	}
	if (res == PROCCTX_REFUSED)
		st->refused[pc->last]++;
	return res;
}

void procctx_release(struct procctx *pc)
{
	procctx_attrs_release(&pc->attrs);
	memset(pc, 0, sizeof(*pc));
}
