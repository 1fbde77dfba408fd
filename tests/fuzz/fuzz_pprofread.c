// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the pprof reader (daemon/view/pprofread.c), which `rubyprofd report` runs on files from a
 * spool directory or a ticket: the input is a profile, gzip'd or not. Whatever it accepts must be
 * consistent: every reference resolves, every string index is inside the table. Then the view is
 * built from it, grouped (--by label:KEY with the first sample's first label key, or --by
 * frame:REGEX, by the input's last byte), and every writer runs; the groups (the root's
 * children) must add up to the view's total.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "view/pprofread.h"
#include "view/view.h"

/* The view of r grouped, each writer into memory. */
static void view_grouped(const struct pprofread *r, uint8_t how)
{
	static const char *const formats[] = {"top", "collapsed", "flamegraph", "svg",
					      "speedscope"};
	const struct pprofread_profile *p = pprofread_profile(r);
	struct view_filter f = {.want_top = true};
	char err[256], *text = NULL, key[64];
	size_t i, len = 0;
	struct view *v;
	FILE *out;

	if (how & 1) {
		f.group_by = VIEW_BY_FRAME;
		f.group_arg = how & 2 ? "a|e" : "^[A-Z]";
	} else {
		f.group_by = VIEW_BY_LABEL;
		snprintf(key, sizeof(key), "%s",
			 p->nsamples && p->samples[0].nlabels
				 ? p->strings[p->samples[0].labels[0].key]
				 : "http.route");
		f.group_arg = key;
	}
	f.by_line = how & 4;
	v = view__new(&f, err, sizeof(err));
	if (!v)
		abort();
	if (view_add_profile(v, r, "fuzz", err, sizeof(err)) < 0 || view_finish(v)) {
		view__free(v);
		return; /* out of memory: the bounds allow more than the fuzzer's limit */
	}
	/* every sample in one group: the root's children (the groups, "(other groups)" merged)
	 * add up to the total, and each is a group frame */
	{
		const struct view_node *n;
		uint64_t sum = 0;
		uint32_t c;

		for (c = view_node(v, 0)->child; c; c = n->sibling) {
			n = view_node(v, c);
			if (view_frame(v, n->frame)->kind != VIEW_GROUP)
				abort();
			sum += n->total;
		}
		if (sum != view_total(v))
			abort();
	}
	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		out = open_memstream(&text, &len);
		if (!out)
			abort();
		if (view_write(v, formats[i], out, "fuzz", 5))
			abort();
		fclose(out);
		free(text);
		text = NULL;
	}
	view__free(v);
}

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
	if (size)
		view_grouped(r, data[size - 1]);
	pprofread__free(r);
	/* the strings and values were read (ASan checks each access); keep the reads */
	__asm__ volatile("" : : "r"(sum));
	return 0;
}
