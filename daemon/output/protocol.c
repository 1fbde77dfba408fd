// SPDX-License-Identifier: GPL-2.0-only
/*
 * protocol.c - the request that carries one profile to a collector: Pyroscope's /ingest, Pyroscope's push API (Connect, protobuf) or
 * Parca's WriteRaw (gRPC-web, protobuf). docs/shipping.md ("What each collector is sent") has
 * the contract of each server and the server source files each rule comes from.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/hash.h"
#include "lib/json.h"
#include "lib/text.h"
#include "output/protocol.h"

/* ---- output buffer --------------------------------------------------------------------------- */

/* Protobuf fields are written with buf.h's buf_pb_*; strings and nested messages here. */
static void ob_str(struct buf *b, unsigned field, const char *s)
{
	buf_pb_bytes(b, field, s, strlen(s));
}

/* A nested message built in its own buffer; its error carries over. */
static void ob_msg(struct buf *b, unsigned field, const struct buf *m)
{
	if (m->err && !b->err)
		b->err = m->err;
	buf_pb_bytes(b, field, m->p, m->len);
}

/* ---- labels ---------------------------------------------------------------------------------- */

/* What Pyroscope's pprof conversion names a profile whose sample types include "cpu". */
#define PROFILE_NAME "process_cpu"

/*
 * Pyroscope's default validation limits (pkg/validation: max_label_names_per_series 30,
 * max_label_name_length 1024, max_label_value_length 2048): a series beyond them is refused
 * whole with a 400, which would move every profile of that service aside. The series Pyroscope
 * checks has, beside the sidecar's labels, __name__, service_name, pyroscope_spy and __delta__,
 * which /ingest adds itself: PYRO_MAX_OWN labels are left for the sidecar's others.
 */
#define PYRO_MAX_LABELS	   30
#define PYRO_MAX_OWN	   (PYRO_MAX_LABELS - 4)
#define PYRO_MAX_NAME_LEN  1024
#define PYRO_MAX_VALUE_LEN 2048

struct ilabel {
	char *key;
	const char *value;
	char *vcopy; /* value, when cut to PYRO_MAX_VALUE_LEN */
};

struct ilabels {
	struct ilabel *v;
	size_t n;
	size_t trimmed; /* labels left out or values cut for Pyroscope's limits */
};

static void ilabels_release(struct ilabels *ls)
{
	size_t i;

	for (i = 0; i < ls->n; i++) {
		free(ls->v[i].key);
		free(ls->v[i].vcopy);
	}
	free(ls->v);
	ls->v = NULL;
	ls->n = 0;
}

/* A label name every collector takes as is (text_label_name). */
static char *label_name(const char *key)
{
	size_t n = strlen(key) + 2;
	char *o = malloc(n);

	if (o)
		text_label_name(key, o, n);
	return o;
}

static int ilabels_add(struct ilabels *ls, const char *key, const char *value, bool sanitize)
{
	struct ilabel *v = realloc(ls->v, (ls->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	ls->v = v;
	v[ls->n].key = sanitize ? label_name(key) : strdup(key);
	if (!v[ls->n].key)
		return -ENOMEM;
	v[ls->n].value = value;
	v[ls->n].vcopy = NULL;
	ls->n++;
	return 0;
}

/* Cuts a value longer than Pyroscope's limit at a UTF-8 character boundary. */
static int ilabel_cut(struct ilabel *l)
{
	size_t n = PYRO_MAX_VALUE_LEN;

	while (n && ((unsigned char)l->value[n] & 0xc0) == 0x80)
		n--;
	l->vcopy = strndup(l->value, n);
	if (!l->vcopy)
		return -ENOMEM;
	l->value = l->vcopy;
	return 0;
}

/*
 * Keeps a Pyroscope series within the default limits: labels with names too long are left out,
 * then the sidecar's labels beyond PYRO_MAX_OWN (the last by name), and values too long are cut.
 * ls is sorted; service_name, pyroscope_spy and __name__ always stay.
 */
static int ilabels_fit_pyroscope(struct ilabels *ls)
{
	size_t i, own = 0, o = 0;
	int err = 0;

	for (i = 0; i < ls->n; i++) {
		struct ilabel *l = &ls->v[i];
		bool keep = !strcmp(l->key, "service_name") || !strcmp(l->key, "pyroscope_spy") ||
			    !strcmp(l->key, "__name__");

		if (!keep && strlen(l->key) <= PYRO_MAX_NAME_LEN && own < PYRO_MAX_OWN) {
			keep = true;
			own++;
		}
		if (!keep) {
			free(l->key);
			free(l->vcopy);
			ls->trimmed++;
			continue;
		}
		if (!err && strlen(l->value) > PYRO_MAX_VALUE_LEN) {
			err = ilabel_cut(l);
			ls->trimmed++;
		}
		ls->v[o++] = *l;
	}
	ls->n = o;
	return err;
}

static bool ilabels_has(const struct ilabels *ls, const char *key)
{
	size_t i;

	for (i = 0; i < ls->n; i++) {
		if (!strcmp(ls->v[i].key, key))
			return true;
	}
	return false;
}

static int ilabel_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ilabel *)a)->key, ((const struct ilabel *)b)->key);
}

/*
 * The series labels of one profile, sorted by name (so that a resend is byte for byte the same,
 * whatever order the sidecar had): the sidecar's labels with their names mapped (label_name),
 * but those beginning with "__", which every collector reserves for itself; service_name (the
 * sidecar's service) unless the sidecar has one; for the push API and Parca __name__, and for
 * the push API pyroscope_spy (the labels Pyroscope's /ingest adds itself, so that both
 * Pyroscope protocols make the same series). -EINVAL when two names collide after mapping.
 */
static int ilabels_build(enum protocol proto, const struct sidecar *sc, struct ilabels *ls)
{
	size_t i;
	int err = 0;

	for (i = 0; i < sc->nlabels && !err; i++) {
		if (strncmp(sc->labels[i].key, "__", 2) && sc->labels[i].key[0])
			err = ilabels_add(ls, sc->labels[i].key, sc->labels[i].value, true);
		else if (!sc->labels[i].key[0])
			err = -EINVAL;
	}
	if (!err && !ilabels_has(ls, "service_name"))
		err = ilabels_add(ls, "service_name", sc->service, false);
	if (!err && proto != PROTOCOL_PYROSCOPE)
		err = ilabels_add(ls, "__name__",
				  sc->profile_name ? sc->profile_name : PROFILE_NAME, false);
	if (!err && proto == PROTOCOL_PYROSCOPE_PUSH && !ilabels_has(ls, "pyroscope_spy"))
		err = ilabels_add(ls, "pyroscope_spy", sc->spy_name, false);
	if (err)
		return err;
	qsort(ls->v, ls->n, sizeof(*ls->v), ilabel_cmp);
	for (i = 1; i < ls->n; i++) {
		if (!strcmp(ls->v[i - 1].key, ls->v[i].key))
			return -EINVAL;
	}
	return proto == PROTOCOL_PARCA ? 0 : ilabels_fit_pyroscope(ls);
}

/* ---- requests -------------------------------------------------------------------------------- */

/* "http://" or "https://", a host, no query or fragment; a trailing '/' is dropped. */
static int base_url(struct buf *b, const char *base)
{
	size_t n = strlen(base), skip;

	if (!strncmp(base, "http://", 7))
		skip = 7;
	else if (!strncmp(base, "https://", 8))
		skip = 8;
	else
		return -EINVAL;
	while (n > skip && base[n - 1] == '/')
		n--;
	if (n == skip || base[skip] == '/' || strpbrk(base, "?# \t\r\n"))
		return -EINVAL;
	buf_put(b, base, n);
	return 0;
}

/* Percent-encodes everything but RFC 3986's unreserved characters ('+' included: Go reads it as
 * a space in a query). */
static void ob_pct(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char e[3];

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((isalnum(c) && c < 0x80) || c == '-' || c == '.' || c == '_' || c == '~') {
			buf_put(b, s, 1);
		} else {
			e[0] = '%';
			e[1] = hex[c >> 4];
			e[2] = hex[c & 15];
			buf_put(b, e, 3);
		}
	}
}

/*
 * Pyroscope's /ingest name: labelset.Parse has no escapes, so a byte the grammar would take as
 * structure becomes '_': in the service name everything but [A-Za-z0-9_./-] (the only bytes
 * ValidateServiceName accepts), in values ',' and '}' (they end a value).
 */
static char *ingest_name(const char *service, const struct ilabels *ls)
{
	struct buf b = {0};
	const char *s;
	size_t i;
	char c;

	for (s = service; *s; s++) {
		c = *s;
		if (!((isalnum((unsigned char)c) && (unsigned char)c < 0x80) || strchr("_./-", c)))
			c = '_';
		buf_put(&b, &c, 1);
	}
	buf_put(&b, "{", 1);
	for (i = 0; i < ls->n; i++) {
		if (i)
			buf_put(&b, ",", 1);
		buf_puts(&b, ls->v[i].key);
		buf_put(&b, "=", 1);
		for (s = ls->v[i].value; *s; s++) {
			c = *s == ',' || *s == '}' ? '_' : *s;
			buf_put(&b, &c, 1);
		}
	}
	buf_put(&b, "}", 1);
	if (b.err) {
		free(b.p);
		return NULL;
	}
	return (char *)b.p;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

static int build_ingest(const struct sidecar *sc, const struct ilabels *ls, struct buf *url)
{
	char num[64], *name = ingest_name(sc->service, ls);
	int64_t until_s;

	if (!name)
		return -ENOMEM;
	buf_puts(url, "/ingest?name=");
	ob_pct(url, name);
	free(name);
	/* Whole seconds (attime.Parse); the interval is widened to them, never cut. */
	until_s = floor_div(sc->until_ns, 1000000000) + (sc->until_ns % 1000000000 != 0);
	snprintf(num, sizeof(num), "&from=%" PRId64 "&until=%" PRId64 "&sampleRate=%u",
		 floor_div(sc->from_ns, 1000000000), until_s, sc->sample_rate);
	buf_puts(url, num);
	buf_puts(url, "&spyName=");
	ob_pct(url, sc->spy_name);
	buf_puts(url, "&format=pprof");
	return url->err;
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * The push API's sample ID: a UUID (Pyroscope's ingester parses it as one) derived from the
 * sidecar alone (its labels as sent: sorted), so that a resend carries the same ID. Version 8 (RFC 9562: vendor-specific).
 */
static void profile_uuid(const struct sidecar *sc, const struct ilabels *ls, char out[37])
{
	uint64_t h = HASH_INIT, hi, lo;
	size_t i;

	h = hash_str(h, sc->service);
	h = hash_bytes(h, &sc->from_ns, sizeof(sc->from_ns));
	h = hash_bytes(h, &sc->until_ns, sizeof(sc->until_ns));
	h = hash_str(h, sc->profile);
	h = hash_bytes(h, &sc->bytes, sizeof(sc->bytes));
	for (i = 0; i < ls->n; i++) {
		h = hash_str(h, ls->v[i].key);
		h = hash_str(h, ls->v[i].value);
	}
	hi = mix64(h);
	lo = mix64(h ^ 0x9e3779b97f4a7c15ULL);
	hi = (hi & ~0xf000ULL) | 0x8000ULL;	  /* version 8 */
	lo = (lo & ~(3ULL << 62)) | (2ULL << 62); /* variant 10 */
	snprintf(out, 37, "%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%012" PRIx64,
		 hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48,
		 (uint64_t)(lo & 0xffffffffffffULL));
}

/*
 * Each label as a field `field` of dst: a name/value message (push's LabelPair, Parca's Label:
 * name is field 1, value field 2), built in m.
 */
static void ob_labels(struct buf *dst, unsigned field, const struct ilabels *ls, struct buf *m)
{
	size_t i;

	for (i = 0; i < ls->n; i++) {
		m->len = 0;
		ob_str(m, 1, ls->v[i].key);
		ob_str(m, 2, ls->v[i].value);
		ob_msg(dst, field, m);
	}
}

/* push.v1.PushRequest { series: [RawProfileSeries { labels, samples: [RawSample] }] } */
static int build_push(const struct sidecar *sc, const struct ilabels *ls, const void *profile,
		      size_t len, struct buf *body)
{
	struct buf series = {0}, m = {0};
	char id[37];

	ob_labels(&series, 1, ls, &m); /* RawProfileSeries.labels */
	profile_uuid(sc, ls, id);
	m.len = 0;
	buf_pb_bytes(&m, 1, profile, len); /* RawSample.raw_profile */
	ob_str(&m, 2, id);		   /* RawSample.ID */
	ob_msg(&series, 2, &m);		   /* RawProfileSeries.samples */
	ob_msg(body, 1, &series);	   /* PushRequest.series */
	free(m.p);
	free(series.p);
	return body->err;
}

/*
 * A gRPC-web frame (flag 0: an uncompressed message, 4-byte big-endian length) around
 * parca.profilestore.v1alpha1.WriteRawRequest { series: [RawProfileSeries { labels: LabelSet
 * { labels: [Label] }, samples: [RawSample { raw_profile }] }], normalized: true }.
 */
static int build_parca(const struct ilabels *ls, const void *profile, size_t len, struct buf *body)
{
	struct buf req = {0}, series = {0}, set = {0}, m = {0};
	uint8_t hdr[5];

	ob_labels(&set, 1, ls, &m); /* LabelSet.labels */
	ob_msg(&series, 1, &set);   /* RawProfileSeries.labels */
	m.len = 0;
	buf_pb_bytes(&m, 1, profile, len); /* RawSample.raw_profile */
	ob_msg(&series, 2, &m);		   /* RawProfileSeries.samples */
	ob_msg(&req, 2, &series);	   /* WriteRawRequest.series */
	/* The profile's addresses need no normalization: its frames are Ruby's, by name. */
	buf_pb_tag(&req, 3, BUF_PB_VARINT); /* WriteRawRequest.normalized */
	buf_pb_varint(&req, 1);
	if (!req.err && req.len > UINT32_MAX)
		req.err = -EINVAL;
	if (!req.err) {
		hdr[0] = 0;
		hdr[1] = (uint8_t)(req.len >> 24);
		hdr[2] = (uint8_t)(req.len >> 16);
		hdr[3] = (uint8_t)(req.len >> 8);
		hdr[4] = (uint8_t)req.len;
		buf_put(body, hdr, sizeof(hdr));
		buf_put(body, req.p, req.len);
	} else {
		body->err = req.err;
	}
	free(m.p);
	free(set.p);
	free(series.p);
	free(req.p);
	return body->err;
}

int protocol_build(enum protocol proto, const char *base, const struct sidecar *sc,
		   const void *profile, size_t len, struct protocol_request *out)
{
	struct buf url = {0}, body = {0};
	struct ilabels ls = {0};
	int err;

	memset(out, 0, sizeof(*out));
	if (!base || !sc || (!profile && len) || !sc->service || !sc->service[0] || !sc->spy_name ||
	    !sc->profile)
		return -EINVAL;
	err = base_url(&url, base);
	if (err)
		goto cleanup;
	err = ilabels_build(proto, sc, &ls);
	if (err)
		goto cleanup;
	out->labels_trimmed = ls.trimmed;
	switch (proto) {
	case PROTOCOL_PYROSCOPE:
		err = build_ingest(sc, &ls, &url);
		if (!err)
			buf_put(&body, profile, len);
		out->content_type = "application/octet-stream";
		break;
	case PROTOCOL_PYROSCOPE_PUSH:
		buf_puts(&url, "/push.v1.PusherService/Push");
		err = build_push(sc, &ls, profile, len, &body);
		out->content_type = "application/proto";
		out->headers[0] = "Connect-Protocol-Version: 1";
		break;
	case PROTOCOL_PARCA:
		buf_puts(&url, "/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw");
		err = build_parca(&ls, profile, len, &body);
		out->content_type = "application/grpc-web+proto";
		out->headers[0] = "X-Grpc-Web: 1";
		break;
	default:
		err = -EINVAL;
	}
	if (!err)
		err = url.err ? url.err : body.err;
	if (err)
		goto cleanup;
	out->url = (char *)url.p;
	out->body = body.p;
	out->len = body.len;
	url.p = body.p = NULL;
cleanup:
	ilabels_release(&ls);
	free(url.p);
	free(body.p);
	if (err) {
		out->content_type = NULL;
		out->headers[0] = NULL;
	}
	return err;
}

void protocol_request_release(struct protocol_request *r)
{
	if (!r)
		return;
	free(r->url);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* ---- responses ------------------------------------------------------------------------------- */

/* grpc-message is percent-encoded (gRPC over HTTP/2); decoded, control bytes dropped. */
static void grpc_message(const char *v, size_t n, char *out, size_t outlen)
{
	size_t i, o = 0;
	int h1, h2;
	char c;

	for (i = 0; i < n && o + 1 < outlen; i++) {
		c = v[i];
		if (c == '%' && i + 2 < n && (h1 = buf_hexval((unsigned char)v[i + 1])) >= 0 &&
		    (h2 = buf_hexval((unsigned char)v[i + 2])) >= 0) {
			c = (char)(h1 << 4 | h2);
			i += 2;
		}
		if ((unsigned char)c >= 0x20 && c != 0x7f)
			out[o++] = c;
	}
	if (outlen)
		out[o] = '\0';
}

struct grpc_status {
	bool seen;
	long code;
	char message[200];
};

/* "Name: value" lines (CRLF or LF), as in gRPC-web's trailer frame and in HTTP headers. */
static void grpc_scan(const char *text, size_t n, struct grpc_status *st)
{
	const char *line = text, *end = text + n, *nl, *colon, *v, *ve;
	char num[24];
	size_t k;

	for (; line < end; line = nl + 1) {
		nl = memchr(line, '\n', (size_t)(end - line));
		if (!nl)
			nl = end;
		colon = memchr(line, ':', (size_t)(nl - line));
		if (!colon)
			continue;
		for (v = colon + 1; v < nl && (*v == ' ' || *v == '\t'); v++)
			;
		for (ve = nl; ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'); ve--)
			;
		k = (size_t)(colon - line);
		if (k == 11 && !strncasecmp(line, "grpc-status", 11)) {
			char *e;

			k = (size_t)(ve - v) < sizeof(num) - 1 ? (size_t)(ve - v) : sizeof(num) - 1;
			memcpy(num, v, k);
			num[k] = '\0';
			st->seen = true;
			st->code = strtol(num, &e, 10);
			if (!k || *e)
				st->code = -1; /* not a number: treated as a failure */
		} else if (k == 12 && !strncasecmp(line, "grpc-message", 12)) {
			grpc_message(v, (size_t)(ve - v), st->message, sizeof(st->message));
		}
	}
}

/* The trailer frame of a gRPC-web body: 0 and *found, or -EPROTO on a malformed body. */
static int grpcweb_trailer(const uint8_t *p, size_t len, struct grpc_status *st, char *err,
			   size_t errlen)
{
	size_t pos = 0;
	uint32_t n;

	while (pos < len) {
		if (len - pos < 5) {
			snprintf(err, errlen, "gRPC-web body: a frame header cut short at byte %zu",
				 pos);
			return -EPROTO;
		}
		n = (uint32_t)p[pos + 1] << 24 | (uint32_t)p[pos + 2] << 16 |
		    (uint32_t)p[pos + 3] << 8 | p[pos + 4];
		if (n > len - pos - 5) {
			snprintf(err, errlen,
				 "gRPC-web body: a frame of %" PRIu32 " bytes cut short", n);
			return -EPROTO;
		}
		if (p[pos] & 0x80) {
			if (p[pos] & 0x01) {
				snprintf(err, errlen, "gRPC-web body: a compressed trailer frame");
				return -EPROTO;
			}
			grpc_scan((const char *)p + pos + 5, n, st);
		}
		pos += 5 + (size_t)n;
	}
	return 0;
}

int protocol_check_reply(enum protocol proto, const char *headers, size_t hlen, const void *body,
			 size_t len, char *err, size_t errlen)
{
	struct grpc_status st = {0};
	char tmp[1];
	int ret;

	if (!errlen) {
		err = tmp;
		errlen = sizeof(tmp);
	}
	err[0] = '\0';
	if (proto != PROTOCOL_PARCA)
		/* /ingest answers in its status code; Connect unary errors never come with a 2xx. */
		return 0;
	ret = grpcweb_trailer(body, len, &st, err, errlen);
	if (ret)
		return ret;
	/* No trailer frame: a "Trailers-Only" answer puts grpc-status among the HTTP headers. */
	if (!st.seen && headers)
		grpc_scan(headers, hlen, &st);
	if (!st.seen) {
		snprintf(err, errlen, "gRPC-web answer without a grpc-status");
		return -EPROTO;
	}
	if (st.code != 0) {
		snprintf(err, errlen, "grpc-status %ld%s%s", st.code, st.message[0] ? ": " : "",
			 st.message);
		return -EPROTO;
	}
	return 0;
}

int protocol_check_response(enum protocol proto, const void *body, size_t len, char *err,
			    size_t errlen)
{
	return protocol_check_reply(proto, NULL, 0, body, len, err, errlen);
}

/* Connect's (and Pyroscope's /ingest's) error body: {"code": "...", "message": "..."}. */
static bool connect_error(const void *body, size_t len, char *out, size_t outlen)
{
	struct json_reader j = {.p = body, .len = len};
	char *key = NULL, *code = NULL, *msg = NULL, **dst;
	bool ok = false;

	if (json_expect(&j, '{'))
		return false;
	while (json_peek(&j) == '"') {
		if (json_string(&j, &key, NULL) || !key || json_expect(&j, ':'))
			goto cleanup;
		dst = !strcmp(key, "code") ? &code : !strcmp(key, "message") ? &msg : NULL;
		free(key);
		key = NULL;
		if (dst && json_peek(&j) == '"' && !*dst) {
			if (json_string(&j, dst, NULL))
				goto cleanup;
		} else if (json_skip(&j, 1)) {
			goto cleanup;
		}
		if (json_peek(&j) != ',')
			break;
		j.pos++;
	}
	if (json_expect(&j, '}') || (!code && !msg))
		goto cleanup;
	snprintf(out, outlen, "%s%s%s", code ? code : "", code && msg ? ": " : "", msg ? msg : "");
	ok = true;
cleanup:
	free(key);
	free(code);
	free(msg);
	return ok;
}

int protocol_error_reason(enum protocol proto, const char *headers, size_t hlen, const void *body,
			  size_t len, char *out, size_t outlen)
{
	struct grpc_status st = {0};
	const unsigned char *p = body;
	char tmp[1];
	size_t i, o = 0;

	if (!outlen) {
		out = tmp;
		outlen = sizeof(tmp);
	}
	out[0] = '\0';
	if (proto == PROTOCOL_PARCA) {
		if (!grpcweb_trailer(body, len, &st, tmp, sizeof(tmp)) && !st.seen && headers)
			grpc_scan(headers, hlen, &st);
		if (st.seen) {
			snprintf(out, outlen, "grpc-status %ld%s%s", st.code,
				 st.message[0] ? ": " : "", st.message);
			return 0;
		}
	} else if (connect_error(body, len, out, outlen)) {
		return 0;
	}
	/* Anything else (a proxy's page): its text, control bytes and markup cut short. */
	for (i = 0; i < len && o + 1 < outlen && p[i] != '<'; i++) {
		if (p[i] >= 0x20 && p[i] != 0x7f)
			out[o++] = (char)p[i];
		else if (o && out[o - 1] != ' ')
			out[o++] = ' ';
	}
	while (o && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
	return o ? 0 : -ENOENT;
}

/* ---- names ----------------------------------------------------------------------------------- */

static const char *const proto_names[] = {
	[PROTOCOL_PYROSCOPE] = "pyroscope",
	[PROTOCOL_PYROSCOPE_PUSH] = "pyroscope-push",
	[PROTOCOL_PARCA] = "parca",
};

int protocol_parse(const char *name, enum protocol *out)
{
	size_t i;

	for (i = 0; name && i < sizeof(proto_names) / sizeof(proto_names[0]); i++) {
		if (!strcmp(name, proto_names[i])) {
			*out = (enum protocol)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *protocol_name(enum protocol proto)
{
	if ((unsigned)proto >= sizeof(proto_names) / sizeof(proto_names[0]))
		return "unknown";
	return proto_names[proto];
}
