// SPDX-License-Identifier: GPL-2.0-only
/*
 * gcstate.c - locating the GC flags. rb_during_gc() is "return vm->objspace->flags.during_gc"
 * in every version; compiled (Debian builds, docs/internals/ruby-internals.md section 8) it reads:
 *   mov X(%rip),%rax   (GOT slot of ruby_current_vm_ptr, <= 3.2)  or  lea X(%rip),%rax (3.3+)
 *   mov (%rax),%rax                                 vm
 *   [test %rax,%rax; je ...]
 *   mov OBJ(%rax),%rax                              vm->objspace (vm->gc.objspace in 3.4+)
 *   movzbl FL(%rax),%eax                            the flags byte holding during_gc (bit 5)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proc/procmem.h"
#include "ruby/gcstate.h"
#include "ruby/rvalue.h"

#define SCAN_BYTES 64

int gcstate_parse_during_gc(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *vm_ref,
			    int *got, uint32_t *objspace_off, uint32_t *flags_off)
{
	int have_ref = 0, have_obj = 0;
	int32_t disp;
	size_t i;

	for (i = 0; i + 4 <= len; i++) {
		if (!have_ref && i + 7 <= len && code[i] == 0x48 &&
		    (code[i + 1] == 0x8b || code[i + 1] == 0x8d) && code[i + 2] == 0x05) {
			memcpy(&disp, code + i + 3, sizeof(disp));
			*vm_ref = vaddr + i + 7 + (int64_t)disp;
			*got = code[i + 1] == 0x8b;
			have_ref = 1;
			i += 6;
		} else if (have_ref && !have_obj && i + 7 <= len && code[i] == 0x48 &&
			   code[i + 1] == 0x8b && code[i + 2] == 0x80) {
			/* mov disp32(%rax),%rax */
			memcpy(&disp, code + i + 3, sizeof(disp));
			if (disp <= 0)
				return -ENOENT;
			*objspace_off = (uint32_t)disp;
			have_obj = 1;
			i += 6;
		} else if (have_obj && code[i] == 0x0f && code[i + 1] == 0xb6 &&
			   code[i + 2] == 0x40) {
			/* movzbl disp8(%rax),%eax */
			*flags_off = code[i + 3];
			return 0;
		}
	}
	return -ENOENT;
}

int gcstate_find(pid_t pid, struct elf_file *ef, uint64_t bias, const struct ruby_offsets *off,
		 struct gcstate *out, char *how, size_t howlen)
{
	uint8_t code[SCAN_BYTES];
	uint64_t vm_ref, vm_ptr, vm, objspace, ractor, ec;
	uint32_t objspace_off, flags_off, flags;
	struct elf_sym fn;
	size_t len;
	int got, err;

	memset(out, 0, sizeof(*out));
	err = elf_find_symbol(ef, "rb_during_gc", &fn);
	if (err) {
		snprintf(how, howlen, "no GC frames: rb_during_gc not found");
		return err;
	}
	len = fn.size && fn.size < sizeof(code) ? fn.size : sizeof(code);
	err = elf_read_vaddr(ef, fn.value, code, len);
	if (!err)
		err = gcstate_parse_during_gc(code, len, fn.value, &vm_ref, &got, &objspace_off,
					      &flags_off);
	if (err) {
		snprintf(how, howlen, "no GC frames: rb_during_gc not recognized");
		return err;
	}
	vm_ptr = bias + vm_ref;
	if (got && procmem_u64(pid, vm_ptr, &vm_ptr))
		return -EFAULT;
	if (procmem_u64(pid, vm_ptr, &vm) || !vm ||
	    procmem_u64(pid, vm + objspace_off, &objspace) || !objspace ||
	    procmem_u32(pid, objspace + flags_off, &flags)) {
		snprintf(how, howlen, "no GC frames: objspace not readable");
		return -EFAULT;
	}
	out->flags = objspace + flags_off;
	out->vm_ptr = vm_ptr;
	/* 3.0+: GC runs on the thread holding the VM lock, the main ractor's running EC. */
	if (off->ractor_running_ec && procmem_u64(pid, vm + 32, &ractor) == 0 &&
	    rvalue_is_heap(ractor) && procmem_u64(pid, ractor + off->ractor_running_ec, &ec) == 0 &&
	    (ec == 0 || rvalue_is_heap(ec)))
		out->running_ec = ractor + off->ractor_running_ec;
	snprintf(how, howlen, "GC flags at objspace+%u (rb_during_gc code, vm->objspace at +%#x)%s",
		 flags_off, objspace_off,
		 out->running_ec || !off->ractor_running_ec ? "" : ", GVL holder not checked");
	return 0;
}
