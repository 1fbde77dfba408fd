/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * buf.h - a growable byte buffer with a sticky error, always NUL-terminated (so that text built
 * in it is a C string): what the spool's sidecars, the collectors' requests, the pprof encoding
 * and the application names' templates are built in.
 * Start from `struct buf b = {0}`; after any number of buf_put()s, b.err is 0 or -errno (and
 * nothing past the first failure was added); free(b.p) releases it.
 */
#ifndef RP_BUF_H
#define RP_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *p;
	size_t len, cap;
	int err;
	bool fixed; /* over the caller's storage (buf_init_fixed): never grows, never freed */
};

/*
 * A buffer over the caller's mem[size] (size >= 1), for bounded text without an allocation: it
 * starts as "" and never grows; a put past its end adds nothing and sets -ENOBUFS.
 */
void buf_init_fixed(struct buf *b, void *mem, size_t size);
void buf_put(struct buf *b, const void *data, size_t n);
void buf_puts(struct buf *b, const char *s);
/* n more bytes at the end for the caller to fill (a NUL after them), or NULL and b->err. */
void *buf_put_space(struct buf *b, size_t n);
/* Formats at most 255 bytes (numbers and short words; longer output sets -EOVERFLOW). */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Inserts data[0..n) at offset at (at most b->len), moving what follows up; -EINVAL past len. */
void buf_insert(struct buf *b, size_t at, const void *data, size_t n);
/*
 * Appends what fits of the text s[0..n) with b->len staying at most max. A cut never splits a
 * UTF-8 character (it backs off to the start of one) and sets -E2BIG, so that later puts add
 * nothing and the text ends where it was cut.
 */
void buf_put_cut(struct buf *b, const char *s, size_t n, size_t max);

/* The value of one hexadecimal digit (either case), -1 for any other character. */
int buf_hexval(unsigned char c);

/* Protobuf's wire format: a base-128 varint, a field's tag, a length-delimited field. */
enum { BUF_PB_VARINT = 0, BUF_PB_LEN = 2 };
void buf_pb_varint(struct buf *b, uint64_t v);
void buf_pb_tag(struct buf *b, unsigned int field, unsigned int wire);
void buf_pb_bytes(struct buf *b, unsigned int field, const void *data, size_t n);

#endif
