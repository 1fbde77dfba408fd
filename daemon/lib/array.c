// SPDX-License-Identifier: GPL-2.0-only
/*
 * array.c - growing an array of any element type (array.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"

/* p reallocated to n elements of elem bytes, or NULL (p as it was). */
static void *resize(void *p, size_t n, size_t elem)
{
	if (!elem || n > SIZE_MAX / elem)
		return NULL;
	return realloc(p, n * elem);
}

void *array_realloc(void *p, size_t *cap, size_t want, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : (first ? first : 1);

	if (want <= *cap)
		return p;
	while (ncap < want) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	p = resize(p, ncap, elem);
	if (p)
		*cap = ncap;
	return p;
}

void *array_extend_realloc(void *p, size_t *n, size_t want, size_t elem)
{
	char *np;

	if (want <= *n)
		return p;
	np = resize(p, want, elem);
	if (!np)
		return NULL;
	memset(np + *n * elem, 0, (want - *n) * elem);
	*n = want;
	return np;
}
