// SPDX-License-Identifier: GPL-2.0-only
/*
 * Code recognition used on stripped Ruby builds: RIP-relative loads and general-dynamic TLS
 * accesses, on hand-assembled bytes and on the host's libruby (checked against readelf); and
 * when a process's maps say its loader has not run yet (a real process stopped at its exec).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "native/elf.h"
#include "ruby/discover.h"

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
		cr_skip_test("missing: %s (make deps installs ruby)", LIBRUBY);
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
		cr_skip_test("missing: %s (make deps installs ruby)", LIBRUBY);
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

/* A program stopped by the kernel at its exec, before its first instruction: its maps hold the
 * program and the dynamic loader only. After the loader's work (this test's own process) they
 * hold libraries: no longer pending. */
Test(discover, loader_pending_at_exec)
{
	struct proc_maps maps = {0};
	int status;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP, "status %#x", status);
	cr_assert_eq(procs_read_maps(pid, &maps), 0);
	cr_assert(discover_loader_pending(&maps));
	procs_maps_free(&maps);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);

	cr_assert_eq(procs_read_maps(getpid(), &maps), 0);
	cr_assert_not(discover_loader_pending(&maps));
	procs_maps_free(&maps);
}

/* The same from maps lines: a static program maps no loader (never pending); anonymous
 * mappings, [vdso] and a memfd do not count as libraries. */
Test(discover, loader_pending_maps)
{
	static const char *const at_exec[] = {
		"5600-5601 r--p 00000000 fe:01 11 /usr/bin/ruby3.1\n",
		"5601-5602 r-xp 00001000 fe:01 11 /usr/bin/ruby3.1\n",
		"7f00-7f01 r--p 00000000 fe:01 12 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n",
		"7f02-7f03 rw-p 00000000 00:00 0 \n",
		"7f04-7f05 rw-s 00000000 00:01 13 /memfd:OTEL_CTX (deleted)\n",
		"7ffd-7ffe rw-p 00000000 00:00 0   [stack]\n",
		"7ffe-7fff r-xp 00000000 00:00 0   [vdso]\n",
	};
	static const char *const libc = "7f10-7f11 r--p 00000000 fe:01 14 /usr/lib/libc.so.6\n";
	struct proc_map v[8];
	struct proc_maps maps = {.v = v};
	size_t i;

	for (i = 0; i < sizeof(at_exec) / sizeof(at_exec[0]); i++)
		cr_assert_eq(procs_parse_maps_line(at_exec[i], &v[maps.n++]), 0, "%s", at_exec[i]);
	cr_assert(discover_loader_pending(&maps));
	cr_assert_eq(procs_parse_maps_line(libc, &v[maps.n++]), 0);
	cr_assert_not(discover_loader_pending(&maps));
	/* static: the program alone */
	free(v[7].path);
	cr_assert_eq(procs_parse_maps_line(at_exec[0], &v[7]), 0);
	maps.v = v + 7;
	maps.n = 1;
	cr_assert_not(discover_loader_pending(&maps));
	for (i = 0; i < 8; i++)
		free(v[i].path);
}

/* gcc -O2 -fPIE, an executable's own __thread read: mov %fs:0xfffffffffffffff8,%rax */
Test(discover, local_exec_tls_access)
{
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa, 0x64, 0x48, 0x8b, 0x04, 0x25, 0xf8, 0xff,
		0xff, 0xff, 0x48, 0x8b, 0x40, 0x30, 0x48, 0x8b, 0x40, 0x10, 0xc3,
	};
	/* mov %fs:0x0,%r12 (the TCB's self pointer); lea -0x40(%r12),%rax is not r12 + disp */
	static const uint8_t r12[] = {0x64, 0x4c, 0x8b, 0x24, 0x25, 0x00, 0x00, 0x00,
				      0x00, 0x49, 0x8b, 0x44, 0x24, 0xc0, 0xc3};
	int64_t off = 0;
	uint64_t slot = 0;

	cr_assert_eq(discover_static_tls(code, sizeof(code), 0x1000, &off, &slot),
		     DISCOVER_TLS_LOCAL_EXEC);
	cr_assert_eq(off, -8);
	/* cut inside the displacement: nothing */
	cr_assert_eq(discover_static_tls(code, 10, 0x1000, &off, &slot), -ENOENT);
	/* a SIB-addressed displacement on r12 is not recognized (rather nothing than a guess) */
	cr_assert_eq(discover_static_tls(r12, sizeof(r12), 0x1000, &off, &slot), -ENOENT);
}

/* gcc -O2 -fPIE, the address of an executable's __thread: mov %fs:0,%rax; add $-0x10,%rax */
Test(discover, local_exec_tls_address)
{
	static const uint8_t add[] = {0x64, 0x48, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x00,
				      0x00, 0x48, 0x05, 0xf0, 0xff, 0xff, 0xff, 0xc3};
	/* mov %fs:0,%rdx; mov -0x18(%rdx),%rax */
	static const uint8_t mov[] = {0x64, 0x48, 0x8b, 0x14, 0x25, 0x00, 0x00,
				      0x00, 0x00, 0x48, 0x8b, 0x42, 0xe8, 0xc3};
	/* mov %fs:0,%rbx; add $-0x20,%rbx */
	static const uint8_t addrbx[] = {0x64, 0x48, 0x8b, 0x1c, 0x25, 0x00, 0x00, 0x00, 0x00,
					 0x48, 0x81, 0xc3, 0xe0, 0xff, 0xff, 0xff, 0xc3};
	int64_t off = 0;
	uint64_t slot = 0;

	cr_assert_eq(discover_static_tls(add, sizeof(add), 0, &off, &slot),
		     DISCOVER_TLS_LOCAL_EXEC);
	cr_assert_eq(off, -16);
	cr_assert_eq(discover_static_tls(mov, sizeof(mov), 0, &off, &slot),
		     DISCOVER_TLS_LOCAL_EXEC);
	cr_assert_eq(off, -24);
	cr_assert_eq(discover_static_tls(addrbx, sizeof(addrbx), 0, &off, &slot),
		     DISCOVER_TLS_LOCAL_EXEC);
	cr_assert_eq(off, -32);
}

/* gcc -O2 -fPIC -ftls-model=initial-exec: mov GOT(%rip),%rax; mov %fs:(%rax),%rax */
Test(discover, initial_exec_tls_access)
{
	static const uint8_t code[] = {0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00, 0x64,
				       0x48, 0x8b, 0x00, 0x48, 0x8b, 0x40, 0x30, 0xc3};
	/* the GOT load into another register than the %fs access uses: not this access */
	static const uint8_t other[] = {0x48, 0x8b, 0x0d, 0x00, 0x01, 0x00, 0x00, 0x64,
					0x48, 0x8b, 0x00, 0x48, 0x8b, 0x40, 0x30, 0xc3};
	int64_t off = 0;
	uint64_t slot = 0;

	cr_assert_eq(discover_static_tls(code, sizeof(code), 0x2000, &off, &slot),
		     DISCOVER_TLS_INITIAL_EXEC);
	cr_assert_eq(slot, 0x2000 + 7 + 0x100);
	cr_assert_eq(discover_static_tls(other, sizeof(other), 0x2000, &off, &slot), -ENOENT);
}

/* The static fixture's own rb_thread_current, against its symbol table and TLS segment. */
Test(discover, fixture_rb_thread_current_local_exec)
{
	char path[4096], cmd[4200 + 64], line[512];
	struct elf_file *ef;
	struct elf_sym fn, ec;
	uint8_t code[256];
	unsigned long long memsz = 0, align = 1, a, b, c, d, e;
	int64_t off = 0;
	uint64_t slot;
	FILE *p;

	snprintf(path, sizeof(path), "%s/fixtures/fakeruby-static",
		 getenv("RP_BUILD") ? getenv("RP_BUILD") : "build");
	ef = elf_file__open(path);
	if (!ef)
		cr_skip_test("missing: %s (make fixtures)", path);
	cr_assert_eq(elf_find_symbol(ef, "rb_thread_current", &fn), 0);
	cr_assert_eq(elf_find_symbol(ef, "ruby_current_ec", &ec), 0);
	cr_assert(fn.size > 0 && fn.size <= sizeof(code));
	cr_assert_eq(elf_read_vaddr(ef, fn.value, code, fn.size), 0);
	cr_assert_eq(discover_static_tls(code, fn.size, fn.value, &off, &slot),
		     DISCOVER_TLS_LOCAL_EXEC);
	/* x86-64 variant II: the TLS segment ends at the thread pointer, aligned */
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, " TLS 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx %*s 0x%llx", &a, &b, &c,
			   &d, &e, &align) == 6)
			memsz = e;
	pclose(p);
	cr_assert_gt(memsz, 0, "no PT_TLS in %s", path);
	cr_assert_eq(off, (int64_t)ec.value - (int64_t)((memsz + align - 1) / align * align));
	elf_file__free(ef);
}
