// SPDX-License-Identifier: GPL-2.0-only
/* coldpart.c - a function's cold part (GCC's function.cold) from its jumps and CFI. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "native/coldpart.h"

/* x86-64 DWARF register number of rsp (System V psABI, figure 3.36). */
#define COLDPART_DWARF_RSP 7

/* The CFA rule at an address, as one register + offset (DW_OP_bregN). */
struct cfa_rule {
	uint8_t atom;
	int64_t offset;
};

static int cfa_at(Dwarf_CFI *cfi, Dwarf_Addr addr, struct cfa_rule *out)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Op *ops;
	size_t nops;
	int err = -ENOENT;

	if (dwarf_cfi_addrframe(cfi, addr, &frame) != 0)
		return -ENOENT;
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1)
		goto cleanup;
	out->atom = ops[0].atom;
	out->offset = (int64_t)ops[0].number;
	err = 0;
cleanup:
	free(frame);
	return err;
}

/* The bytes of [addr, addr + len) (module addresses) in an executable section of elf, or NULL. */
static const uint8_t *code_of(Elf *elf, GElf_Addr addr, size_t len)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS ||
		    !(shdr.sh_flags & SHF_EXECINSTR))
			continue;
		if (addr < shdr.sh_addr || addr - shdr.sh_addr >= shdr.sh_size)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || addr - shdr.sh_addr > data->d_size ||
		    len > data->d_size - (addr - shdr.sh_addr))
			return NULL;
		return (const uint8_t *)data->d_buf + (addr - shdr.sh_addr);
	}
	return NULL;
}

int coldpart_find(Dwfl_Module *mod, uint64_t start, uint64_t end, uint64_t *in_cold)
{
	Dwarf_Addr bias = 0;
	const uint8_t *code;
	Elf *elf;

	if (!mod || end <= start)
		return -EINVAL;
	elf = dwfl_module_getelf(mod, &bias);
	if (!elf || start < bias)
		return -ENOENT;
	code = code_of(elf, start - bias, end - start);
	if (!code)
		return -ENOENT;
	return coldpart_find_code(mod, start, end, code, in_cold);
}

int coldpart_find_code(Dwfl_Module *mod, uint64_t start, uint64_t end, const uint8_t *code,
		       uint64_t *in_cold)
{
	struct cfa_rule at_jump, there;
	Dwarf_Addr cbias = 0;
	uint64_t target, site;
	Dwarf_CFI *cfi;
	size_t i, len, ilen;
	int32_t disp;

	if (!mod || !code || end <= start)
		return -EINVAL;
	cfi = dwfl_module_eh_cfi(mod, &cbias);
	if (!cfi)
		return -ENOENT;
	len = end - start;
	/*
	 * Every jmp rel32 (e9) and jcc rel32 (0f 80..8f) that leaves the function. The scan is of
	 * bytes, not decoded instructions: a match inside another instruction would have to land in
	 * a CFI entry with exactly the CFA rule of its own address to count, and a real function
	 * entry (a tail call) never does, its rule is sp + 8.
	 */
	for (i = 0; i + 5 <= len; i++) {
		if (code[i] == 0xe9) {
			ilen = 5;
		} else if (code[i] == 0x0f && i + 6 <= len && (code[i + 1] & 0xf0) == 0x80) {
			ilen = 6;
		} else {
			continue;
		}
		memcpy(&disp, code + i + ilen - 4, sizeof(disp));
		site = start + i;
		target = site + ilen + (int64_t)disp;
		if (target - start < len)
			continue;
		if (cfa_at(cfi, site - cbias, &at_jump) || cfa_at(cfi, target - cbias, &there))
			continue;
		if (at_jump.atom != there.atom || at_jump.offset != there.offset)
			continue;
		if (there.atom == DW_OP_breg0 + COLDPART_DWARF_RSP && there.offset == 8)
			continue;
		*in_cold = target;
		return 0;
	}
	return -ENOENT;
}
