// SPDX-License-Identifier: GPL-2.0-only
/*
 * ingest.c - a spool sidecar read back (a small strict JSON reader), and the request that carries
 * one profile to a collector: Pyroscope's /ingest, Pyroscope's push API (Connect, protobuf) or
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

#include "buf.h"
#include "ingest.h"
#include "hash.h"
#include "text.h"

/* ---- JSON reader ----------------------------------------------------------------------------- */

/* Objects and arrays nested deeper than this (in unknown fields) are refused, not recursed into. */
#define JSON_MAX_DEPTH	    32
/* Labels in one sidecar (the spool writes at most 64). */
#define SIDECAR_MAX_LABELS  256
/* Unknown top-level fields remembered for the duplicate check. */
#define SIDECAR_MAX_UNKNOWN 64

struct jr {
	const unsigned char *p;
	size_t len, pos;
	char *err;
	size_t errlen;
};

/* A malformed document: the message names the field, or else the byte it was read at. -EINVAL. */
__attribute__((format(printf, 3, 4))) static int jr_field_fail(struct jr *j, const char *field,
							       const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (j->errlen && field)
		snprintf(j->err, j->errlen, "field \"%s\": %s", field, msg);
	else if (j->errlen)
		snprintf(j->err, j->errlen, "at byte %zu: %s", j->pos, msg);
	return -EINVAL;
}

#define jr_fail(j, ...) jr_field_fail((j), NULL, __VA_ARGS__)

static void jr_ws(struct jr *j)
{
	while (j->pos < j->len && (j->p[j->pos] == ' ' || j->p[j->pos] == '\t' ||
				   j->p[j->pos] == '\n' || j->p[j->pos] == '\r'))
		j->pos++;
}

/* The next byte after white space, or -1 at the end. */
static int jr_peek(struct jr *j)
{
	jr_ws(j);
	return j->pos < j->len ? j->p[j->pos] : -1;
}

static int jr_expect(struct jr *j, char c)
{
	if (jr_peek(j) != (unsigned char)c)
		return j->pos < j->len ? jr_fail(j, "expected '%c'", c)
				       : jr_fail(j, "expected '%c', found the end", c);
	j->pos++;
	return 0;
}

static size_t utf8_put(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Four hex digits at j->pos (after "\u"). */
static int jr_hex4(struct jr *j, uint32_t *out)
{
	uint32_t v = 0;
	int i, h;

	if (j->len - j->pos < 4)
		return jr_fail(j, "\\u escape cut short");
	for (i = 0; i < 4; i++) {
		h = buf_hexval(j->p[j->pos + i]);
		if (h < 0)
			return jr_fail(j, "\\u escape with a non-hex digit");
		v = v << 4 | (uint32_t)h;
	}
	j->pos += 4;
	*out = v;
	return 0;
}

/* A backslash escape at j->pos (the backslash already consumed), decoded into o. */
static int jr_escape(struct jr *j, char *o, size_t *olen)
{
	static const char simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	uint32_t cp, lo;
	unsigned char c;
	size_t i;
	int err;

	if (j->pos >= j->len)
		return jr_fail(j, "unterminated string");
	c = j->p[j->pos++];
	for (i = 0; simple[i]; i += 2) {
		if (simple[i] == (char)c) {
			o[0] = simple[i + 1];
			*olen = 1;
			return 0;
		}
	}
	if (c != 'u') {
		j->pos--;
		return jr_fail(j, "unknown escape '\\%c'", isprint(c) ? c : '?');
	}
	err = jr_hex4(j, &cp);
	if (err)
		return err;
	if (cp == 0)
		return jr_fail(j, "\\u0000 (a NUL) in a string");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return jr_fail(j, "lone low surrogate \\u%04" PRIx32, cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (j->len - j->pos < 2 || j->p[j->pos] != '\\' || j->p[j->pos + 1] != 'u')
			return jr_fail(j, "high surrogate \\u%04" PRIx32 " without its low half",
				       cp);
		j->pos += 2;
		err = jr_hex4(j, &lo);
		if (err)
			return err;
		if (lo < 0xdc00 || lo > 0xdfff)
			return jr_fail(j,
				       "high surrogate \\u%04" PRIx32 " followed by \\u%04" PRIx32,
				       cp, lo);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*olen = utf8_put(o, cp);
	return 0;
}

/*
 * A string at j->pos (after white space), unescaped into a malloc'd NUL-terminated copy (*out;
 * NULL out: checked and dropped). Raw control characters and bytes that are not well-formed UTF-8
 * are refused: RFC 8259 text is UTF-8, and the spool's writer never emits them.
 */
static int jr_string(struct jr *j, char **out, size_t *outlen)
{
	size_t start, end, n = 0, k = 0;
	char *o;
	int err;

	if (out)
		*out = NULL;
	if (jr_peek(j) != '"')
		return jr_fail(j, "expected a string");
	start = ++j->pos;
	/* Escapes never decode longer than they are written: the raw length bounds the copy. */
	for (end = start; end < j->len && j->p[end] != '"'; end++) {
		if (j->p[end] == '\\')
			end++;
	}
	if (end >= j->len)
		return jr_fail(j, "unterminated string");
	o = malloc(end - start + 1);
	if (!o)
		return -ENOMEM;
	while (j->p[j->pos] != '"') {
		unsigned char c = j->p[j->pos];

		if (c == '\\') {
			j->pos++;
			err = jr_escape(j, o + n, &k);
			if (err)
				goto fail;
			n += k;
		} else if (c < 0x20) {
			err = jr_fail(j, "control character 0x%02x in a string", c);
			goto fail;
		} else if (c < 0x80) {
			o[n++] = (char)c;
			j->pos++;
		} else {
			k = text_utf8_len(j->p + j->pos, end - j->pos);
			if (!k) {
				err = jr_fail(j, "invalid UTF-8 byte 0x%02x in a string", c);
				goto fail;
			}
			memcpy(o + n, j->p + j->pos, k);
			n += k;
			j->pos += k;
		}
	}
	j->pos++;
	o[n] = '\0';
	if (outlen)
		*outlen = n;
	if (out)
		*out = o;
	else
		free(o);
	return 0;
fail:
	free(o);
	return err;
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/*
 * The integer part of a number at j->pos: an optional '-', then 0 or [1-9][0-9]* (JSON refuses
 * leading zeros). *mag is its magnitude; *ovf is set when it does not fit 64 bits unsigned.
 */
static int jr_int_part(struct jr *j, bool *neg, uint64_t *mag, bool *ovf)
{
	uint64_t v = 0;
	unsigned d;

	*neg = false;
	*ovf = false;
	if (jr_peek(j) == '-') {
		*neg = true;
		j->pos++;
	}
	if (j->pos >= j->len || !is_digit(j->p[j->pos]))
		return jr_fail(j, "malformed number");
	if (j->p[j->pos] == '0' && j->pos + 1 < j->len && is_digit(j->p[j->pos + 1]))
		return jr_fail(j, "number with a leading zero");
	while (j->pos < j->len && is_digit(j->p[j->pos])) {
		d = j->p[j->pos++] - '0';
		if (v > (UINT64_MAX - d) / 10)
			*ovf = true;
		else
			v = v * 10 + d;
	}
	*mag = v;
	return 0;
}

/* The fraction and exponent of a number, if any; true if there was one. */
static int jr_frac_exp(struct jr *j, bool *had)
{
	*had = false;
	if (j->pos < j->len && j->p[j->pos] == '.') {
		*had = true;
		j->pos++;
		if (j->pos >= j->len || !is_digit(j->p[j->pos]))
			return jr_fail(j, "malformed number");
		while (j->pos < j->len && is_digit(j->p[j->pos]))
			j->pos++;
	}
	if (j->pos < j->len && (j->p[j->pos] == 'e' || j->p[j->pos] == 'E')) {
		*had = true;
		j->pos++;
		if (j->pos < j->len && (j->p[j->pos] == '+' || j->p[j->pos] == '-'))
			j->pos++;
		if (j->pos >= j->len || !is_digit(j->p[j->pos]))
			return jr_fail(j, "malformed number");
		while (j->pos < j->len && is_digit(j->p[j->pos]))
			j->pos++;
	}
	return 0;
}

/* An integer field: in [min, max] (as signed when min < 0, unsigned otherwise). */
static int jr_integer(struct jr *j, const char *field, bool is_signed, int64_t *s, uint64_t *u)
{
	bool neg = false, ovf = false, frac = false;
	uint64_t mag = 0;
	int c, err;

	c = jr_peek(j);
	if (c != '-' && !is_digit(c))
		return jr_field_fail(j, field, "not an integer");
	err = jr_int_part(j, &neg, &mag, &ovf);
	if (err)
		return err;
	err = jr_frac_exp(j, &frac);
	if (err)
		return err;
	if (frac)
		return jr_field_fail(j, field, "not an integer");
	if (ovf)
		return jr_field_fail(j, field, "out of range");
	if (!is_signed) {
		if (neg && mag)
			return jr_field_fail(j, field, "negative");
		*u = mag;
		return 0;
	}
	if (neg) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return jr_field_fail(j, field, "out of range");
		*s = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return jr_field_fail(j, field, "out of range");
		*s = (int64_t)mag;
	}
	return 0;
}

static int jr_literal(struct jr *j, const char *word)
{
	size_t n = strlen(word);

	if (j->len - j->pos < n || memcmp(j->p + j->pos, word, n))
		return jr_fail(j, "expected a value");
	j->pos += n;
	return 0;
}

/* Any value, checked and dropped; depth counts the objects and arrays around it. */
static int jr_skip(struct jr *j, int depth)
{
	bool neg, ovf, frac;
	uint64_t mag;
	int c, err;

	c = jr_peek(j);
	switch (c) {
	case '"':
		return jr_string(j, NULL, NULL);
	case 't':
		return jr_literal(j, "true");
	case 'f':
		return jr_literal(j, "false");
	case 'n':
		return jr_literal(j, "null");
	case '{':
	case '[':
		if (depth >= JSON_MAX_DEPTH)
			return jr_fail(j, "nested deeper than %d", JSON_MAX_DEPTH);
		j->pos++;
		if (jr_peek(j) == (c == '{' ? '}' : ']')) {
			j->pos++;
			return 0;
		}
		for (;;) {
			if (c == '{') {
				err = jr_string(j, NULL, NULL);
				if (!err)
					err = jr_expect(j, ':');
				if (err)
					return err;
			}
			err = jr_skip(j, depth + 1);
			if (err)
				return err;
			if (jr_peek(j) == ',') {
				j->pos++;
				continue;
			}
			return jr_expect(j, c == '{' ? '}' : ']');
		}
	default:
		if (c != '-' && !is_digit(c))
			return c < 0 ? jr_fail(j, "expected a value, found the end")
				     : jr_fail(j, "expected a value");
		err = jr_int_part(j, &neg, &mag, &ovf);
		return err ? err : jr_frac_exp(j, &frac);
	}
}

/* ---- sidecar --------------------------------------------------------------------------------- */

enum sc_field {
	F_VERSION,
	F_SERVICE,
	F_FROM,
	F_UNTIL,
	F_RATE,
	F_PERIOD,
	F_SPY,
	F_LABELS,
	F_PROFILE,
	F_BYTES,
	F_PROFILE_NAME, /* optional: "process_cpu" when missing (sidecars before wall mode) */
	F_COUNT,
};

static const char *const sc_names[F_COUNT] = {
	[F_VERSION] = "version",
	[F_SERVICE] = "service",
	[F_FROM] = "from_ns",
	[F_UNTIL] = "until_ns",
	[F_RATE] = "sample_rate",
	[F_PERIOD] = "period_ns",
	[F_SPY] = "spy_name",
	[F_LABELS] = "labels",
	[F_PROFILE] = "profile",
	[F_BYTES] = "bytes",
	[F_PROFILE_NAME] = "profile_name",
};

void sidecar__free(struct sidecar *sc)
{
	size_t i;

	if (!sc)
		return;
	for (i = 0; i < sc->nlabels; i++) {
		free(sc->labels[i].key);
		free(sc->labels[i].value);
	}
	free(sc->labels);
	free(sc->service);
	free(sc->spy_name);
	free(sc->profile_name);
	free(sc->profile);
	free(sc);
}

static int sc_string(struct jr *j, const char *field, char **out)
{
	if (jr_peek(j) != '"')
		return jr_field_fail(j, field, "not a string");
	return jr_string(j, out, NULL);
}

static int sc_labels(struct jr *j, struct sidecar *sc)
{
	struct sidecar_label *l;
	size_t cap = 0, i;
	char *key = NULL;
	int err;

	if (jr_peek(j) != '{')
		return jr_field_fail(j, "labels", "not an object");
	j->pos++;
	if (jr_peek(j) == '}') {
		j->pos++;
		return 0;
	}
	for (;;) {
		err = jr_string(j, &key, NULL);
		if (err)
			goto cleanup;
		for (i = 0; i < sc->nlabels; i++) {
			if (!strcmp(sc->labels[i].key, key)) {
				err = jr_field_fail(j, "labels", "duplicate key \"%.64s\"", key);
				goto cleanup;
			}
		}
		if (sc->nlabels == SIDECAR_MAX_LABELS) {
			err = jr_field_fail(j, "labels", "more than %d labels", SIDECAR_MAX_LABELS);
			goto cleanup;
		}
		if (sc->nlabels == cap) {
			cap = cap ? cap * 2 : 8;
			l = realloc(sc->labels, cap * sizeof(*l));
			if (!l) {
				err = -ENOMEM;
				goto cleanup;
			}
			sc->labels = l;
		}
		err = jr_expect(j, ':');
		if (err)
			goto cleanup;
		if (jr_peek(j) != '"') {
			err = jr_field_fail(j, "labels", "the value of \"%.64s\" is not a string",
					    key);
			goto cleanup;
		}
		l = &sc->labels[sc->nlabels];
		err = jr_string(j, &l->value, NULL);
		if (err)
			goto cleanup;
		l->key = key;
		key = NULL;
		sc->nlabels++;
		if (jr_peek(j) == ',') {
			j->pos++;
			continue;
		}
		err = jr_expect(j, '}');
		break;
	}
cleanup:
	free(key);
	return err;
}

static int sc_field(struct jr *j, struct sidecar *sc, enum sc_field f)
{
	const char *name = sc_names[f];
	int64_t s = 0;
	uint64_t u = 0;
	int err;

	switch (f) {
	case F_VERSION:
		err = jr_integer(j, name, true, &s, NULL);
		if (!err && (s < INT_MIN || s > INT_MAX))
			err = jr_field_fail(j, name, "out of range");
		if (!err)
			sc->version = (int)s;
		return err;
	case F_SERVICE:
		return sc_string(j, name, &sc->service);
	case F_FROM:
		return jr_integer(j, name, true, &sc->from_ns, NULL);
	case F_UNTIL:
		return jr_integer(j, name, true, &sc->until_ns, NULL);
	case F_RATE:
		err = jr_integer(j, name, false, NULL, &u);
		if (!err && u > UINT_MAX)
			err = jr_field_fail(j, name, "out of range");
		if (!err)
			sc->sample_rate = (unsigned int)u;
		return err;
	case F_PERIOD:
		return jr_integer(j, name, true, &sc->period_ns, NULL);
	case F_SPY:
		return sc_string(j, name, &sc->spy_name);
	case F_LABELS:
		return sc_labels(j, sc);
	case F_PROFILE:
		return sc_string(j, name, &sc->profile);
	case F_BYTES:
		return jr_integer(j, name, false, NULL, &sc->bytes);
	case F_PROFILE_NAME:
		return sc_string(j, name, &sc->profile_name);
	default:
		return -EINVAL;
	}
}

static bool metric_name_ok(const char *s)
{
	size_t i;

	if (!s[0] || is_digit((unsigned char)s[0]))
		return false;
	for (i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((isalnum(c) && c < 0x80) || c == '_' || c == ':'))
			return false;
	}
	return true;
}

/* What a complete version 1 sidecar must also hold beyond its syntax. */
static int sc_check(struct jr *j, struct sidecar *sc, unsigned seen)
{
	int f;

	if (seen & (1u << F_VERSION) && sc->version != 1)
		return jr_field_fail(j, "version", "%d is not a version this reader knows (1)",
				     sc->version);
	for (f = 0; f < F_COUNT; f++) {
		if (!(seen & (1u << f)) && f != F_PROFILE_NAME) {
			if (j->errlen)
				snprintf(j->err, j->errlen, "missing field \"%s\"", sc_names[f]);
			return -EINVAL;
		}
	}
	if (!sc->service[0])
		return jr_field_fail(j, "service", "empty");
	if (sc->from_ns < 0)
		return jr_field_fail(j, "from_ns", "negative");
	if (sc->until_ns < sc->from_ns)
		return jr_field_fail(j, "until_ns", "before from_ns");
	if (sc->period_ns < 0)
		return jr_field_fail(j, "period_ns", "negative");
	/* The shipper opens it next to the sidecar: a plain name, never a path. */
	if (!sc->profile[0] || sc->profile[0] == '.' || strchr(sc->profile, '/'))
		return jr_field_fail(j, "profile", "not a plain file name");
	/* a metric name: it becomes __name__ (Prometheus' [a-zA-Z_:][a-zA-Z0-9_:]*) */
	if (sc->profile_name && !metric_name_ok(sc->profile_name))
		return jr_field_fail(j, "profile_name", "not a metric name");
	return 0;
}

struct sidecar *sidecar__parse(const char *json, size_t len, char *err, size_t errlen)
{
	struct jr j = {.p = (const unsigned char *)json, .len = len, .err = err, .errlen = errlen};
	char *unknown[SIDECAR_MAX_UNKNOWN];
	size_t nunknown = 0, i;
	struct sidecar *sc;
	unsigned seen = 0;
	char *key = NULL;
	int f, ret;

	if (errlen)
		err[0] = '\0';
	sc = calloc(1, sizeof(*sc));
	if (!sc) {
		errno = ENOMEM;
		return NULL;
	}
	ret = jr_expect(&j, '{');
	if (ret)
		goto cleanup;
	if (jr_peek(&j) == '}') {
		j.pos++;
		goto end;
	}
	for (;;) {
		ret = jr_string(&j, &key, NULL);
		if (!ret && !key)
			ret = -EINVAL; /* not reached: tells the analyzer key is set */
		if (ret)
			goto cleanup;
		ret = jr_expect(&j, ':');
		if (ret)
			goto cleanup;
		for (f = 0; f < F_COUNT && strcmp(key, sc_names[f]); f++)
			;
		if (f < F_COUNT) {
			if (seen & (1u << f)) {
				ret = jr_fail(&j, "duplicate field \"%s\"", key);
				goto cleanup;
			}
			seen |= 1u << f;
			ret = sc_field(&j, sc, (enum sc_field)f);
		} else {
			for (i = 0; i < nunknown; i++) {
				if (!strcmp(unknown[i], key)) {
					ret = jr_fail(&j, "duplicate field \"%.64s\"", key);
					goto cleanup;
				}
			}
			if (nunknown == SIDECAR_MAX_UNKNOWN) {
				ret = jr_fail(&j, "more than %d unknown fields",
					      SIDECAR_MAX_UNKNOWN);
				goto cleanup;
			}
			unknown[nunknown++] = key;
			key = NULL;
			/* Fields may be added within a version: skipped, whatever they hold. */
			ret = jr_skip(&j, 1);
		}
		free(key);
		key = NULL;
		if (ret)
			goto cleanup;
		if (jr_peek(&j) == ',') {
			j.pos++;
			continue;
		}
		ret = jr_expect(&j, '}');
		if (ret)
			goto cleanup;
		break;
	}
end:
	jr_ws(&j);
	if (j.pos != j.len) {
		ret = jr_fail(&j, "data after the object");
		goto cleanup;
	}
	ret = sc_check(&j, sc, seen);
cleanup:
	free(key);
	for (i = 0; i < nunknown; i++)
		free(unknown[i]);
	if (ret) {
		sidecar__free(sc);
		errno = -ret;
		return NULL;
	}
	return sc;
}

struct sidecar *sidecar__read(const char *path, char *err, size_t errlen)
{
	struct sidecar *sc = NULL;
	char *buf = NULL, msg[256];
	size_t len = 0;
	struct stat st;
	ssize_t n;
	int fd, e = 0;

	if (errlen)
		err[0] = '\0';
	/* O_NONBLOCK: a FIFO is refused below, not waited on */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		e = errno;
		if (errlen)
			snprintf(err, errlen, "\"%s\": %s", path, strerror(e));
		goto cleanup;
	}
	if (fstat(fd, &st)) {
		e = errno;
		if (errlen)
			snprintf(err, errlen, "\"%s\": %s", path, strerror(e));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		e = EINVAL;
		if (errlen)
			snprintf(err, errlen, "\"%s\": not a regular file", path);
		goto cleanup;
	}
	if (st.st_size > SIDECAR_MAX_BYTES) {
		e = EFBIG;
		if (errlen)
			snprintf(err, errlen, "\"%s\": larger than %u bytes", path,
				 SIDECAR_MAX_BYTES);
		goto cleanup;
	}
	/* One byte more than the bound, to see a file that grew past it since the fstat. */
	buf = malloc(SIDECAR_MAX_BYTES + 1);
	if (!buf) {
		e = ENOMEM;
		goto cleanup;
	}
	while (len <= SIDECAR_MAX_BYTES) {
		n = read(fd, buf + len, SIDECAR_MAX_BYTES + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			if (errlen)
				snprintf(err, errlen, "\"%s\": %s", path, strerror(e));
			goto cleanup;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	if (len > SIDECAR_MAX_BYTES) {
		e = EFBIG;
		if (errlen)
			snprintf(err, errlen, "\"%s\": larger than %u bytes", path,
				 SIDECAR_MAX_BYTES);
		goto cleanup;
	}
	sc = sidecar__parse(buf, len, msg, sizeof(msg));
	if (!sc) {
		e = errno;
		if (errlen)
			snprintf(err, errlen, "\"%s\": %s", path, e == EINVAL ? msg : strerror(e));
	}
cleanup:
	if (fd >= 0)
		close(fd);
	free(buf);
	if (!sc)
		errno = e ? e : EINVAL;
	return sc;
}

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

/*
 * A label name every collector takes as is: Prometheus' classic [a-zA-Z_][a-zA-Z0-9_]*, which
 * Parca requires, Pyroscope's push API sanitizes to, and Pyroscope's /ingest allows (it also
 * takes '.'). Other bytes become '_', a leading digit gets a '_' before it.
 */
static char *label_name(const char *key)
{
	size_t n = strlen(key), i;
	bool lead = is_digit((unsigned char)key[0]);
	char *o = malloc(n + 2), *q;

	if (!o)
		return NULL;
	q = o;
	if (lead)
		*q++ = '_';
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)key[i];

		*q++ = (isalnum(c) && c < 0x80) || c == '_' ? (char)c : '_';
	}
	*q = '\0';
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
static int ilabels_build(enum ingest_protocol proto, const struct sidecar *sc, struct ilabels *ls)
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
	if (!err && proto != INGEST_PYROSCOPE)
		err = ilabels_add(ls, "__name__",
				  sc->profile_name ? sc->profile_name : PROFILE_NAME, false);
	if (!err && proto == INGEST_PYROSCOPE_PUSH && !ilabels_has(ls, "pyroscope_spy"))
		err = ilabels_add(ls, "pyroscope_spy", sc->spy_name, false);
	if (err)
		return err;
	qsort(ls->v, ls->n, sizeof(*ls->v), ilabel_cmp);
	for (i = 1; i < ls->n; i++) {
		if (!strcmp(ls->v[i - 1].key, ls->v[i].key))
			return -EINVAL;
	}
	return proto == INGEST_PARCA ? 0 : ilabels_fit_pyroscope(ls);
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

int ingest_build(enum ingest_protocol proto, const char *base, const struct sidecar *sc,
		 const void *profile, size_t len, struct ingest_request *out)
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
	case INGEST_PYROSCOPE:
		err = build_ingest(sc, &ls, &url);
		if (!err)
			buf_put(&body, profile, len);
		out->content_type = "application/octet-stream";
		break;
	case INGEST_PYROSCOPE_PUSH:
		buf_puts(&url, "/push.v1.PusherService/Push");
		err = build_push(sc, &ls, profile, len, &body);
		out->content_type = "application/proto";
		out->headers[0] = "Connect-Protocol-Version: 1";
		break;
	case INGEST_PARCA:
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

void ingest_request_release(struct ingest_request *r)
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

int ingest_check_reply(enum ingest_protocol proto, const char *headers, size_t hlen,
		       const void *body, size_t len, char *err, size_t errlen)
{
	struct grpc_status st = {0};
	char tmp[1];
	int ret;

	if (!errlen) {
		err = tmp;
		errlen = sizeof(tmp);
	}
	err[0] = '\0';
	if (proto != INGEST_PARCA)
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

int ingest_check_response(enum ingest_protocol proto, const void *body, size_t len, char *err,
			  size_t errlen)
{
	return ingest_check_reply(proto, NULL, 0, body, len, err, errlen);
}

/* Connect's (and Pyroscope's /ingest's) error body: {"code": "...", "message": "..."}. */
static bool connect_error(const void *body, size_t len, char *out, size_t outlen)
{
	struct jr j = {.p = body, .len = len};
	char *key = NULL, *code = NULL, *msg = NULL, **dst;
	bool ok = false;

	if (jr_expect(&j, '{'))
		return false;
	while (jr_peek(&j) == '"') {
		if (jr_string(&j, &key, NULL) || !key || jr_expect(&j, ':'))
			goto cleanup;
		dst = !strcmp(key, "code") ? &code : !strcmp(key, "message") ? &msg : NULL;
		free(key);
		key = NULL;
		if (dst && jr_peek(&j) == '"' && !*dst) {
			if (jr_string(&j, dst, NULL))
				goto cleanup;
		} else if (jr_skip(&j, 1)) {
			goto cleanup;
		}
		if (jr_peek(&j) != ',')
			break;
		j.pos++;
	}
	if (jr_expect(&j, '}') || (!code && !msg))
		goto cleanup;
	snprintf(out, outlen, "%s%s%s", code ? code : "", code && msg ? ": " : "", msg ? msg : "");
	ok = true;
cleanup:
	free(key);
	free(code);
	free(msg);
	return ok;
}

int ingest_error_reason(enum ingest_protocol proto, const char *headers, size_t hlen,
			const void *body, size_t len, char *out, size_t outlen)
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
	if (proto == INGEST_PARCA) {
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
	[INGEST_PYROSCOPE] = "pyroscope",
	[INGEST_PYROSCOPE_PUSH] = "pyroscope-push",
	[INGEST_PARCA] = "parca",
};

int ingest_protocol_parse(const char *name, enum ingest_protocol *out)
{
	size_t i;

	for (i = 0; name && i < sizeof(proto_names) / sizeof(proto_names[0]); i++) {
		if (!strcmp(name, proto_names[i])) {
			*out = (enum ingest_protocol)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *ingest_protocol_name(enum ingest_protocol proto)
{
	if ((unsigned)proto >= sizeof(proto_names) / sizeof(proto_names[0]))
		return "unknown";
	return proto_names[proto];
}
