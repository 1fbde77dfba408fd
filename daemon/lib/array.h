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

#include <stddef.h>

/*
 * Makes room for at least want elements of elem bytes in the array that *arrp points to (a
 * pointer to any object type) and whose capacity, in elements, is *cap: the capacity doubles
 * (from first, for an empty array) until want fits. 0, or -ENOMEM with the array and *cap as they
 * were. The elements past the old capacity are not initialized.
 */
int array_reserve_raw(void *arrp, size_t *cap, size_t want, size_t elem, size_t first);

/* array_reserve_raw for an array arr (an lvalue of pointer type) and its capacity cap (size_t). */
#define array_reserve(arr, cap, want, first)                                                       \
	array_reserve_raw(&(arr), &(cap), (want), sizeof(*(arr)), (first))

/*
 * For an array indexed by a small number (a CPU's), as long as its count *n: grows it to exactly
 * want elements when it is shorter, the new ones zeroed, and sets *n to want. 0, or -ENOMEM with
 * the array and *n as they were.
 */
int array_extend_raw(void *arrp, size_t *n, size_t want, size_t elem);

#define array_extend(arr, n, want) array_extend_raw(&(arr), &(n), (want), sizeof(*(arr)))

#endif
