/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fixture.h - the path of a fixture that make builds (tests/fixtures/, mk/tests.mk) under the
 * build directory ($RP_BUILD, else "build"), asserted to be there; and this process's memory
 * figures.
 */
#ifndef RP_TEST_FIXTURE_H
#define RP_TEST_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A field of this process's /proc/self/status in KiB ("VmHWM:" the peak RSS, "VmRSS:" now). */
static inline long status_kib(const char *field)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return v;
}

#endif
