/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tmpdir.h - a test's temporary directory: tmpdir_make in a suite's .init makes /tmp/NAME.XXXXXX
 * in tmpdir, tmpdir_remove in its .fini removes it and all it holds (never through a link)
 * and frees the paths tmpdir_path made (a test need not free them).
 */
#ifndef RP_TEST_TMPDIR_H
#define RP_TEST_TMPDIR_H

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];
static char *tmpdir_paths[256];
static size_t tmpdir_npaths;

static inline void tmpdir_make(const char *name)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/%s.XXXXXX", name);
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

/* tmpdir/NAME, kept until tmpdir_remove (whatever points to it may until the test's end). */
static inline char *tmpdir_path(const char *name)
{
	char *p;

	cr_assert_lt(tmpdir_npaths, sizeof(tmpdir_paths) / sizeof(tmpdir_paths[0]));
	cr_assert_neq(asprintf(&p, "%s/%s", tmpdir, name), -1);
	tmpdir_paths[tmpdir_npaths++] = p;
	return p;
}

static inline int tmpdir_rm_entry(const char *path, const struct stat *sb, int flag,
				  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline void tmpdir_remove(void)
{
	nftw(tmpdir, tmpdir_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	while (tmpdir_npaths)
		free(tmpdir_paths[--tmpdir_npaths]);
}

#endif
