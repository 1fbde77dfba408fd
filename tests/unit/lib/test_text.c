// SPDX-License-Identifier: GPL-2.0-only
/* text.c: the UTF-8 reader, the cleaner of target-controlled text and the JSON string writer. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lib/text.h"
#include "profile/aggregate.h"

Test(text, utf8_len_follows_unicode_table_3_7)
{
	/* well-formed: ASCII, 2, 3, 4 bytes, the edges of each range; each one whole character */
	static const char *const good[] = {"a",
					   "\xc2\x80",
					   "\xe0\xa0\x80",
					   "\xed\x9f\xbf",
					   "\xf0\x90\x80\x80",
					   "\xf4\x8f\xbf\xbf"};
	/* overlongs, surrogates, past U+10FFFF, lone continuation, empty: no character */
	static const char *const bad[] = {"\xc0\xaf",	      "\xe0\x80\xaf", "\xed\xa0\x80",
					  "\xf4\x90\x80\x80", "\x80",	      ""};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_expect_eq(text_utf8_len((const unsigned char *)good[i], strlen(good[i])),
			     strlen(good[i]), "good[%zu]", i);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(text_utf8_len((const unsigned char *)bad[i], strlen(bad[i])), 0,
			     "bad[%zu]", i);
	/* truncated: 2 bytes of a 3-byte character */
	cr_expect_eq(text_utf8_len((const unsigned char *)"\xe2\x82\xac", 2), 0);
	cr_expect(text_utf8_valid("caf\xc3\xa9 \xe2\x82\xac"));
	cr_expect_not(text_utf8_valid("caf\xc3"));
}

Test(text, clean_replaces_invalid_bytes_and_controls)
{
	char s[] = "a\x1b[31mred\x1b[0m\nnext\xff\xc2\x9b"
		   "caf\xc3\xa9\x7f";
	char copy[sizeof(s)];

	cr_expect_not(text_is_clean(s));
	memcpy(copy, s, sizeof(s));
	/* ESC, ESC, \n, 0xff, C1 CSI (2 bytes), DEL */
	cr_expect_eq(text_clean(copy), 7);
	cr_expect_str_eq(copy, "a?[31mred?[0m?next???caf\xc3\xa9?");
	cr_expect(text_is_clean(copy));
	cr_expect(text_is_clean("Object#run < caf\xc3\xa9 \xe2\x82\xac"));
}

Test(text, clean_copy_leaves_clean_text_alone_and_bounds_the_rest)
{
	char buf[8];
	const char *ok = "rp-brief";

	cr_expect_eq(text_clean_copy(ok, buf, sizeof(buf)), ok);
	/* cut inside a sequence: the partial one is replaced too */
	cr_expect_str_eq(text_clean_copy("\nabcde\xc3\xa9xyz", buf, sizeof(buf)), "?abcde?");
}

static void put(void *ctx, const char *s, size_t len)
{
	strncat(ctx, s, len);
}

Test(text, json_is_valid_json_and_utf8)
{
	char out[256] = "";

	text_json("q\"b\\n\nt\tx\x01\xff\xc3\xa9</s>", false, put, out);
	cr_expect_str_eq(out, "\"q\\\"b\\\\n\\nt\\tx\\u0001\\ufffd\xc3\xa9</s>\"");
	out[0] = '\0';
	text_json("</script>&", true, put, out);
	cr_expect_str_eq(out, "\"\\u003c/script\\u003e\\u0026\"");
}

static void last_stack(void *ctx, const struct aggregate_stack *st)
{
	*(struct aggregate_stack *)ctx = *st;
}

/* The profile's labels and names: an escape sequence in a thread name, invalid UTF-8 in a
 * function name reach the profile cleaned, and two raw names that clean alike are one. */
Test(text, profile_names_and_thread_labels_are_cleaned)
{
	struct aggregate *a = aggregate__new(2, 64);
	struct aggregate_proc_info info = {
		.pid = 42, .service = "svc\n", .ruby_version = "3.1\x1b"};
	struct aggregate_thread th = {
		.tid = 43, .name = "w\x1b]0;x\x07", .ruby_thread_name = "n\xff"};
	struct aggregate_stack st = {0};
	const struct aggregate_frame *fr;
	struct aggregate_proc *p;
	int64_t one[2] = {1, 1};
	uint32_t f1, f2;

	cr_assert_not_null(a);
	p = aggregate_proc__new(a, &info);
	cr_assert_not_null(p);
	f1 = aggregate_frame_id(p, AGG_FRAME_RUBY, "Object#\x1b[2Jwipe", "/app/\xfe.rb", 1, 2);
	f2 = aggregate_frame_id(p, AGG_FRAME_RUBY, "Object#\x1b[2Jwipe", "/app/\xfe.rb", 1, 2);
	cr_assert_neq(f1, 0);
	cr_expect_eq(f1, f2);
	fr = aggregate_frame_get(p, f1);
	cr_assert_not_null(fr);
	cr_expect_str_eq(fr->name, "Object#?[2Jwipe");
	cr_expect_str_eq(fr->file, "/app/?.rb");
	cr_assert_eq(aggregate_add_thread(a, p, &th, &f1, 1, one), 0);
	cr_assert_eq(aggregate_add_thread(a, p, &th, &f1, 1, one), 0);
	aggregate_foreach(a, last_stack, &st);
	cr_expect_str_eq(st.thread_name, "w?]0;x?");
	cr_expect_str_eq(st.ruby_thread_name, "n?");
	cr_expect_eq(st.values[0], 2, "one stack for the two samples");
	aggregate__free(a);
}

Test(text, parse_u64_takes_digits_only)
{
	uint64_t v = 7;

	cr_expect_eq(text_parse_u64("42", 1, 100, &v), 0);
	cr_expect_eq(v, 42);
	cr_expect_eq(text_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	cr_expect_eq(v, UINT64_MAX);
	v = 7;
	/* what strtoul would take: spaces, signs, hex, an empty string, overflow, out of range */
	cr_expect_neq(text_parse_u64(" 42", 0, 100, &v), 0);
	cr_expect_neq(text_parse_u64("+42", 0, 100, &v), 0);
	cr_expect_neq(text_parse_u64("-1", 0, UINT64_MAX, &v), 0);
	cr_expect_neq(text_parse_u64("0x10", 0, 100, &v), 0);
	cr_expect_neq(text_parse_u64("", 0, 100, &v), 0);
	cr_expect_neq(text_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), 0);
	cr_expect_neq(text_parse_u64("101", 0, 100, &v), 0);
	cr_expect_neq(text_parse_u64("0", 1, 100, &v), 0);
	cr_expect_eq(v, 7, "untouched on failure");
}
