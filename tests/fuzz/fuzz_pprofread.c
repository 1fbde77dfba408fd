// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the pprof reader (daemon/view/pprofread.c), which `rubyprofd report` runs on files from a
 * spool directory or a ticket: the input is a profile, gzip'd or not. Whatever it accepts must be
 * consistent: every reference resolves, every string index is inside the table.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "view/pprofread.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pprofread_profile *p;
	const struct pprofread_location *l;
	const struct pprofread_sample *s;
	struct pprofread *r;
	char err[256];
	size_t i, j, k, sum = 0;

	err[0] = 'x';
	r = pprofread__new(data, size, "fuzz", err, sizeof(err));
	if (!r) {
		if (strncmp(err, "fuzz: ", 6) != 0 || strnlen(err, sizeof(err)) == sizeof(err))
			abort(); /* every error names the input and is terminated */
		return 0;
	}
	p = pprofread_profile(r);
	for (i = 0; i < p->nsamples; i++) {
		s = &p->samples[i];
		for (j = 0; j < s->nlocations; j++) {
			l = pprofread_location(r, s->location_ids[j]);
			if (!l)
				abort();
			for (k = 0; k < l->nlines; k++) {
				if (l->lines[k].function_id &&
				    !pprofread_function(r, l->lines[k].function_id))
					abort();
			}
		}
		for (j = 0; j < s->nlabels; j++)
			sum += strlen(p->strings[s->labels[j].key]) +
			       strlen(p->strings[s->labels[j].str]);
		for (j = 0; j < p->nsample_types; j++)
			sum += (size_t)s->values[j];
	}
	for (i = 0; i < p->nfunctions; i++)
		sum += strlen(p->strings[p->functions[i].name]) +
		       strlen(p->strings[p->functions[i].filename]);
	pprofread__free(r);
	/* the strings and values were read (ASan checks each access); keep the reads */
	__asm__ volatile("" : : "r"(sum));
	return 0;
}
