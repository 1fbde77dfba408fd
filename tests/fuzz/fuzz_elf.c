// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the ELF reader (daemon/native/elf.c) on whole files: the daemon opens every mapped object of
 * every Ruby process, and their contents are the process owner's. The input is the file; every
 * query is made with the names the discovery asks for and the fixture's (tests/fixtures/tlsfix.c).
 */
#include <elf.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "native/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {
		"ruby_current_ec", "ruby_global_symbols", "ruby_version",
		"rb_vm_exec",	   "fix_current_ec",	  "fix_version",
		"fix_bss_area",	   "fix_local_counter",	  "",
	};
	struct elf_file *ef;
	struct elf_sym sym;
	struct elf_tls tls;
	char path[64], buf[256];
	uint64_t a, b;
	uint32_t crc;
	size_t i;
	int fd;

	fd = fuzz_memfile(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	ef = elf_file__open(path);
	if (!ef)
		goto cleanup;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!elf_find_symbol(ef, names[i], &sym)) {
			/* reads of a symbol's bytes, as discover.c reads ruby_version */
			(void)elf_read_vaddr(ef, sym.value, buf,
					     sym.size < sizeof(buf) ? sym.size : sizeof(buf));
		}
		(void)elf_find_symbol_in(ef, ELF_SYM_DYNSYM, names[i], &sym);
		(void)elf_find_symbol_in(ef, ELF_SYM_SYMTAB, names[i], &sym);
		(void)elf_dtpmod_slot(ef, names[i], &a);
	}
	(void)elf_dtpmod_slot(ef, NULL, &a);
	(void)elf_has_symtab(ef);
	if (!elf_tls_segment(ef, &tls))
		(void)elf_read_vaddr(ef, tls.vaddr, buf, sizeof(buf));
	(void)elf_read_vaddr(ef, 0, buf, sizeof(buf));
	(void)elf_read_vaddr(ef, UINT64_MAX - 4, buf, sizeof(buf));
	(void)elf_offset_to_vaddr(ef, 0, &a);
	(void)elf_offset_to_vaddr(ef, size / 2, &a);
	(void)elf_build_id(ef, buf, sizeof(buf));
	(void)elf_build_id(ef, buf, 3);
	(void)elf_debuglink(ef, buf, sizeof(buf), &crc);
	if (!elf_section(ef, ".text", &a, &b))
		(void)elf_read_vaddr(ef, a, buf, b < sizeof(buf) ? b : sizeof(buf));
	(void)elf_file_type(ef);
	elf_file__free(ef);
cleanup:
	close(fd);
	return 0;
}
