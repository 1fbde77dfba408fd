// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bounded line reader (daemon/lib/lines.c): lines without their newline, numbered, a last
 * line without one, a NUL byte kept in the length, and the bound on the whole file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/lines.h"

/* text in a new file, opened for l to read at most max bytes (the name is gone at once) */
static void open_text(struct lines *l, const char *text, size_t len, uint64_t max)
{
	char path[] = "/tmp/rp-lines-XXXXXX";
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	cr_assert_eq(lines_open(l, path, max), 0);
	unlink(path);
}

Test(lines, lines_numbered_without_newlines)
{
	static const char text[] = "one\n\nthree\nla\0st";
	struct lines l;

	open_text(&l, text, sizeof(text) - 1, 1024);
	cr_assert_eq(lines_next(&l), 1);
	cr_assert_str_eq(l.line, "one");
	cr_assert_eq(l.no, 1);
	cr_assert_eq(lines_next(&l), 1);
	cr_assert_str_eq(l.line, "");
	cr_assert_eq(lines_next(&l), 1);
	cr_assert_str_eq(l.line, "three");
	cr_assert_eq(lines_next(&l), 1);
	cr_assert_eq(l.len, 5);
	cr_assert_str_eq(l.line, "la");
	cr_assert_eq(l.no, 4);
	cr_assert_eq(lines_next(&l), 0);
	cr_assert_eq(l.read, sizeof(text) - 1);
	lines_close(&l);
}

Test(lines, the_line_past_the_bound_is_refused)
{
	static const char text[] = "0123456789\n0123456789\n0123456789\n";
	struct lines l;

	open_text(&l, text, sizeof(text) - 1, 22);
	cr_assert_eq(lines_next(&l), 1);
	cr_assert_eq(lines_next(&l), 1);
	cr_assert_eq(lines_next(&l), -EFBIG);
	cr_assert_eq(l.no, 2);
	lines_close(&l);
}

Test(lines, a_missing_file_is_open_s_error)
{
	struct lines l;

	cr_assert_eq(lines_open(&l, "/nonexistent/rp-lines", 1024), -ENOENT);
	lines_close(&l);
}
