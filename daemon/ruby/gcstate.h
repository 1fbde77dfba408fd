/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gcstate.h - finds where a Ruby process keeps its garbage-collector state, so that the sampler
 * can tell a sample taken during GC: the objspace flags word (during_gc, mode), and the main
 * ractor's running EC (which thread holds the VM lock, 3.0+).
 */
#ifndef RP_GCSTATE_H
#define RP_GCSTATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "native/elf.h"
#include "ruby/offsets.h"

struct gcstate {
	uint64_t flags;	     /* address of the objspace flags word */
	uint64_t running_ec; /* address of the main ractor's running EC, 0: unknown or < 3.0 */
	uint64_t vm_ptr;     /* address of ruby_current_vm_ptr (symbolizer_set_vm) */
};

/*
 * From ruby_current_vm_ptr (.dynsym/.symtab up to 3.2) or the code of the exported
 * rb_during_gc(), which loads vm, vm->objspace and the flags byte; checked on the live process.
 * 0, or -ENOENT/-errno with nothing found; `how` says which path was taken.
 */
int gcstate_find(pid_t pid, struct elf_file *ef, uint64_t bias, const struct ruby_offsets *off,
		 struct gcstate *out, char *how, size_t howlen);

/* Parses rb_during_gc's code: the vm pointer's location (a lea target, or a GOT slot when
 * *got is set), the vm->objspace offset and the flags byte offset. 0 or -ENOENT. Exposed for
 * tests. */
int gcstate_parse_during_gc(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *vm_ref,
			    int *got, uint32_t *objspace_off, uint32_t *flags_off);

#endif
