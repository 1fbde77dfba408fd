/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ehframe.h - the functions a stripped object still tells: the binary search table of its
 * .eh_frame_hdr (one entry per CFI entry, sorted by start), as GNU ld writes it. The object is
 * a profiled process's: the table is read within its section, whatever it holds.
 */
#ifndef RP_EHFRAME_H
#define RP_EHFRAME_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The entry of the table in hdr[0, size) (the section's bytes, at address hdr_addr) that holds
 * addr: *start is its start, *end the next entry's (0 for the last). hdr may be NULL (a section
 * without bytes, SHT_NOBITS, has a size but no data). Only version 1 with
 * eh_frame_ptr pcrel|sdata4, fde_count udata4 and a datarel|sdata4 table is read. Whatever the
 * bytes, a hit has *start <= addr and *end 0 or above addr. 0, or -ENOENT.
 */
int ehframe_hdr_search(const uint8_t *hdr, size_t size, uint64_t hdr_addr, uint64_t addr,
		       uint64_t *start, uint64_t *end);

/* ehframe_hdr_search in the .eh_frame_hdr of mod, addr an address of the process. 0, -ENOENT. */
int ehframe_hdr_lookup(Dwfl_Module *mod, uint64_t addr, uint64_t *start, uint64_t *end);

#endif
