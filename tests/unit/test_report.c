// SPDX-License-Identifier: GPL-2.0-only
/* The summary: one row per function, whatever the places it is called from. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/aggregate.h"
#include "view/report.h"

static unsigned int count_rows(const char *text, const char *needle)
{
	unsigned int n = 0;
	const char *p;

	for (p = strstr(text, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/*
 * A C function has the path and line of its caller (as in Ruby's backtraces): called from two
 * files, it is still one function, one row (the README's example showed Kernel#require twice).
 * A Ruby method of the same name in two files is two functions.
 */
Test(report, a_c_function_called_from_two_files_is_one_row)
{
	static const int64_t one[1] = {1};
	struct aggregate_proc_info info = {.pid = 1, .nspid = 1, .service = "app"};
	struct aggregate *a = aggregate__new(1, 100);
	struct aggregate_proc *p;
	uint32_t f[2];
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	cr_assert_not_null(a);
	p = aggregate_proc__new(a, &info);
	cr_assert_not_null(p);
	f[0] = aggregate_frame_id(p, AGG_FRAME_CFUNC, "Kernel#require", "/app/a.rb", 0, 3);
	f[1] = aggregate_frame_id(p, AGG_FRAME_RUBY, "<main>", "/app/a.rb", 1, 3);
	cr_assert_eq(aggregate_add(a, p, 1, "ruby", f, 2, one), 0);
	f[0] = aggregate_frame_id(p, AGG_FRAME_CFUNC, "Kernel#require", "/app/b.rb", 0, 7);
	f[1] = aggregate_frame_id(p, AGG_FRAME_RUBY, "<main>", "/app/b.rb", 1, 7);
	cr_assert_eq(aggregate_add(a, p, 1, "ruby", f, 2, one), 0);
	out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cr_assert_eq(report_top(out, a, 20), 0);
	fclose(out);
	cr_assert_eq(count_rows(text, "Kernel#require [c]"), 1, "%s", text);
	cr_assert_eq(count_rows(text, "<main>"), 2, "%s", text);
	cr_assert(strstr(text, "       2  Kernel#require [c]\n"), "both samples on one row: %s",
		  text);
	free(text);
	aggregate__free(a);
}
