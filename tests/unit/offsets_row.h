/* SPDX-License-Identifier: GPL-2.0-only */
/* offsets_row.h - the index in offsets_all of the row that starts at a Ruby version. */
#ifndef RP_TEST_OFFSETS_ROW_H
#define RP_TEST_OFFSETS_ROW_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdio.h>
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

/*
 * Whether the end-to-end suite runs a real Ruby of this row's minor version (README, "Ruby
 * versions": Debian's 2.7.4, 3.1.2, 3.3.8, 3.4.11). tests/fuzz/fakemem.h lays its objects out
 * from the very row that the readers then read them with, so on the other rows (2.6, 3.0, 3.2,
 * 4.0: no such Ruby here, their rows from Ruby's headers only) a unit test over the fake shows
 * that the readers and the row agree with each other, nothing about whether the row is that
 * Ruby's layout: self-consistency only. The tests say so in their names and messages.
 */
static inline bool offsets_row_tested(const struct ruby_offsets *o)
{
	static const char *const tested[] = {"2.7.", "3.1.", "3.3.", "3.4."};
	size_t i;

	for (i = 0; i < sizeof(tested) / sizeof(tested[0]); i++)
		if (strncmp(o->first, tested[i], strlen(tested[i])) == 0)
			return true;
	return false;
}

/*
 * The row at *row, or the first after it, that the end-to-end suite tests (tested) or that it
 * does not (!tested), *row its index; NULL past the last row. A loop over one kind of rows:
 * for (row = 0; (o = offsets_row_next(tested, &row)); row++).
 */
static inline const struct ruby_offsets *offsets_row_next(bool tested, unsigned int *row)
{
	const struct ruby_offsets *rows;
	unsigned int nrows = 0;

	rows = offsets_all(&nrows);
	for (; *row < nrows; (*row)++)
		if (offsets_row_tested(&rows[*row]) == tested)
			return &rows[*row];
	return NULL;
}

/* The row's first version for a message, "3.2.0 (self-consistency only)" on an untested one. */
static inline const char *offsets_row_what(const struct ruby_offsets *o)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "%s%s", o->first,
		 offsets_row_tested(o) ? "" : " (self-consistency only)");
	return buf;
}

#endif
