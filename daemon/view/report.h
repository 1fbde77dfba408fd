/* SPDX-License-Identifier: GPL-2.0-only */
/* report.h - the summary printed at the end of --oneshot: top methods and the counts. */
#ifndef RP_REPORT_H
#define RP_REPORT_H

#include <stdio.h>

#include "profile/aggregate.h"

/* Prints the `top` functions by self samples, with self and total share. 0 or -ENOMEM. */
int report_top(FILE *out, const struct aggregate *a, unsigned int top);

#endif
