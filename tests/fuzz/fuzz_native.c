// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes what the native unwinder reads of an object a process maps, without symbols: the
 * .eh_frame_hdr search table (daemon/native/ehframe.c) and the cold-part finder (daemon/native/coldpart.c:
 * the function's jumps, and libdw's CFI of its .eh_frame). The input is the object, reported to
 * a Dwfl of its own as an offline module (a memfd). The table is walked entry by entry through
 * ehframe_hdr_lookup, each function's cold part looked for as unwinder.c does; the input's bytes
 * are also taken for a table and searched, and where they are sorted the answer must be a
 * plain scan's.
 */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>

#include "dwfl_offline.h"
#include "fuzz_common.h"
#include "native/coldpart.h"
#include "native/ehframe.h"

/* Functions of the table followed at most (a libruby has about 12 000). */
#define FUZZ_MAX_FUNCS 64

/* A hit of either lookup must hold addr: start at or below it, end 0 or above it. */
static void check_hit(uint64_t addr, uint64_t start, uint64_t end)
{
	if (start > addr || (end && end <= addr)) {
		fprintf(stderr, "fuzz_native: %#llx found in [%#llx, %#llx)\n",
			(unsigned long long)addr, (unsigned long long)start,
			(unsigned long long)end);
		abort();
	}
}

static int32_t entry_loc(const uint8_t *t, size_t i)
{
	int32_t loc;

	memcpy(&loc, t + 12 + i * 8, sizeof(loc));
	return loc;
}

/* The input as a table at address 0: searched, and checked against a scan when sorted. */
static void search_raw(const uint8_t *data, size_t size)
{
	uint64_t addr, start, end, want_start = 0, want_end = 0;
	size_t i, count = 0, probe;
	bool sorted = true, found = false;
	uint32_t n;

	if (size >= 12) {
		memcpy(&n, data + 8, sizeof(n));
		count = n <= (size - 12) / 8 ? n : 0;
	}
	for (i = 1; i < count; i++)
		sorted &= (uint64_t)(int64_t)entry_loc(data, i - 1) <=
			  (uint64_t)(int64_t)entry_loc(data, i);
	for (probe = 0; probe < 8 && probe * 8 + 8 <= size; probe++) {
		memcpy(&addr, data + size - 8 - probe * 8, sizeof(addr));
		if (ehframe_hdr_search(data, size, 0, addr, &start, &end) != 0) {
			if (sorted && count && (uint64_t)(int64_t)entry_loc(data, 0) <= addr &&
			    data[0] == 1 && !memcmp(data + 1, "\x1b\x03\x3b", 3))
				abort(); /* the first entry holds it */
			continue;
		}
		check_hit(addr, start, end);
		if (!sorted)
			continue;
		for (i = 0, found = false; i < count; i++) {
			if ((uint64_t)(int64_t)entry_loc(data, i) > addr) {
				want_end = (uint64_t)(int64_t)entry_loc(data, i);
				break;
			}
			want_start = (uint64_t)(int64_t)entry_loc(data, i);
			want_end = 0;
			found = true;
		}
		if (!found || start != want_start || end != want_end)
			abort();
	}
}

/* The first entry's start (an address of the module), read here from the section; low if none. */
static uint64_t first_entry(Dwfl_Module *mod, uint64_t low)
{
	Dwarf_Addr bias = 0;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr shdr;
	const char *name;
	size_t shstrndx;
	Elf *elf = dwfl_module_getelf(mod, &bias);

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return low;
	while ((scn = elf_nextscn(elf, scn))) {
		name = gelf_getshdr(scn, &shdr) ? elf_strptr(elf, shstrndx, shdr.sh_name) : NULL;
		if (!name || strcmp(name, ".eh_frame_hdr"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size < 20)
			return low;
		return shdr.sh_addr + bias + (uint64_t)(int64_t)entry_loc(data->d_buf, 0);
	}
	return low;
}

/* Each function of the module's table, in order, and its cold part. */
static void walk_module(Dwfl_Module *mod, uint64_t low, uint64_t high)
{
	uint64_t addr = first_entry(mod, low), start, end, at, s, e;
	int i;

	for (i = 0; i < FUZZ_MAX_FUNCS; i++) {
		if (ehframe_hdr_lookup(mod, addr, &start, &end) != 0)
			break;
		check_hit(addr, start, end);
		if (end > start && coldpart_find(mod, start, end, &at) == 0) {
			if (at >= start && at < end)
				abort(); /* a cold part is outside its function */
			if (ehframe_hdr_lookup(mod, at, &s, &e) == 0)
				check_hit(at, s, e);
		}
		if (!end)
			break;
		addr = end;
	}
	(void)coldpart_find(mod, low, high, &at);
	(void)coldpart_find(mod, high, low, &at);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Dwarf_Addr low = 0, high = 0;
	Dwfl_Module *mod;
	char path[64];
	Dwfl *dwfl;
	int fd;

	search_raw(data, size);
	fd = fuzz_memfile(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	/* no debug file is looked for: the input is the whole object */
	dwfl = offline_open("fuzz", path, &mod);
	if (!dwfl)
		goto cleanup;
	if (mod && dwfl_module_info(mod, NULL, &low, &high, NULL, NULL, NULL, NULL))
		walk_module(mod, low, high);
	dwfl_end(dwfl);
cleanup:
	close(fd);
	return 0;
}
