/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * report.h - the tables of the summary printed at the end of --oneshot: the top functions, and
 * with clock = wall each thread's time per state (the counters after them are oneshot.c's, read
 * from the metric table).
 */
#ifndef RP_REPORT_H
#define RP_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "profile/aggregate.h"

/* Prints the `top` functions by self samples, with self and total share. 0 or -ENOMEM. */
int report_top(FILE *out, const struct aggregate *a, unsigned int top);

/* Whether report_top_of counts a stack. */
typedef bool (*report_keep_fn)(void *ctx, const struct aggregate_stack *st);
/*
 * report_top over the stacks that keep accepts (NULL: all), their shares of those stacks'
 * samples, each stack without its drop_root frames at the root end (a view's group frame).
 */
int report_top_of(FILE *out, const struct aggregate *a, unsigned int top, report_keep_fn keep,
		  void *ctx, size_t drop_root);
/* Prints each Ruby thread's wall time and its share per state, then each state's time and its
 * biggest leaf functions (clock = wall; stacks without a thread state are left out). */
void report_wall(FILE *f, const struct aggregate *a);

#endif
