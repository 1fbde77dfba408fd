/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fixture.h - the path of a fixture that make builds (tests/fixtures/, mk/tests.mk) under the
 * build directory ($RP_BUILD, else "build"), asserted to be there.
 */
#ifndef RP_TEST_FIXTURE_H
#define RP_TEST_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void fixture_path(char *buf, size_t len, const char *name)
{
	const char *dir = getenv("RP_BUILD");
	int n;

	if (!dir || !*dir)
		dir = "build";
	n = snprintf(buf, len, "%s/fixtures/%s", dir, name);
	cr_assert(n > 0 && (size_t)n < len);
	cr_assert(access(buf, R_OK) == 0, "fixture \"%s\" missing: run make %s first", buf, buf);
}

#endif
