/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * coldpart.h - the cold part of a function: the unlikely blocks that GCC moves out of its body
 * into .text.unlikely (`rb_vm_exec.cold`), with a CFI entry of their own. Found without symbols
 * (a stripped build keeps no name for it), from the function's code and its CFI.
 */
#ifndef RP_COLDPART_H
#define RP_COLDPART_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

/*
 * An address inside the cold part of the function [start, end) of mod (addresses of the process,
 * as start and end are): where a direct jump of the function (jmp or jcc with a 32-bit
 * displacement) lands outside it, in code whose CFA rule is the one at the jump and not a
 * function entry's (sp + 8): the jump carries the function's frame there. The part's extent is
 * its CFI entry's (.eh_frame_hdr). 0, -ENOENT (none: no such jump, no CFI, the code not in the
 * file), -EINVAL.
 */
int coldpart_find(Dwfl_Module *mod, uint64_t start, uint64_t end, uint64_t *in_cold);
/* The same with the function's bytes given (code: end - start bytes, read from the process: the
 * unwinder's images hold no code, elfcache.h). */
int coldpart_find_code(Dwfl_Module *mod, uint64_t start, uint64_t end, const uint8_t *code,
		       uint64_t *in_cold);

#endif
