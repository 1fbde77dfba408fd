// SPDX-License-Identifier: GPL-2.0-only
/*
 * The .eh_frame_hdr search table (daemon/native/ehframe.c): hand-made tables, and a real object's
 * (tests/fixtures/coldfix.c, built stripped) checked against its .dynsym and its cold part.
 */
#include <criterion/criterion.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../fixture.h"
#include "../../fuzz/dwfl_offline.h"
#include "native/coldpart.h"
#include "native/ehframe.h"

/* A version 1 header (pcrel sdata4, udata4, datarel sdata4) and n entries {loc, fde}. */
static size_t table(uint8_t *buf, const int32_t *locs, uint32_t n)
{
	uint32_t i;

	memcpy(buf, "\x01\x1b\x03\x3b", 4);
	memset(buf + 4, 0, 4);
	memcpy(buf + 8, &n, 4);
	for (i = 0; i < n; i++) {
		memcpy(buf + 12 + i * 8, &locs[i], 4);
		memset(buf + 16 + i * 8, 0, 4);
	}
	return 12 + n * 8;
}

Test(ehframe, search)
{
	static const int32_t locs[] = {-0x100, 0x40, 0x90};
	uint8_t buf[64];
	size_t size = table(buf, locs, 3);
	uint64_t s = 0, e = 0;

	cr_assert_eq(ehframe_hdr_search(buf, size, 0x1000, 0xf00, &s, &e), 0);
	cr_assert_eq(s, 0xf00);
	cr_assert_eq(e, 0x1040);
	cr_assert_eq(ehframe_hdr_search(buf, size, 0x1000, 0x108f, &s, &e), 0);
	cr_assert_eq(s, 0x1040);
	cr_assert_eq(e, 0x1090);
	cr_assert_eq(ehframe_hdr_search(buf, size, 0x1000, 0x5000, &s, &e), 0);
	cr_assert_eq(s, 0x1090);
	cr_assert_eq(e, 0, "the last entry has no end");
	cr_assert_eq(ehframe_hdr_search(buf, size, 0x1000, 0xeff, &s, &e), -ENOENT);
	/* a count past the section, another encoding */
	cr_assert_eq(ehframe_hdr_search(buf, size - 1, 0x1000, 0x1040, &s, &e), -ENOENT);
	buf[3] = 0x1b;
	cr_assert_eq(ehframe_hdr_search(buf, size, 0x1000, 0x1040, &s, &e), -ENOENT);
	/* a section without bytes (SHT_NOBITS: libelf's d_buf is NULL, d_size its size) was read
	 * at NULL; found by fuzz_native */
	cr_assert_eq(ehframe_hdr_search(NULL, size, 0x1000, 0x1040, &s, &e), -ENOENT);
}

/* coldfix_split's extent from the table, and its cold part outside it, before coldfix_work. */
Test(ehframe, object_with_a_cold_part)
{
	uint64_t s = 0, e = 0, at = 0, split, work, split_size = 0;
	Dwfl_Module *mod;
	GElf_Sym sym;
	char path[4096];
	int i, n;
	Dwfl *dwfl;

	fixture_path(path, sizeof(path), "libcoldfix.so");
	dwfl = offline_open("coldfix", path, &mod);
	cr_assert_not_null(dwfl);
	cr_assert_not_null(mod);
	split = work = 0;
	n = dwfl_module_getsymtab(mod);
	for (i = 1; i < n; i++) {
		const char *name = dwfl_module_getsym(mod, i, &sym, NULL);

		if (name && !strcmp(name, "coldfix_split")) {
			split = sym.st_value;
			split_size = sym.st_size;
		}
		if (name && !strcmp(name, "coldfix_work"))
			work = sym.st_value;
	}
	cr_assert(split && work, "coldfix_split and coldfix_work in .dynsym");
	cr_assert_eq(ehframe_hdr_lookup(mod, split + 3, &s, &e), 0);
	cr_assert_eq(s, split, "the entry starts at the symbol");
	cr_assert_geq(e, split + split_size, "the next entry (coldfix_last's) ends it");
	if (coldpart_find(mod, s, e, &at) != 0)
		cr_skip_test("the compiler made no cold part of coldfix_split");
	cr_assert(at < work, "the cold part (%#llx) lies before coldfix_work (%#llx)",
		  (unsigned long long)at, (unsigned long long)work);
	cr_assert_eq(ehframe_hdr_lookup(mod, at, &s, &e), 0);
	cr_assert(s <= at && at < e);
	dwfl_end(dwfl);
}
