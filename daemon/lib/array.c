// SPDX-License-Identifier: GPL-2.0-only
/*
 * array.c - growing an array of any element type (array.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"

/* The array at *arrp reallocated to n elements of elem bytes; the new pointer, or NULL (the
 * array as it was). arrp points to a T *, whatever T is: its value travels through memcpy. */
static void *resize(void *arrp, size_t n, size_t elem)
{
	void *p, *np;

	if (!elem || n > SIZE_MAX / elem)
		return NULL;
	memcpy(&p, arrp, sizeof(p));
	np = realloc(p, n * elem);
	if (np)
		memcpy(arrp, &np, sizeof(np));
	return np;
}

int array_reserve_raw(void *arrp, size_t *cap, size_t want, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : (first ? first : 1);

	if (want <= *cap)
		return 0;
	while (ncap < want) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (!resize(arrp, ncap, elem))
		return -ENOMEM;
	*cap = ncap;
	return 0;
}

int array_extend_raw(void *arrp, size_t *n, size_t want, size_t elem)
{
	char *p;

	if (want <= *n)
		return 0;
	p = resize(arrp, want, elem);
	if (!p)
		return -ENOMEM;
	memset(p + *n * elem, 0, (want - *n) * elem);
	*n = want;
	return 0;
}
