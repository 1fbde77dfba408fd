// SPDX-License-Identifier: GPL-2.0-only
/* sidecar.c - a spool sidecar, written beside its profile and read back by the shipper (sidecar.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/array.h"
#include "lib/buf.h"
#include "lib/fileio.h"
#include "lib/json.h"
#include "lib/text.h"
#include "output/sidecar.h"

/* Labels in one sidecar (the spool writes at most 64). */
#define SIDECAR_MAX_LABELS  256
/* Unknown top-level fields remembered for the duplicate check. */
#define SIDECAR_MAX_UNKNOWN 64

/* ---- written ---------------------------------------------------------------------------------- */

static void jb_put(void *ctx, const char *s, size_t len)
{
	buf_put(ctx, s, len);
}

/* A JSON string: valid JSON and valid UTF-8 whatever the labels hold (text_json). */
static void jb_str(struct buf *b, const char *s)
{
	text_json(s, false, jb_put, b);
}

int sidecar_write(struct buf *b, const struct spool_meta *m, const char *profile, size_t len)
{
	size_t i;

	buf_puts(b, "{\"version\":1,\"service\":");
	jb_str(b, m->service);
	buf_printf(b, ",\"from_ns\":%" PRId64 ",\"until_ns\":%" PRId64, m->from_ns, m->until_ns);
	buf_printf(b, ",\"sample_rate\":%u,\"period_ns\":%" PRId64, m->sample_rate, m->period_ns);
	buf_puts(b, ",\"spy_name\":");
	jb_str(b, m->spy_name ? m->spy_name : "rubyprofd");
	if (m->profile_name) {
		buf_puts(b, ",\"profile_name\":");
		jb_str(b, m->profile_name);
	}
	buf_puts(b, ",\"labels\":{");
	for (i = 0; i < m->nlabels; i++) {
		if (i)
			buf_put(b, ",", 1);
		jb_str(b, m->labels[i].key);
		buf_put(b, ":", 1);
		jb_str(b, m->labels[i].value);
	}
	buf_puts(b, "},\"profile\":");
	jb_str(b, profile);
	buf_printf(b, ",\"bytes\":%zu}\n", len);
	return b->err;
}

/* ---- read back --------------------------------------------------------------------------------- */

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

static int sc_string(struct json_reader *j, const char *field, char **out)
{
	if (json_peek(j) != '"')
		return json_field_fail(j, field, "not a string");
	return json_string(j, out, NULL);
}

static int sc_labels(struct json_reader *j, struct sidecar *sc)
{
	struct sidecar_label *l;
	size_t cap = 0, i;
	char *key = NULL;
	int err;

	if (json_peek(j) != '{')
		return json_field_fail(j, "labels", "not an object");
	j->pos++;
	if (json_peek(j) == '}') {
		j->pos++;
		return 0;
	}
	for (;;) {
		err = json_string(j, &key, NULL);
		if (err)
			goto cleanup;
		for (i = 0; i < sc->nlabels; i++) {
			if (!strcmp(sc->labels[i].key, key)) {
				err = json_field_fail(j, "labels", "duplicate key \"%.64s\"", key);
				goto cleanup;
			}
		}
		if (sc->nlabels == SIDECAR_MAX_LABELS) {
			err = json_field_fail(j, "labels", "more than %d labels",
					      SIDECAR_MAX_LABELS);
			goto cleanup;
		}
		if (array_reserve(sc->labels, cap, sc->nlabels + 1, 8)) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = json_expect(j, ':');
		if (err)
			goto cleanup;
		if (json_peek(j) != '"') {
			err = json_field_fail(j, "labels", "the value of \"%.64s\" is not a string",
					      key);
			goto cleanup;
		}
		l = &sc->labels[sc->nlabels];
		err = json_string(j, &l->value, NULL);
		if (err)
			goto cleanup;
		l->key = key;
		key = NULL;
		sc->nlabels++;
		if (json_peek(j) == ',') {
			j->pos++;
			continue;
		}
		err = json_expect(j, '}');
		break;
	}
cleanup:
	free(key);
	return err;
}

static int sc_field(struct json_reader *j, struct sidecar *sc, enum sc_field f)
{
	const char *name = sc_names[f];
	int64_t s = 0;
	uint64_t u = 0;
	int err;

	switch (f) {
	case F_VERSION:
		err = json_integer(j, name, true, &s, NULL);
		if (!err && (s < INT_MIN || s > INT_MAX))
			err = json_field_fail(j, name, "out of range");
		if (!err)
			sc->version = (int)s;
		return err;
	case F_SERVICE:
		return sc_string(j, name, &sc->service);
	case F_FROM:
		return json_integer(j, name, true, &sc->from_ns, NULL);
	case F_UNTIL:
		return json_integer(j, name, true, &sc->until_ns, NULL);
	case F_RATE:
		err = json_integer(j, name, false, NULL, &u);
		if (!err && u > UINT_MAX)
			err = json_field_fail(j, name, "out of range");
		if (!err)
			sc->sample_rate = (unsigned int)u;
		return err;
	case F_PERIOD:
		return json_integer(j, name, true, &sc->period_ns, NULL);
	case F_SPY:
		return sc_string(j, name, &sc->spy_name);
	case F_LABELS:
		return sc_labels(j, sc);
	case F_PROFILE:
		return sc_string(j, name, &sc->profile);
	case F_BYTES:
		return json_integer(j, name, false, NULL, &sc->bytes);
	case F_PROFILE_NAME:
		return sc_string(j, name, &sc->profile_name);
	default:
		return -EINVAL;
	}
}

static bool metric_name_ok(const char *s)
{
	size_t i;

	if (!s[0] || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((isalnum(c) && c < 0x80) || c == '_' || c == ':'))
			return false;
	}
	return true;
}

/* What a complete version 1 sidecar must also hold beyond its syntax. */
static int sc_check(struct json_reader *j, struct sidecar *sc, unsigned seen)
{
	int f;

	if (seen & (1u << F_VERSION) && sc->version != 1)
		return json_field_fail(j, "version", "%d is not a version this reader knows (1)",
				       sc->version);
	for (f = 0; f < F_COUNT; f++) {
		if (!(seen & (1u << f)) && f != F_PROFILE_NAME) {
			if (j->errlen)
				snprintf(j->err, j->errlen, "missing field \"%s\"", sc_names[f]);
			return -EINVAL;
		}
	}
	if (!sc->service[0])
		return json_field_fail(j, "service", "empty");
	if (sc->from_ns < 0)
		return json_field_fail(j, "from_ns", "negative");
	if (sc->until_ns < sc->from_ns)
		return json_field_fail(j, "until_ns", "before from_ns");
	if (sc->period_ns < 0)
		return json_field_fail(j, "period_ns", "negative");
	/* The shipper opens it next to the sidecar: a plain name, never a path. */
	if (!sc->profile[0] || sc->profile[0] == '.' || strchr(sc->profile, '/'))
		return json_field_fail(j, "profile", "not a plain file name");
	/* a metric name: it becomes __name__ (Prometheus' [a-zA-Z_:][a-zA-Z0-9_:]*) */
	if (sc->profile_name && !metric_name_ok(sc->profile_name))
		return json_field_fail(j, "profile_name", "not a metric name");
	return 0;
}

struct sidecar *sidecar__parse(const char *json, size_t len, char *err, size_t errlen)
{
	struct json_reader j = {
		.p = (const unsigned char *)json, .len = len, .err = err, .errlen = errlen};
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
	ret = json_expect(&j, '{');
	if (ret)
		goto cleanup;
	if (json_peek(&j) == '}') {
		j.pos++;
		goto end;
	}
	for (;;) {
		ret = json_string(&j, &key, NULL);
		if (!ret && !key)
			ret = -EINVAL; /* not reached: tells the analyzer key is set */
		if (ret)
			goto cleanup;
		ret = json_expect(&j, ':');
		if (ret)
			goto cleanup;
		for (f = 0; f < F_COUNT && strcmp(key, sc_names[f]); f++)
			;
		if (f < F_COUNT) {
			if (seen & (1u << f)) {
				ret = json_fail(&j, "duplicate field \"%s\"", key);
				goto cleanup;
			}
			seen |= 1u << f;
			ret = sc_field(&j, sc, (enum sc_field)f);
		} else {
			for (i = 0; i < nunknown; i++) {
				if (!strcmp(unknown[i], key)) {
					ret = json_fail(&j, "duplicate field \"%.64s\"", key);
					goto cleanup;
				}
			}
			if (nunknown == SIDECAR_MAX_UNKNOWN) {
				ret = json_fail(&j, "more than %d unknown fields",
						SIDECAR_MAX_UNKNOWN);
				goto cleanup;
			}
			unknown[nunknown++] = key;
			key = NULL;
			/* Fields may be added within a version: skipped, whatever they hold. */
			ret = json_skip(&j, 1);
		}
		free(key);
		key = NULL;
		if (ret)
			goto cleanup;
		if (json_peek(&j) == ',') {
			j.pos++;
			continue;
		}
		ret = json_expect(&j, '}');
		if (ret)
			goto cleanup;
		break;
	}
end:
	json_ws(&j);
	if (j.pos != j.len) {
		ret = json_fail(&j, "data after the object");
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
	uint8_t *buf = NULL;
	char msg[256];
	size_t len = 0;
	int r, e = 0;

	if (errlen)
		err[0] = '\0';
	r = fileio_read_file(path, FILEIO_NOFOLLOW, SIDECAR_MAX_BYTES, &buf, &len);
	if (r) {
		e = -r;
		if (errlen && e == EINVAL)
			snprintf(err, errlen, "\"%s\": not a regular file", path);
		else if (errlen && e == EFBIG)
			snprintf(err, errlen, "\"%s\": larger than %u bytes", path,
				 SIDECAR_MAX_BYTES);
		else if (errlen && e != ENOMEM)
			snprintf(err, errlen, "\"%s\": %s", path, strerror(e));
		goto cleanup;
	}
	sc = sidecar__parse((const char *)buf, len, msg, sizeof(msg));
	if (!sc) {
		e = errno;
		if (errlen)
			snprintf(err, errlen, "\"%s\": %s", path, e == EINVAL ? msg : strerror(e));
	}
cleanup:
	free(buf);
	if (!sc)
		errno = e ? e : EINVAL;
	return sc;
}
