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

struct json_reader {
	const unsigned char *p;
	size_t len, pos;
	char *err;
	size_t errlen;
};

/* A malformed document: the message names the field, or else the byte it was read at. -EINVAL. */
__attribute__((format(printf, 3, 4))) int json_field_fail(struct json_reader *j, const char *field,
							  const char *fmt, ...);
#define json_fail(j, ...) json_field_fail((j), NULL, __VA_ARGS__)

void json_ws(struct json_reader *j);
int json_peek(struct json_reader *j);
int json_expect(struct json_reader *j, char c);
int json_string(struct json_reader *j, char **out, size_t *outlen);
int json_integer(struct json_reader *j, const char *field, bool is_signed, int64_t *s, uint64_t *u);
int json_literal(struct json_reader *j, const char *word);
int json_skip(struct json_reader *j, int depth);

#endif
