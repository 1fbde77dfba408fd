// SPDX-License-Identifier: GPL-2.0-only
/*
 * lines.c - the bounded line reader (lines.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/types.h>

#include "lib/lines.h"

int lines_open(struct lines *l, const char *path, uint64_t max)
{
	*l = (struct lines){.max = max};
	l->f = fopen(path, "re");
	return l->f ? 0 : -errno;
}

int lines_next(struct lines *l)
{
	ssize_t n;

	errno = 0;
	n = getline(&l->line, &l->cap, l->f);
	if (n < 0) {
		if (ferror(l->f))
			return errno ? -errno : -EIO;
		return 0;
	}
	l->read += (uint64_t)n;
	if (l->read > l->max)
		return -EFBIG;
	l->len = (size_t)n;
	if (l->len && l->line[l->len - 1] == '\n')
		l->line[--l->len] = '\0';
	l->no++;
	return 1;
}

void lines_close(struct lines *l)
{
	if (l->f)
		fclose(l->f);
	free(l->line);
	*l = (struct lines){0};
}
