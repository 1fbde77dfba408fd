/* SPDX-License-Identifier: GPL-2.0-only */
/* offsets_row.h - the index in offsets_all of the row that starts at a Ruby version. */
#ifndef RP_TEST_OFFSETS_ROW_H
#define RP_TEST_OFFSETS_ROW_H

#include <criterion/criterion.h>
#include <string.h>

#include "ruby/offsets.h"

/* The row whose first version is first ("3.4.0"); the test fails without one. */
static inline unsigned int offsets_row(const char *first)
{
	const struct ruby_offsets *rows;
	unsigned int nrows = 0, row;

	rows = offsets_all(&nrows);
	for (row = 0; row < nrows; row++)
		if (strcmp(rows[row].first, first) == 0)
			return row;
	cr_assert_fail("no offsets row %s", first);
	return 0;
}

#endif
