// SPDX-License-Identifier: GPL-2.0-only
/* ehframe.c - function extents from the .eh_frame_hdr search table. */
#include <errno.h>
#include <gelf.h>
#include <string.h>

#include "native/ehframe.h"

/* The start of entry i: a datarel sdata4, relative to the section's start. */
static uint64_t entry_start(const uint8_t *hdr, uint64_t hdr_addr, size_t i)
{
	int32_t loc;

	memcpy(&loc, hdr + 12 + i * 8, sizeof(loc));
	return hdr_addr + (uint64_t)(int64_t)loc;
}

int ehframe_hdr_search(const uint8_t *hdr, size_t size, uint64_t hdr_addr, uint64_t addr,
		       uint64_t *start, uint64_t *end)
{
	size_t lo, hi, mid, count;
	uint32_t n;

	/* version 1; eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4 */
	if (!hdr || size < 12 || hdr[0] != 1 || hdr[1] != 0x1b || hdr[2] != 0x03 || hdr[3] != 0x3b)
		return -ENOENT;
	memcpy(&n, hdr + 8, sizeof(n));
	count = n;
	if (count > (size - 12) / 8)
		return -ENOENT;
	/* the first entry above addr */
	lo = 0;
	hi = count;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (entry_start(hdr, hdr_addr, mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	*start = entry_start(hdr, hdr_addr, lo - 1);
	*end = lo < count ? entry_start(hdr, hdr_addr, lo) : 0;
	return 0;
}

int ehframe_hdr_lookup(Dwfl_Module *mod, uint64_t addr, uint64_t *start, uint64_t *end)
{
	Elf_Data *data = NULL;
	Dwarf_Addr bias = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr, hdr = {0};
	size_t shstrndx;
	const char *name;
	Elf *elf;

	elf = dwfl_module_getelf(mod, &bias);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr))
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && strcmp(name, ".eh_frame_hdr") == 0) {
			data = elf_getdata(scn, NULL);
			hdr = shdr;
			break;
		}
	}
	if (!data)
		return -ENOENT;
	return ehframe_hdr_search(data->d_buf, data->d_size, hdr.sh_addr + bias, addr, start, end);
}
