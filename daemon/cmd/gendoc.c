// SPDX-License-Identifier: GPL-2.0-only
/*
 * gendoc.c - the parts of the tree generated from the tables (keys: config_keys.c; metrics:
 * metrics_table.h), and how a document's generated part is put in its place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/config_doc.h"
#include "cmd/config_keys.h"
#include "cmd/gendoc.h"
#include "cmd/metrics_table.h"

const struct gendoc gendocs[] = {
	{"docs/configuration.md", "<!-- BEGIN keys -->", "<!-- END keys -->", config_doc_markdown},
	{"docs/rubyprofd.8", ".\\\" BEGIN keys", ".\\\" END keys", config_doc_man},
	{"systemd/rubyprofd.conf", NULL, NULL, config_doc_conf},
	{"docs/usage.md", "<!-- BEGIN usage -->", "<!-- END usage -->", config_doc_usage},
	{"docs/metrics.md", "<!-- BEGIN metrics -->", "<!-- END metrics -->", metrics_table_doc},
	{NULL, NULL, NULL, NULL},
};

/* The whole of f, NUL-terminated (malloc'd), or NULL. */
static char *slurp(FILE *f, size_t *len)
{
	char *buf = NULL, *nb;
	size_t cap = 0, n = 0, r;

	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 16384;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

char *gendoc_splice(const struct gendoc *d, const char *root)
{
	char path[4096], *old = NULL, *gen = NULL, *out = NULL, *b, *e;
	size_t oldlen = 0, genlen = 0;
	FILE *f, *mem;

	mem = open_memstream(&gen, &genlen);
	if (!mem)
		return NULL;
	d->gen(mem);
	if (fclose(mem))
		goto cleanup;
	if (!d->begin) {
		out = gen;
		gen = NULL;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%s", root, d->path);
	f = fopen(path, "re");
	if (!f)
		goto cleanup;
	old = slurp(f, &oldlen);
	fclose(f);
	if (!old)
		goto cleanup;
	/* each marker on a line of its own; what lies between them is replaced */
	b = strstr(old, d->begin);
	e = b ? strstr(b, d->end) : NULL;
	if (!b || !e || (b > old && b[-1] != '\n') || (e > old && e[-1] != '\n')) {
		errno = EINVAL;
		goto cleanup;
	}
	b += strlen(d->begin);
	if (*b == '\n')
		b++;
	out = malloc((size_t)(b - old) + genlen + strlen(e) + 1);
	if (out) {
		memcpy(out, old, (size_t)(b - old));
		memcpy(out + (b - old), gen, genlen);
		memcpy(out + (b - old) + genlen, e, strlen(e) + 1);
	}
cleanup:
	free(old);
	free(gen);
	return out;
}
