/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * span.h - a string slice: argv entries and cgroup paths are not NUL-terminated where they lie
 * (the service naming's parts: appname.c, appscript.c, apptitle.c).
 */
#ifndef RP_SPAN_H
#define RP_SPAN_H

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct span {
	const char *p;
	size_t len;
};

static inline bool span_eq(struct span s, const char *lit)
{
	size_t n = strlen(lit);

	return s.len == n && memcmp(s.p, lit, n) == 0;
}

static inline bool span_has_suffix(struct span s, const char *suffix)
{
	size_t n = strlen(suffix);

	return s.len >= n && memcmp(s.p + s.len - n, suffix, n) == 0;
}

/* s without the white space around it. */
static inline struct span span_trim(struct span s)
{
	while (s.len && isspace((unsigned char)s.p[0])) {
		s.p++;
		s.len--;
	}
	while (s.len && isspace((unsigned char)s.p[s.len - 1]))
		s.len--;
	return s;
}

/* s into name (cut at size - 1 bytes); false for an empty s. */
static inline bool span_copy(struct span s, char *name, size_t size)
{
	if (!s.len)
		return false;
	if (s.len >= size)
		s.len = size - 1;
	memcpy(name, s.p, s.len);
	name[s.len] = '\0';
	return true;
}

#endif
