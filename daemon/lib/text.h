/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * text.h - text that leaves the daemon: what a profiled process controls (its names, paths,
 * labels, versions) is made valid UTF-8 and free of control characters before it reaches a
 * profile, a terminal, a log line, JSON or HTML. The one UTF-8 reader of the tree, and its one
 * reader of decimal numbers.
 */
#ifndef RP_TEXT_H
#define RP_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Length of the well-formed UTF-8 sequence at p, of which n bytes may be read (Unicode's table
 * 3-7: no overlongs, no surrogates, nothing past U+10FFFF, no truncated sequence): 1 to 4, or 0
 * when it is not one. An ASCII byte (a control character too) is 1.
 */
size_t text_utf8_len(const unsigned char *p, size_t n);

/* Whether s (NUL-terminated) is well-formed UTF-8. */
bool text_utf8_valid(const char *s);

/* Whether text_clean would leave s as it is. */
bool text_is_clean(const char *s);

/*
 * s itself when it is clean, else its first size - 1 bytes copied into buf (size > 0) and
 * cleaned: for text that must be compared, hashed or kept as it will be shown.
 */
const char *text_clean_copy(const char *s, char *buf, size_t size);

/*
 * In place: every byte that is not part of well-formed UTF-8 and every control character (C0,
 * DEL, and C1 as U+0080..U+009F) becomes '?', so that s can be printed to a terminal, written
 * into one log line or a profile's string table. Returns how many bytes were replaced.
 */
size_t text_clean(char *s);

/*
 * key as a label name every collector takes as is: Prometheus' classic [a-zA-Z_][a-zA-Z0-9_]*,
 * which Parca requires, Pyroscope's push API sanitizes to, and Pyroscope's /ingest allows (an
 * OpenTelemetry attribute's `http.route` is `http_route`). Other bytes become '_', a leading
 * digit gets a '_' before it. Written into buf (size > 0), cut to size - 1 bytes; its length.
 */
size_t text_label_name(const char *key, char *buf, size_t size);

/*
 * A decimal number, digits only (no sign, space or suffix: strtoul's leniency refused), within
 * [min, max]. 0, or -EINVAL with *out untouched.
 */
int text_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* A sink for text_json: len bytes of s. */
typedef void (*text_put_fn)(void *ctx, const char *s, size_t len);

/*
 * s as a JSON string, quotes included: '"' and '\' escaped, control characters as \n, \t, \r or
 * \u00XX, and every byte that is not part of well-formed UTF-8 as \ufffd, so that the output is
 * valid JSON and valid UTF-8 whatever s holds. With html, '<', '>' and '&' are \u00XX too (safe
 * inside a <script> element).
 */
void text_json(const char *s, bool html, text_put_fn put, void *ctx);

#endif
