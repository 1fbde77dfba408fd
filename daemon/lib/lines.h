/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lines.h - the one line reader for text files: /proc's (maps, mountinfo, status), the kernel's
 * symbols and the configuration file. A whole file is bounded (a target chooses how many
 * mappings and mounts it has, and how long their paths are): past the bound nothing more is read.
 *
 *	struct lines l;
 *
 *	if (lines_open(&l, path, BOUND) == 0) {
 *		while ((r = lines_next(&l)) > 0)
 *			parse(l.line);
 *		lines_close(&l);
 *	}
 */
#ifndef RP_LINES_H
#define RP_LINES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct lines {
	FILE *f;
	char *line;	 /* the current line without its newline, NUL-terminated */
	size_t len;	 /* its length: a NUL byte inside it makes strlen(line) shorter */
	size_t cap;	 /* of line (getline's) */
	uint64_t read;	 /* bytes read so far, newlines included */
	uint64_t max;	 /* the bound on read */
	unsigned int no; /* the current line's number, from 1 */
};

/* Opens path (O_CLOEXEC) to read at most max bytes. 0 or -errno; *l is ready for lines_close. */
int lines_open(struct lines *l, const char *path, uint64_t max);
/*
 * The next line into l->line: 1, 0 at the end, -EFBIG when the file holds more than max bytes
 * (the line that crossed the bound is not given), -errno (-EIO) when reading fails.
 */
int lines_next(struct lines *l);
/* Closes the file and frees the line; accepts a struct lines that lines_open failed. */
void lines_close(struct lines *l);

#endif
