// SPDX-License-Identifier: GPL-2.0-only
/*
 * text.c - UTF-8 checks and the cleaning of target-controlled text (text.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/text.h"

static bool is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t text_utf8_len(const unsigned char *p, size_t n)
{
	unsigned char c;

	if (!n)
		return 0;
	c = p[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && is_cont(p[1]) ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		/* no overlongs (E0 80..9F), no surrogates (ED A0..BF) */
		if (n < 3 || (c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f))
			return 0;
		return is_cont(p[1]) && is_cont(p[2]) ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		/* no overlongs (F0 80..8F), nothing past U+10FFFF (F4 90..) */
		if (n < 4 || (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
			return 0;
		return is_cont(p[1]) && is_cont(p[2]) && is_cont(p[3]) ? 4 : 0;
	}
	return 0;
}

/* The length of the clean sequence at p (left bytes), 0 when it must be replaced. */
static size_t clean_len(const unsigned char *p, size_t left)
{
	size_t k = text_utf8_len(p, left);

	/* C0 controls and DEL; C1 controls are U+0080..U+009F, C2 80..C2 9F */
	if ((k == 1 && (*p < 0x20 || *p == 0x7f)) || (k == 2 && p[0] == 0xc2 && p[1] < 0xa0))
		return 0;
	return k;
}

/* Whether every sequence of s is one that len (a length function as text_utf8_len) accepts. */
static bool all_of(const char *s, size_t (*len)(const unsigned char *p, size_t left))
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), k;

	while (left) {
		k = len(p, left);
		if (!k)
			return false;
		p += k;
		left -= k;
	}
	return true;
}

bool text_utf8_valid(const char *s)
{
	return all_of(s, text_utf8_len);
}

bool text_is_clean(const char *s)
{
	return all_of(s, clean_len);
}

const char *text_clean_copy(const char *s, char *buf, size_t size)
{
	size_t n;

	if (text_is_clean(s))
		return s;
	n = strnlen(s, size - 1);
	memcpy(buf, s, n);
	buf[n] = '\0';
	text_clean(buf);
	return buf;
}

size_t text_clean(char *s)
{
	unsigned char *p = (unsigned char *)s;
	size_t left = strlen(s), k, bad = 0;

	while (left) {
		k = clean_len(p, left);
		if (!k) {
			/* the whole of a well-formed control sequence (C1: two bytes), else one byte */
			k = text_utf8_len(p, left);
			k = k ? k : 1;
			memset(p, '?', k);
			bad += k;
		}
		p += k;
		left -= k;
	}
	return bad;
}

void text_json(const char *s, bool html, text_put_fn put, void *ctx)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), k;
	char esc[8];

	put(ctx, "\"", 1);
	while (left) {
		k = text_utf8_len(p, left);
		if (!k) {
			put(ctx, "\\ufffd", 6);
			k = 1;
		} else if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			put(ctx, esc, 2);
		} else if (*p == '\n') {
			put(ctx, "\\n", 2);
		} else if (*p == '\t') {
			put(ctx, "\\t", 2);
		} else if (*p == '\r') {
			put(ctx, "\\r", 2);
		} else if (*p < 0x20 || *p == 0x7f ||
			   (html && (*p == '<' || *p == '>' || *p == '&'))) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			put(ctx, esc, 6);
		} else {
			put(ctx, (const char *)p, k);
		}
		p += k;
		left -= k;
	}
	put(ctx, "\"", 1);
}

int text_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	const char *p;
	char *end;

	if (!s || !*s)
		return -EINVAL;
	for (p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

size_t text_label_name(const char *key, char *buf, size_t size)
{
	size_t i, n = 0;

	if (key[0] >= '0' && key[0] <= '9' && n + 1 < size)
		buf[n++] = '_';
	for (i = 0; key[i] && n + 1 < size; i++) {
		unsigned char c = (unsigned char)key[i];

		buf[n++] = (isalnum(c) && c < 0x80) || c == '_' ? (char)c : '_';
	}
	buf[n] = '\0';
	return n;
}
