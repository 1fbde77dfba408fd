/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pbread.h - the protobuf wire format, read by hand: a decoder's position over a message, its
 * fields one by one, sub-messages, and the first error with where it was. The one protobuf
 * reader of the tree: pprof files (pprofread.c) and the OpenTelemetry process context
 * (procctx.c) run on it. Unknown fields are skipped by their wire type; nesting is the
 * caller's (each reader descends only into the messages its schema has).
 */
#ifndef RP_PBREAD_H
#define RP_PBREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { PB_WT_VARINT = 0, PB_WT_I64 = 1, PB_WT_LEN = 2, PB_WT_I32 = 5 };

/* The decoder's position in buf, [pos, end) the message being read, and its first error. */
struct pbread_dec {
	const uint8_t *buf;
	size_t pos, end;
	const char *name; /* what is decoded, the first word of an error message */
	char *err;	  /* "NAME: byte N: ..." (may be NULL) */
	size_t errlen;
	int ret;   /* first error, -errno */
	void *ctx; /* the caller's: what its message readers fill */
};

/* One field of a message: its number, wire type, and value (varint) or payload (length). */
struct pbread_field {
	unsigned int num, wt;
	uint64_t v;
	size_t at;	   /* where its tag starts, for error messages */
	size_t start, end; /* PB_WT_LEN: the payload; otherwise empty */
};

/* Keeps the first error and its message ("NAME: byte N: ..."). */
__attribute__((format(printf, 4, 5))) void pbread_fail_msg(struct pbread_dec *d, size_t at, int err,
							   const char *fmt, ...);
/* Records an error and evaluates to it (a macro: the static analyzer does not follow variadic
 * calls, and must see that every failure path returns non-zero). */
#define pbread_fail(d, at, err, ...) (pbread_fail_msg((d), (at), (err), __VA_ARGS__), (err))

/* A base-128 varint at d->pos (at most 10 bytes). 0 or -EINVAL (recorded). */
int pbread_varint(struct pbread_dec *d, uint64_t *v);
/*
 * Steps d over the next field of the message [d->pos, d->end). False at the message's end or
 * once an error is recorded (d->ret), so that a reader's loop is `while (pbread_next_field(d, &f))`
 * and it returns d->ret. Wire types 3 and 4 (groups) are refused.
 */
bool pbread_next_field(struct pbread_dec *d, struct pbread_field *f);

typedef int (*pbread_fn)(struct pbread_dec *d, void *obj);
/* Runs fn over the sub-message [start, end) and returns to where d was. d->ret. */
int pbread_sub(struct pbread_dec *d, size_t start, size_t end, pbread_fn fn, void *obj);

#endif
