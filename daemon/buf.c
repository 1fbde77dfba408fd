// SPDX-License-Identifier: GPL-2.0-only
/*
 * buf.c - a growable byte buffer with a sticky error (buf.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

void buf_put(struct buf *b, const void *data, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return;
	if (n > SIZE_MAX / 4 - b->len) {
		b->err = -ENOMEM;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
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
