/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * array.h - growing an array of any element type: the one doubling rule (and its overflow
 * checks) for the tree's growable vectors, the frames, nodes, rows and entries that modules keep
 * as a pointer and a capacity beside their own count.
 *
 *	if (array_reserve(v->rows, v->cap, v->n + 1, 64))
 *		return -ENOMEM;
 *	v->rows[v->n++] = row;
 */
#ifndef RP_ARRAY_H
#define RP_ARRAY_H

#include <errno.h>
#include <stddef.h>

/*
 * The array p (of *cap elements of elem bytes) reallocated for at least want elements: the
 * capacity doubles (from first, for an empty array) until want fits, and *cap is set to it.
 * Returns the array (p itself when want already fits), or NULL with p and *cap as they were.
 * The elements past the old capacity are not initialized.
 */
void *array_realloc(void *p, size_t *cap, size_t want, size_t elem, size_t first);

/*
 * For an array indexed by a small number (a CPU's) and as long as its count *n: p grown to
 * exactly want elements when it is shorter, the new ones zeroed, *n set to want. Returns the
 * array, or NULL with p and *n as they were.
 */
void *array_extend_realloc(void *p, size_t *n, size_t want, size_t elem);

/* arr = p when p is not NULL: 0, else -ENOMEM (arr untouched). */
#define array_assign_(arr, p)                                                                      \
	__extension__({                                                                            \
		void *array_p_ = (p);                                                              \
		array_p_ ? ((arr) = array_p_, 0) : -ENOMEM;                                        \
	})

/*
 * array_realloc for an array arr (an lvalue of pointer type, updated) of capacity cap (a size_t
 * lvalue): 0, or -ENOMEM with both as they were. arr and cap are evaluated more than once.
 */
#define array_reserve(arr, cap, want, first)                                                       \
	((want) <= (cap) ? 0                                                                       \
			 : array_assign_(arr, array_realloc((arr), &(cap), (want), sizeof(*(arr)), \
							    (first))))

/* array_extend_realloc the same way: 0, or -ENOMEM with arr and n as they were. */
#define array_extend(arr, n, want)                                                                 \
	((want) <= (n)                                                                             \
		 ? 0                                                                               \
		 : array_assign_(arr, array_extend_realloc((arr), &(n), (want), sizeof(*(arr)))))

#endif
