// SPDX-License-Identifier: GPL-2.0-only
/*
 * gendocs.c - writes the parts of the tree generated from rubyprofd's tables (daemon/cmd/gendoc.c
 * lists them: the key table's docs/configuration.md table, the OPTIONS of docs/rubyprofd.8 and
 * systemd/rubyprofd.conf; the metric table's docs/metrics.md). `make gen` runs it;
 * tests/unit/cmd/test_config_doc.c fails when what is committed differs from what it would write.
 *
 *   gendocs [ROOT]      ROOT: the tree's top (default: .)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/gendoc.h"

int main(int argc, char **argv)
{
	const char *root = argc > 1 ? argv[1] : ".";
	const struct gendoc *d;
	char path[4096];
	char *text;
	FILE *f;

	for (d = gendocs; d->path; d++) {
		snprintf(path, sizeof(path), "%s/%s", root, d->path);
		text = gendoc_splice(d, root);
		if (!text) {
			fprintf(stderr, "gendocs: %s: %s\n", path, strerror(errno));
			return 1;
		}
		f = fopen(path, "we");
		if (!f || fputs(text, f) == EOF || fclose(f)) {
			fprintf(stderr, "gendocs: cannot write %s: %s\n", path, strerror(errno));
			free(text);
			return 1;
		}
		printf("gendocs: %s\n", path);
		free(text);
	}
	return 0;
}
