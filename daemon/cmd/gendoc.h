/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gendoc.h - the documents of the tree that hold text generated from rubyprofd's tables (the key
 * table, the metric table). scripts/gendocs.c (make gen) writes them; the unit tests fail when a
 * committed one differs.
 */
#ifndef RP_GENDOC_H
#define RP_GENDOC_H

#include <stdio.h>

/* A document: the whole file (begin NULL), or the lines between a line holding `begin` and one
 * holding `end`. */
struct gendoc {
	const char *path; /* relative to the tree's top */
	const char *begin, *end;
	void (*gen)(FILE *out);
};

/* Every one, ending with a NULL path. */
extern const struct gendoc gendocs[];

/*
 * What document d under root (the tree's top) must hold: its text with the generated part as
 * the tables give it now. malloc'd, or NULL with errno (the file's, or EINVAL: a marker is
 * missing).
 */
char *gendoc_splice(const struct gendoc *d, const char *root);

#endif
