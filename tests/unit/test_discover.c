// SPDX-License-Identifier: GPL-2.0-only
/*
 * Code recognition used on stripped Ruby builds: RIP-relative loads and general-dynamic TLS
 * accesses, on hand-assembled bytes and on the host's libruby (checked against readelf).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discover.h"
#include "elf.h"

Test(discover, rip_relative_targets)
{
	/* lea 0x10(%rip),%rax; mov -0x20(%rip),%rdx; ret; mov 0x100(%rip),%r8 (REX.WR) */
	static const uint8_t code[] = {
		0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x15, 0xe0,
		0xff, 0xff, 0xff, 0xc3, 0x4c, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00,
	};
	uint64_t t[4];

	cr_assert_eq(discover_rip_targets(code, sizeof(code), 0x1000, t, 4), 3);
	cr_assert_eq(t[0], 0x1000 + 7 + 0x10);
	cr_assert_eq(t[1], 0x1000 + 14 - 0x20);
	cr_assert_eq(t[2], 0x1000 + 22 + 0x100);
	/* max is honoured */
	cr_assert_eq(discover_rip_targets(code, sizeof(code), 0x1000, t, 1), 1);
	/* nothing in unrelated code */
	cr_assert_eq(discover_rip_targets(code + 14, 1, 0, t, 4), 0);
}

Test(discover, general_dynamic_tls_access)
{
	/* endbr64; data16 lea 0x2ff5(%rip),%rdi; data16 data16 rex.W call __tls_get_addr */
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa, 0x66, 0x48, 0x8d, 0x3d, 0xf5, 0x2f,
		0x00, 0x00, 0x66, 0x66, 0x48, 0xe8, 0x00, 0x00, 0x00, 0x00,
	};
	uint64_t ti;

	cr_assert_eq(discover_gd_tls_index(code, sizeof(code), 0x4000, &ti), 0);
	cr_assert_eq(ti, 0x4000 + 12 + 0x2ff5);
	cr_assert_neq(discover_gd_tls_index(code, 8, 0x4000, &ti), 0);
}

#define LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"

/* readelf -rW: whether off is the offset of an R_X86_64_DTPMOD64 relocation */
static int readelf_is_dtpmod(const char *path, uint64_t want)
{
	char cmd[512], line[512];
	int found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -rW '%s'", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		char type[64] = "";
		unsigned long long o, info;
		int n = 0;

		if (sscanf(line, "%llx %llx %63s %n", &o, &info, type, &n) >= 3 &&
		    strcmp(type, "R_X86_64_DTPMOD64") == 0 && o == want)
			found = 1;
	}
	pclose(p);
	return found;
}

Test(discover, libruby_rb_thread_current_tls_index)
{
	struct elf_file *ef;
	struct elf_sym fn;
	uint8_t code[256];
	uint64_t ti;

	ef = elf_file__open(LIBRUBY);
	if (!ef)
		cr_skip_test("%s is not installed", LIBRUBY);
	cr_assert_eq(elf_find_symbol(ef, "rb_thread_current", &fn), 0);
	cr_assert_eq(elf_read_vaddr(ef, fn.value, code, sizeof(code)), 0);
	cr_assert_eq(discover_gd_tls_index(code, sizeof(code), fn.value, &ti), 0);
	/* the tls_index is the GOT pair whose first slot the loader fills with the module id */
	cr_assert(readelf_is_dtpmod(LIBRUBY, ti), "tls_index %#lx is no DTPMOD64 slot",
		  (unsigned long)ti);
	elf_file__free(ef);
}

Test(discover, libruby_rb_sym_all_symbols_reads_data)
{
	struct elf_file *ef;
	struct elf_sym fn;
	uint64_t t[8], data, size, bss, bss_size;
	uint8_t code[256];
	size_t n, i;

	ef = elf_file__open(LIBRUBY);
	if (!ef)
		cr_skip_test("%s is not installed", LIBRUBY);
	cr_assert_eq(elf_find_symbol(ef, "rb_sym_all_symbols", &fn), 0);
	cr_assert_eq(elf_read_vaddr(ef, fn.value, code, sizeof(code)), 0);
	n = discover_rip_targets(code, fn.size < sizeof(code) ? fn.size : sizeof(code), fn.value, t,
				 8);
	cr_assert_gt(n, 0);
	/* the symbol table is writable data (.data or .bss) */
	cr_assert_eq(elf_section(ef, ".data", &data, &size), 0);
	cr_assert_eq(elf_section(ef, ".bss", &bss, &bss_size), 0);
	for (i = 0; i < n; i++) {
		if ((t[i] >= data && t[i] < data + size) || (t[i] >= bss && t[i] < bss + bss_size))
			break;
	}
	cr_assert_lt(i, n, "no RIP-relative access to writable data in rb_sym_all_symbols");
	elf_file__free(ef);
}

Test(discover, maps_line_parsing)
{
	struct proc_map m;

	cr_assert_eq(procs_parse_maps_line("7f1c2a400000-7f1c2a46c000 r--p 00000000 fe:01 1234 "
					   "  /usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2\n",
					   &m),
		     0);
	cr_assert_eq(m.start, 0x7f1c2a400000ULL);
	cr_assert_eq(m.end, 0x7f1c2a46c000ULL);
	cr_assert_eq(m.offset, 0);
	cr_assert_str_eq(m.perms, "r--p");
	cr_assert_str_eq(m.path, "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1.2");
	cr_assert_not(m.deleted);
	free(m.path);

	cr_assert_eq(
		procs_parse_maps_line("55d0-56d0 r-xp 00002000 00:2a 99 /tmp/a b (deleted)\n", &m),
		0);
	cr_assert_eq(m.offset, 0x2000);
	cr_assert_str_eq(m.path, "/tmp/a b");
	cr_assert(m.deleted);
	free(m.path);

	cr_assert_eq(procs_parse_maps_line("7ffd-7ffe rw-p 00000000 00:00 0   [stack]\n", &m), 0);
	cr_assert_null(m.path);
	cr_assert_neq(procs_parse_maps_line("garbage\n", &m), 0);
}
