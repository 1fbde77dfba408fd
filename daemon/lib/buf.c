// SPDX-License-Identifier: GPL-2.0-only
/*
 * buf.c - a growable byte buffer with a sticky error (buf.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

void buf_init_fixed(struct buf *b, void *mem, size_t size)
{
	*b = (struct buf){.p = mem, .cap = size, .fixed = true};
	b->p[0] = '\0';
}

/* Room for n more bytes and the NUL; 0 or the (sticky) error. */
static int buf_reserve(struct buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return b->err;
	if (n > SIZE_MAX / 4 - b->len) {
		b->err = -ENOMEM;
		return b->err;
	}
	if (b->len + n + 1 <= b->cap)
		return 0;
	if (b->fixed) {
		b->err = -ENOBUFS;
		return b->err;
	}
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return b->err;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void buf_put(struct buf *b, const void *data, size_t n)
{
	if (buf_reserve(b, n))
		return;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void *buf_put_space(struct buf *b, size_t n)
{
	if (buf_reserve(b, n))
		return NULL;
	b->len += n;
	b->p[b->len] = '\0';
	return b->p + b->len - n;
}

void buf_puts(struct buf *b, const char *s)
{
	buf_put(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		if (!b->err)
			b->err = -EOVERFLOW;
		return;
	}
	buf_put(b, tmp, (size_t)n);
}

void buf_insert(struct buf *b, size_t at, const void *data, size_t n)
{
	size_t len = b->len;

	if (!b->err && at > len)
		b->err = -EINVAL;
	if (buf_reserve(b, n))
		return;
	if (n) {
		memmove(b->p + at + n, b->p + at, len - at);
		memcpy(b->p + at, data, n);
	}
	b->len += n;
	b->p[b->len] = '\0';
}

void buf_put_cut(struct buf *b, const char *s, size_t n, size_t max)
{
	size_t room;

	if (b->err)
		return;
	room = max > b->len ? max - b->len : 0;
	if (n <= room) {
		buf_put(b, s, n);
		return;
	}
	n = room;
	/* back off to the lead byte of a character that would be split */
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	buf_put(b, s, n);
	if (!b->err)
		b->err = -E2BIG;
}

void buf_pb_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	buf_put(b, tmp, n);
}

void buf_pb_tag(struct buf *b, unsigned int field, unsigned int wire)
{
	buf_pb_varint(b, (uint64_t)field << 3 | wire);
}

void buf_pb_bytes(struct buf *b, unsigned int field, const void *data, size_t n)
{
	buf_pb_tag(b, field, BUF_PB_LEN);
	buf_pb_varint(b, n);
	buf_put(b, data, n);
}

int buf_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
