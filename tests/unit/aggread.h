/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * aggread.h - an aggregate's profile as a collector gets it: aggregate_to_pprof, encoded, and read
 * back by the pprof reader (daemon/view/pprofread.c), for the tests of what the aggregate writes.
 */
#ifndef RP_TEST_AGGREAD_H
#define RP_TEST_AGGREAD_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/aggregate.h"
#include "profile/pprof.h"
#include "view/pprofread.h"

/* pp encoded (gzip'd or not), freed, and read back as a reader gets it; free it with
 * pprofread__free. */
static inline struct pprofread *pprof_reread(struct pprof *pp, int gzip)
{
	struct pprofread *r;
	uint8_t *out = NULL;
	size_t len = 0;
	char err[256];

	cr_assert_eq(pprof_encode(pp, gzip, &out, &len), 0);
	pprof__free(pp);
	r = pprofread__new(out, len, "mem", err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	free(out);
	return r;
}

/* a's profile of every service (flags: AGG_PPROF_*; wall: a wall-clock profile); free it with
 * pprofread__free. */
static inline struct pprofread *aggread(struct aggregate *a, unsigned int flags, bool wall)
{
	struct pprof *pp = pprof__new();

	cr_assert_not_null(pp);
	if (wall)
		cr_assert_eq(pprof_set_wall(pp), 0);
	cr_assert_eq(aggregate_to_pprof(a, pp, NULL, flags), 0);
	return pprof_reread(pp, 0);
}

/* The string value of the sample's label key, NULL without one. */
static inline const char *aggread_label(const struct pprofread *r, const struct pprofread_sample *s,
					const char *key)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++)
		if (strcmp(pprofread_str(r, s->labels[i].key), key) == 0)
			return pprofread_str(r, s->labels[i].str);
	return NULL;
}

#endif
