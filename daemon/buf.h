/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * buf.h - a growable byte buffer with a sticky error, always NUL-terminated (so that text built
 * in it is a C string): what the spool's sidecars and the collectors' requests are built in.
 * Start from `struct buf b = {0}`; after any number of buf_put()s, b.err is 0 or -ENOMEM (and
 * nothing past the first failure was added); free(b.p) releases it.
 */
#ifndef RP_BUF_H
#define RP_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

void buf_put(struct buf *b, const void *data, size_t n);
void buf_puts(struct buf *b, const char *s);
/* Formats at most 255 bytes (numbers and short words; longer output sets -EOVERFLOW). */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
