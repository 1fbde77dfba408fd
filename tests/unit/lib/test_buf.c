// SPDX-License-Identifier: GPL-2.0-only
/*
 * The growable buffer (daemon/lib/buf.c): growth past its first allocation, NUL termination, and the
 * sticky error that later puts do not clear; fixed storage, cuts at UTF-8 characters, insertion,
 * and the protobuf wire format.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"

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

Test(buf, fixed_storage_never_grows)
{
	char mem[8];
	struct buf b;

	buf_init_fixed(&b, mem, sizeof(mem));
	cr_assert_str_eq(mem, "");
	buf_puts(&b, "1234567");
	cr_assert_eq(b.err, 0);
	cr_assert_str_eq(mem, "1234567");
	buf_puts(&b, "8"); /* no room for it and the NUL */
	cr_assert_eq(b.err, -ENOBUFS);
	cr_assert_eq(b.len, 7);
	cr_assert_eq((void *)b.p, (void *)mem, "a fixed buffer moved");
	cr_assert_str_eq(mem, "1234567");
}

Test(buf, cut_keeps_utf8_characters_whole)
{
	char mem[16];
	struct buf b;

	/* "é" is 2 bytes, "€" 3: 4 bytes of room end before the euro sign, not inside it */
	buf_init_fixed(&b, mem, sizeof(mem));
	buf_put_cut(&b, "ab", 2, 6);
	cr_assert_eq(b.err, 0);
	buf_put_cut(&b, "\xc3\xa9\xe2\x82\xac", 5, 6);
	cr_assert_eq(b.err, -E2BIG);
	cr_assert_str_eq(mem, "ab\xc3\xa9");
	buf_put_cut(&b, "z", 1, 6); /* it would fit, but the text was cut before it */
	cr_assert_str_eq(mem, "ab\xc3\xa9");

	/* a cut that falls on a character's start keeps all of what comes before */
	buf_init_fixed(&b, mem, sizeof(mem));
	buf_put_cut(&b, "abc\xc3\xa9", 5, 3);
	cr_assert_eq(b.err, -E2BIG);
	cr_assert_str_eq(mem, "abc");

	/* exactly max fits, growable buffers too */
	{
		struct buf g = {0};

		buf_put_cut(&g, "abcdef", 6, 6);
		cr_assert_eq(g.err, 0);
		cr_assert_str_eq((const char *)g.p, "abcdef");
		free(g.p);
	}
}

Test(buf, insert_moves_what_follows)
{
	struct buf b = {0};

	buf_puts(&b, "ace");
	buf_insert(&b, 1, "b", 1);
	buf_insert(&b, 3, "d", 1);
	buf_insert(&b, 5, "f", 1);
	buf_insert(&b, 0, "_", 1);
	cr_assert_eq(b.err, 0);
	cr_assert_eq(b.len, 7);
	cr_assert_str_eq((const char *)b.p, "_abcdef");
	buf_insert(&b, 8, "x", 1); /* past the end */
	cr_assert_eq(b.err, -EINVAL);
	cr_assert_str_eq((const char *)b.p, "_abcdef");
	free(b.p);
}

Test(buf, protobuf_wire_format)
{
	static const uint8_t want[] = {
		0x00,							    /* 0 */
		0x7f,							    /* 127 */
		0x80, 0x01,						    /* 128 */
		0xac, 0x02,						    /* 300 */
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* UINT64_MAX */
		0x18,							    /* field 3, varint */
		0x0a, 0x02, 'h',  'i',					    /* field 1, "hi" */
	};
	struct buf b = {0};

	buf_pb_varint(&b, 0);
	buf_pb_varint(&b, 127);
	buf_pb_varint(&b, 128);
	buf_pb_varint(&b, 300);
	buf_pb_varint(&b, UINT64_MAX);
	buf_pb_tag(&b, 3, BUF_PB_VARINT);
	buf_pb_bytes(&b, 1, "hi", 2);
	cr_assert_eq(b.err, 0);
	cr_assert_eq(b.len, sizeof(want));
	cr_assert_arr_eq(b.p, want, sizeof(want));
	free(b.p);
}
