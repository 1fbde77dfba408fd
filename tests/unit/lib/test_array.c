// SPDX-License-Identifier: GPL-2.0-only
/*
 * The growable array helper (daemon/lib/array.c): growth by doubling from the first capacity,
 * the elements kept across a move, overflow refused with the array as it was, and the zeroed
 * extension of a per-CPU array.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/array.h"

struct wide {
	uint64_t a, b, c;
};

Test(array, doubles_from_first_and_keeps_the_elements)
{
	struct wide *v = NULL;
	size_t cap = 0, n;

	cr_assert_eq(array_reserve(v, cap, 1, 16), 0);
	cr_assert_eq(cap, 16);
	for (n = 0; n < 1000; n++) {
		cr_assert_eq(array_reserve(v, cap, n + 1, 16), 0);
		v[n] = (struct wide){n, n * 2, n * 3};
	}
	cr_assert_eq(cap, 1024);
	for (n = 0; n < 1000; n++)
		cr_assert(v[n].a == n && v[n].b == 2 * n && v[n].c == 3 * n);
	/* room already there: nothing moves */
	cr_assert_eq(array_reserve(v, cap, 10, 16), 0);
	cr_assert_eq(cap, 1024);
	/* a want past twice the capacity is met at once */
	cr_assert_eq(array_reserve(v, cap, 5000, 16), 0);
	cr_assert_eq(cap, 8192);
	free(v);
}

Test(array, overflow_is_refused_and_the_array_kept)
{
	uint32_t *v = NULL;
	size_t cap = 0;

	cr_assert_eq(array_reserve(v, cap, 4, 4), 0);
	v[3] = 7;
	cr_assert_eq(array_reserve(v, cap, SIZE_MAX / 2, 4), -ENOMEM);
	cr_assert_eq(array_reserve(v, cap, SIZE_MAX, 4), -ENOMEM);
	cr_assert_eq(cap, 4);
	cr_assert_eq(v[3], 7);
	free(v);
}

Test(array, extend_zeroes_the_new_elements)
{
	struct wide *v = NULL;
	size_t n = 0;

	cr_assert_eq(array_extend(v, n, 3), 0);
	cr_assert_eq(n, 3);
	v[2].a = 5;
	cr_assert_eq(array_extend(v, n, 2), 0); /* shorter: nothing */
	cr_assert_eq(n, 3);
	cr_assert_eq(array_extend(v, n, 64), 0);
	cr_assert_eq(n, 64);
	cr_assert_eq(v[2].a, 5);
	for (size_t i = 3; i < 64; i++)
		cr_assert(v[i].a == 0 && v[i].b == 0 && v[i].c == 0);
	cr_assert_eq(array_extend(v, n, SIZE_MAX), -ENOMEM);
	cr_assert_eq(n, 64);
	free(v);
}
