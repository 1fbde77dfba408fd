/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * toptable.h - the tables of the summary printed at the end of --oneshot: the top functions, and
 * with clock = wall each thread's time per state (the counters after them are oneshot.c's, read
 * from the metric table).
 */
#ifndef RP_TOPTABLE_H
#define RP_TOPTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile/aggregate.h"

/* Prints the `top` functions by self samples, with self and total share. 0 or -ENOMEM. */
int toptable_write(FILE *out, const struct aggregate *a, unsigned int top);

/* Whether toptable_write_of counts a stack. */
typedef bool (*toptable_keep_fn)(void *ctx, const struct aggregate_stack *st);
/*
 * toptable_write over the stacks that keep accepts (NULL: all), their shares of those stacks'
 * samples, each stack without its drop_root frames at the root end (a view's group frame).
 */
int toptable_write_of(FILE *out, const struct aggregate *a, unsigned int top, toptable_keep_fn keep,
		      void *ctx, size_t drop_root);
/* Prints each Ruby thread's wall time and its share per state, then each state's time and its
 * biggest leaf functions (clock = wall; stacks without a thread state are left out). */
void toptable_wall(FILE *f, const struct aggregate *a);

#endif
