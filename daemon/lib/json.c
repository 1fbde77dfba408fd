// SPDX-License-Identifier: GPL-2.0-only
/* json.c - a small strict JSON reader over a byte range (json.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/json.h"
#include "lib/text.h"

/* A malformed document: the message names the field, or else the byte it was read at. -EINVAL. */
int json_field_fail(struct json_reader *j, const char *field, const char *fmt, ...)
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

/* Objects and arrays nested deeper than this (in unknown fields) are refused, not recursed into. */
#define JSON_MAX_DEPTH 32

void json_ws(struct json_reader *j)
{
	while (j->pos < j->len && (j->p[j->pos] == ' ' || j->p[j->pos] == '\t' ||
				   j->p[j->pos] == '\n' || j->p[j->pos] == '\r'))
		j->pos++;
}

/* The next byte after white space, or -1 at the end. */
int json_peek(struct json_reader *j)
{
	json_ws(j);
	return j->pos < j->len ? j->p[j->pos] : -1;
}

int json_expect(struct json_reader *j, char c)
{
	if (json_peek(j) != (unsigned char)c)
		return j->pos < j->len ? json_fail(j, "expected '%c'", c)
				       : json_fail(j, "expected '%c', found the end", c);
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
static int json_hex4(struct json_reader *j, uint32_t *out)
{
	uint32_t v = 0;
	int i, h;

	if (j->len - j->pos < 4)
		return json_fail(j, "\\u escape cut short");
	for (i = 0; i < 4; i++) {
		h = buf_hexval(j->p[j->pos + i]);
		if (h < 0)
			return json_fail(j, "\\u escape with a non-hex digit");
		v = v << 4 | (uint32_t)h;
	}
	j->pos += 4;
	*out = v;
	return 0;
}

/* A backslash escape at j->pos (the backslash already consumed), decoded into o. */
static int json_escape(struct json_reader *j, char *o, size_t *olen)
{
	static const char simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
	uint32_t cp, lo;
	unsigned char c;
	size_t i;
	int err;

	if (j->pos >= j->len)
		return json_fail(j, "unterminated string");
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
		return json_fail(j, "unknown escape '\\%c'", isprint(c) ? c : '?');
	}
	err = json_hex4(j, &cp);
	if (err)
		return err;
	if (cp == 0)
		return json_fail(j, "\\u0000 (a NUL) in a string");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return json_fail(j, "lone low surrogate \\u%04" PRIx32, cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (j->len - j->pos < 2 || j->p[j->pos] != '\\' || j->p[j->pos + 1] != 'u')
			return json_fail(j, "high surrogate \\u%04" PRIx32 " without its low half",
					 cp);
		j->pos += 2;
		err = json_hex4(j, &lo);
		if (err)
			return err;
		if (lo < 0xdc00 || lo > 0xdfff)
			return json_fail(
				j, "high surrogate \\u%04" PRIx32 " followed by \\u%04" PRIx32, cp,
				lo);
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
int json_string(struct json_reader *j, char **out, size_t *outlen)
{
	size_t start, end, n = 0, k = 0;
	char *o;
	int err;

	if (out)
		*out = NULL;
	if (json_peek(j) != '"')
		return json_fail(j, "expected a string");
	start = ++j->pos;
	/* Escapes never decode longer than they are written: the raw length bounds the copy. */
	for (end = start; end < j->len && j->p[end] != '"'; end++) {
		if (j->p[end] == '\\')
			end++;
	}
	if (end >= j->len)
		return json_fail(j, "unterminated string");
	o = malloc(end - start + 1);
	if (!o)
		return -ENOMEM;
	while (j->p[j->pos] != '"') {
		unsigned char c = j->p[j->pos];

		if (c == '\\') {
			j->pos++;
			err = json_escape(j, o + n, &k);
			if (err)
				goto fail;
			n += k;
		} else if (c < 0x20) {
			err = json_fail(j, "control character 0x%02x in a string", c);
			goto fail;
		} else if (c < 0x80) {
			o[n++] = (char)c;
			j->pos++;
		} else {
			k = text_utf8_len(j->p + j->pos, end - j->pos);
			if (!k) {
				err = json_fail(j, "invalid UTF-8 byte 0x%02x in a string", c);
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
static int json_int_part(struct json_reader *j, bool *neg, uint64_t *mag, bool *ovf)
{
	uint64_t v = 0;
	unsigned d;

	*neg = false;
	*ovf = false;
	if (json_peek(j) == '-') {
		*neg = true;
		j->pos++;
	}
	if (j->pos >= j->len || !is_digit(j->p[j->pos]))
		return json_fail(j, "malformed number");
	if (j->p[j->pos] == '0' && j->pos + 1 < j->len && is_digit(j->p[j->pos + 1]))
		return json_fail(j, "number with a leading zero");
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
static int json_frac_exp(struct json_reader *j, bool *had)
{
	*had = false;
	if (j->pos < j->len && j->p[j->pos] == '.') {
		*had = true;
		j->pos++;
		if (j->pos >= j->len || !is_digit(j->p[j->pos]))
			return json_fail(j, "malformed number");
		while (j->pos < j->len && is_digit(j->p[j->pos]))
			j->pos++;
	}
	if (j->pos < j->len && (j->p[j->pos] == 'e' || j->p[j->pos] == 'E')) {
		*had = true;
		j->pos++;
		if (j->pos < j->len && (j->p[j->pos] == '+' || j->p[j->pos] == '-'))
			j->pos++;
		if (j->pos >= j->len || !is_digit(j->p[j->pos]))
			return json_fail(j, "malformed number");
		while (j->pos < j->len && is_digit(j->p[j->pos]))
			j->pos++;
	}
	return 0;
}

/* An integer field: in [min, max] (as signed when min < 0, unsigned otherwise). */
int json_integer(struct json_reader *j, const char *field, bool is_signed, int64_t *s, uint64_t *u)
{
	bool neg = false, ovf = false, frac = false;
	uint64_t mag = 0;
	int c, err;

	c = json_peek(j);
	if (c != '-' && !is_digit(c))
		return json_field_fail(j, field, "not an integer");
	err = json_int_part(j, &neg, &mag, &ovf);
	if (err)
		return err;
	err = json_frac_exp(j, &frac);
	if (err)
		return err;
	if (frac)
		return json_field_fail(j, field, "not an integer");
	if (ovf)
		return json_field_fail(j, field, "out of range");
	if (!is_signed) {
		if (neg && mag)
			return json_field_fail(j, field, "negative");
		*u = mag;
		return 0;
	}
	if (neg) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return json_field_fail(j, field, "out of range");
		*s = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return json_field_fail(j, field, "out of range");
		*s = (int64_t)mag;
	}
	return 0;
}

int json_literal(struct json_reader *j, const char *word)
{
	size_t n = strlen(word);

	if (j->len - j->pos < n || memcmp(j->p + j->pos, word, n))
		return json_fail(j, "expected a value");
	j->pos += n;
	return 0;
}

/* Any value, checked and dropped; depth counts the objects and arrays around it. */
int json_skip(struct json_reader *j, int depth)
{
	bool neg, ovf, frac;
	uint64_t mag;
	int c, err;

	c = json_peek(j);
	switch (c) {
	case '"':
		return json_string(j, NULL, NULL);
	case 't':
		return json_literal(j, "true");
	case 'f':
		return json_literal(j, "false");
	case 'n':
		return json_literal(j, "null");
	case '{':
	case '[':
		if (depth >= JSON_MAX_DEPTH)
			return json_fail(j, "nested deeper than %d", JSON_MAX_DEPTH);
		j->pos++;
		if (json_peek(j) == (c == '{' ? '}' : ']')) {
			j->pos++;
			return 0;
		}
		for (;;) {
			if (c == '{') {
				err = json_string(j, NULL, NULL);
				if (!err)
					err = json_expect(j, ':');
				if (err)
					return err;
			}
			err = json_skip(j, depth + 1);
			if (err)
				return err;
			if (json_peek(j) == ',') {
				j->pos++;
				continue;
			}
			return json_expect(j, c == '{' ? '}' : ']');
		}
	default:
		if (c != '-' && !is_digit(c))
			return c < 0 ? json_fail(j, "expected a value, found the end")
				     : json_fail(j, "expected a value");
		err = json_int_part(j, &neg, &mag, &ovf);
		return err ? err : json_frac_exp(j, &frac);
	}
}
