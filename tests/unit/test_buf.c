// SPDX-License-Identifier: GPL-2.0-only
/*
 * The growable buffer (daemon/buf.c): growth past its first allocation, NUL termination, and the
 * sticky error that later puts do not clear.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

Test(buf, grows_and_stays_a_string)
{
	struct buf b = {0};
	char chunk[100];
	int i;

	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < 100; i++)
		buf_put(&b, chunk, sizeof(chunk));
	buf_printf(&b, "%d-%s", 42, "end");
	cr_assert_eq(b.err, 0);
	cr_assert_eq(b.len, 100 * sizeof(chunk) + 6);
	cr_assert_eq(strlen((const char *)b.p), b.len);
	cr_assert_str_eq((const char *)b.p + b.len - 6, "42-end");
	free(b.p);
}

Test(buf, errors_are_sticky)
{
	struct buf b = {0};
	char big[300];

	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	buf_puts(&b, "ok");
	buf_printf(&b, "%s", big); /* past what buf_printf formats */
	cr_assert_eq(b.err, -EOVERFLOW);
	buf_puts(&b, "more");
	cr_assert_eq(b.len, 2, "a put after the error added something");
	cr_assert_str_eq((const char *)b.p, "ok");
	free(b.p);
}
