/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * json.h - a small strict JSON reader over a byte range (RFC 8259): the caller walks the
 * document with these steps; every string comes out as valid UTF-8 (escapes decoded, a \u0000
 * refused), every integer range-checked. Errors fill the reader's err buffer with the field or
 * the byte they were found at, and return -EINVAL.
 */
#ifndef RP_JSON_H
#define RP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jr {
	const unsigned char *p;
	size_t len, pos;
	char *err;
	size_t errlen;
};

/* A malformed document: the message names the field, or else the byte it was read at. -EINVAL. */
__attribute__((format(printf, 3, 4))) int jr_field_fail(struct jr *j, const char *field,
							const char *fmt, ...);
#define jr_fail(j, ...) jr_field_fail((j), NULL, __VA_ARGS__)

void jr_ws(struct jr *j);
int jr_peek(struct jr *j);
int jr_expect(struct jr *j, char c);
int jr_string(struct jr *j, char **out, size_t *outlen);
int jr_integer(struct jr *j, const char *field, bool is_signed, int64_t *s, uint64_t *u);
int jr_literal(struct jr *j, const char *word);
int jr_skip(struct jr *j, int depth);

#endif
