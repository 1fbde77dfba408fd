// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_elf.c - unit tests of daemon/native/elf.c.
 *
 * Expectations come from binutils' readelf (run through popen and parsed here), from facts about
 * the host's Debian libruby 3.1.2 (see DESIGN.md), and from the fixtures' sources. Corrupt input is
 * made from the fixture by truncation, targeted header edits and seeded random damage: every call
 * must fail cleanly or succeed, never crash (each Criterion test runs in its own process, so a
 * crash fails the test).
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../elfedit.h"
#include "../fixture.h"
#include "lib/bounds.h"
#include "lib/clock.h"
#include "native/elf.h"

#define LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"

/* ---- helpers --------------------------------------------------------------------------------- */

static struct elf_file *open_fixture(const char *name)
{
	char path[PATH_MAX];
	struct elf_file *ef;

	fixture_path(path, sizeof(path), name);
	ef = elf_file__open(path);
	cr_assert_not_null(ef, "elf_file__open(\"%s\"): %s", path, strerror(errno));
	return ef;
}

/*
 * The tests of libtlsfix.so open it in .init (lib_open) and free it in .fini (lib_close): the
 * file, and its path for readelf.
 */
static struct elf_file *lib;
static char lib_path[PATH_MAX];

static void lib_open(void)
{
	lib = open_fixture("libtlsfix.so");
	fixture_path(lib_path, sizeof(lib_path), "libtlsfix.so");
}

static void lib_close(void)
{
	elf_file__free(lib);
}

/* Runs `readelf <args> 'path'` in the C locale; the caller pcloses. */
static FILE *readelf(const char *args, const char *path)
{
	char cmd[PATH_MAX + 128];
	FILE *f;

	cr_assert(!strchr(path, '\''));
	snprintf(cmd, sizeof(cmd), "LC_ALL=C readelf %s '%s' 2>/dev/null", args, path);
	f = popen(cmd, "r");
	cr_assert_not_null(f, "popen(%s)", cmd);
	return f;
}

struct rd_sym {
	uint64_t value;
	uint64_t size;
	char type[16];
	char bind[16];
};

/* The first defined symbol `name` in readelf's listing of `table` (".dynsym" or ".symtab"). */
static bool rd_find_sym(const char *path, const char *table, const char *name, struct rd_sym *out)
{
	char line[1024], cur[64] = "", ndx[16], sname[512], vis[16], sizestr[32];
	bool found = false;
	FILE *f = readelf("-Ws", path);

	while (fgets(line, sizeof(line), f)) {
		unsigned long long value;
		char *at;

		if (sscanf(line, "Symbol table '%63[^']'", cur) == 1)
			continue;
		if (found || strcmp(cur, table))
			continue;
		if (sscanf(line, " %*u: %llx %31s %15s %15s %15s %15s %511s", &value, sizestr,
			   out->type, out->bind, vis, ndx, sname) != 7)
			continue;
		at = strchr(sname, '@');
		if (at)
			*at = '\0';
		if (strcmp(sname, name) || !strcmp(ndx, "UND"))
			continue;
		out->value = value;
		out->size = strtoull(sizestr, NULL, 0);
		found = true;
	}
	pclose(f);
	return found;
}

/* r_offset of the DTPMOD64 relocation against `name`, or the symbol-less one for NULL. */
static bool rd_dtpmod(const char *path, const char *name, uint64_t *off)
{
	char line[1024], type[64], sname[512];
	unsigned long long r_off, info, symval;
	bool found = false;
	FILE *f = readelf("-rW", path);

	while (fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%llx %llx %63s %llx %511s", &r_off, &info, type, &symval,
			       sname);

		if (n < 3 || strcmp(type, "R_X86_64_DTPMOD64") || found)
			continue;
		if (name ? (info >> 32) != 0 && n == 5 && !strcmp(sname, name)
			 : (info >> 32) == 0) {
			*off = r_off;
			found = true;
		}
	}
	pclose(f);
	return found;
}

struct rd_phdr {
	uint64_t offset, vaddr, filesz, memsz, align;
	char flags[8];
};

/* The first program header of `type` ("TLS", "LOAD"...) whose flags contain `flag` (may be NULL). */
static bool rd_find_phdr(const char *path, const char *type, const char *flag, struct rd_phdr *out)
{
	char line[1024], t[32];
	bool found = false;
	FILE *f = readelf("-lW", path);

	while (fgets(line, sizeof(line), f)) {
		unsigned long long off, vaddr, paddr, filesz, memsz;
		char *last;
		int pos = 0;

		if (found ||
		    sscanf(line, " %31s %llx %llx %llx %llx %llx %n", t, &off, &vaddr, &paddr,
			   &filesz, &memsz, &pos) != 6 ||
		    strcmp(t, type))
			continue;
		/* Flags are "R", "R E", "RW "...: the text between memsz and the align column. */
		line[strcspn(line, "\n")] = '\0';
		last = strrchr(line, ' ');
		cr_assert_not_null(last);
		snprintf(out->flags, sizeof(out->flags), "%.*s", (int)(last - (line + pos)),
			 line + pos);
		if (flag && !strstr(out->flags, flag))
			continue;
		out->offset = off;
		out->vaddr = vaddr;
		out->filesz = filesz;
		out->memsz = memsz;
		out->align = strtoull(last + 1, NULL, 0);
		found = true;
	}
	pclose(f);
	return found;
}

static bool rd_build_id(const char *path, char *buf, size_t len)
{
	char line[1024];
	bool found = false;
	FILE *f = readelf("-n", path);

	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "Build ID: ");

		if (!p || found)
			continue;
		snprintf(buf, len, "%s", p + strlen("Build ID: "));
		buf[strcspn(buf, "\n")] = '\0';
		found = true;
	}
	pclose(f);
	return found;
}

static bool rd_section(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	char line[1024], sname[256], type[64];
	unsigned long long a, o, s;
	bool found = false;
	FILE *f = readelf("-SW", path);

	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ']');

		if (!p || found || !strchr(line, '['))
			continue;
		if (sscanf(p + 1, " %255s %63s %llx %llx %llx", sname, type, &a, &o, &s) != 5 ||
		    strcmp(sname, name))
			continue;
		*addr = a;
		*size = s;
		found = true;
	}
	pclose(f);
	return found;
}

static void *slurp(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY);

	cr_assert(fd >= 0, "open(\"%s\"): %s", path, strerror(errno));
	cr_assert(fstat(fd, &st) == 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert_not_null(buf);
	cr_assert(read(fd, buf, (size_t)st.st_size) == st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* The bytes of a fixture, read whole; the caller frees them. */
static unsigned char *slurp_fixture(const char *name, size_t *len)
{
	char path[PATH_MAX];

	fixture_path(path, sizeof(path), name);
	return slurp(path, len);
}

/* Writes buf to a fresh temporary file; path must hold PATH_MAX bytes. The caller unlinks. */
static void write_tmp(char *path, const void *buf, size_t len)
{
	int fd;

	snprintf(path, PATH_MAX, "/tmp/rp-test-elf-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
	cr_assert(len == 0 || write(fd, buf, len) == (ssize_t)len);
	close(fd);
}

/* Opens a modified copy of libtlsfix.so. */
static struct elf_file *open_bytes(const void *buf, size_t len)
{
	char path[PATH_MAX];
	struct elf_file *ef;
	int saved;

	write_tmp(path, buf, len);
	ef = elf_file__open(path);
	saved = errno;
	unlink(path);
	errno = saved;
	return ef;
}

static uint32_t crc32_ieee(const unsigned char *p, size_t len)
{
	uint32_t crc = 0xffffffff;
	size_t i;
	int k;

	for (i = 0; i < len; i++) {
		crc ^= p[i];
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return ~crc;
}

static Elf64_Shdr *shdr_by_type(unsigned char *file, size_t len, uint32_t type)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)file;
	size_t i;

	cr_assert(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len);
	for (i = 0; i < eh->e_shnum; i++) {
		Elf64_Shdr *sh = (Elf64_Shdr *)(file + eh->e_shoff) + i;

		if (sh->sh_type == type)
			return sh;
	}
	cr_assert_fail("no section of type %u", type);
	return NULL;
}

/* Calls everything on ef; results are only checked for internal consistency. */
static void exercise(struct elf_file *ef)
{
	static const char *const names[] = {"fix_current_ec",
					    "fix_version",
					    "fix_bss_area",
					    "fix_bump",
					    "fix_local_counter",
					    "",
					    "nope"};
	struct elf_sym sym;
	struct elf_tls tls;
	uint64_t a, b;
	char buf[64];
	uint32_t crc;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!elf_find_symbol(ef, names[i], &sym) && sym.type == STT_OBJECT && sym.size &&
		    sym.size <= sizeof(buf))
			(void)elf_read_vaddr(ef, sym.value, buf, sym.size);
		(void)elf_find_symbol_in(ef, ELF_SYM_SYMTAB, names[i], &sym);
	}
	(void)elf_has_symtab(ef);
	(void)elf_tls_segment(ef, &tls);
	(void)elf_dtpmod_slot(ef, "fix_current_ec", &a);
	(void)elf_dtpmod_slot(ef, NULL, &a);
	(void)elf_read_vaddr(ef, 0, buf, sizeof(buf));
	(void)elf_read_vaddr(ef, 0x4000, buf, sizeof(buf));
	(void)elf_read_vaddr(ef, UINT64_MAX - 4, buf, sizeof(buf));
	(void)elf_offset_to_vaddr(ef, 0, &a);
	(void)elf_offset_to_vaddr(ef, 0x3000, &a);
	(void)elf_build_id(ef, buf, sizeof(buf));
	(void)elf_build_id(ef, buf, 3);
	(void)elf_debuglink(ef, buf, sizeof(buf), &crc);
	(void)elf_section(ef, ".text", &a, &b);
	(void)elf_file_type(ef);
	cr_assert_not_null(elf_file_path(ef));
}

/* ---- the fixture library ---------------------------------------------------------------------- */

Test(elf, lib_header, .init = lib_open, .fini = lib_close)
{
	cr_assert_str_eq(elf_file_path(lib), lib_path);
	cr_assert_eq(elf_file_type(lib), ET_DYN);
	cr_assert(elf_has_symtab(lib));
}

Test(elf, lib_tls_symbol_in_dynsym, .init = lib_open, .fini = lib_close)
{
	struct elf_sym sym;
	struct rd_sym rd;

	cr_assert(rd_find_sym(lib_path, ".dynsym", "fix_current_ec", &rd));
	cr_assert_str_eq(rd.type, "TLS");

	cr_assert_eq(elf_find_symbol(lib, "fix_current_ec", &sym), 0);
	cr_assert_eq(sym.type, STT_TLS);
	cr_assert_eq(sym.source, ELF_SYM_DYNSYM);
	cr_assert_eq(sym.value, rd.value, "st_value %#" PRIx64 ", readelf %#" PRIx64, sym.value,
		     rd.value);
	cr_assert_eq(sym.size, sizeof(void *));
	cr_assert_eq(sym.size, rd.size);

	/* The same symbol is in .symtab too. */
	cr_assert_eq(elf_find_symbol_in(lib, ELF_SYM_SYMTAB, "fix_current_ec", &sym), 0);
	cr_assert_eq(sym.source, ELF_SYM_SYMTAB);
	cr_assert_eq(sym.value, rd.value);
}

Test(elf, lib_local_symbol_only_in_symtab, .init = lib_open, .fini = lib_close)
{
	struct elf_sym sym;
	struct rd_sym rd;

	cr_assert(!rd_find_sym(lib_path, ".dynsym", "fix_local_counter", &rd));

	cr_assert_eq(elf_find_symbol_in(lib, ELF_SYM_DYNSYM, "fix_local_counter", &sym), -ENOENT);
	cr_assert_eq(elf_find_symbol(lib, "fix_local_counter", &sym), 0);
	cr_assert_eq(sym.source, ELF_SYM_SYMTAB);
	cr_assert_eq(sym.type, STT_TLS);
	cr_assert(rd_find_sym(lib_path, ".symtab", "fix_local_counter", &rd));
	cr_assert_eq(sym.value, rd.value);
}

Test(elf, lib_missing_and_undefined_symbols, .init = lib_open, .fini = lib_close)
{
	struct elf_sym sym;
	struct rd_sym rd;

	cr_assert_eq(elf_find_symbol(lib, "no_such_symbol", &sym), -ENOENT);
	cr_assert_eq(elf_find_symbol(lib, "", &sym), -ENOENT);
	/* Referenced but defined elsewhere (libc): only in .dynsym as UND, never returned. */
	cr_assert(!rd_find_sym(lib_path, ".dynsym", "__tls_get_addr", &rd));
	cr_assert_eq(elf_find_symbol(lib, "__tls_get_addr", &sym), -ENOENT);
	/* STT_FILE symbols are not lookup targets. */
	cr_assert_eq(elf_find_symbol(lib, "tlsfix.c", &sym), -ENOENT);
}

Test(elf, lib_read_version_string, .init = lib_open, .fini = lib_close)
{
	char buf[16];
	struct elf_sym sym;
	struct rd_sym rd;

	cr_assert(rd_find_sym(lib_path, ".dynsym", "fix_version", &rd));
	cr_assert_eq(elf_find_symbol(lib, "fix_version", &sym), 0);
	cr_assert_eq(sym.type, STT_OBJECT);
	cr_assert_eq(sym.value, rd.value);
	cr_assert_eq(sym.size, sizeof("9.8.7"));
	memset(buf, 'x', sizeof(buf));
	cr_assert_eq(elf_read_vaddr(lib, sym.value, buf, sym.size), 0);
	cr_assert_str_eq(buf, "9.8.7");
}

Test(elf, lib_read_bss_and_bounds, .init = lib_open, .fini = lib_close)
{
	unsigned char buf[512];
	struct rd_phdr seg = {0};
	struct elf_sym sym;
	size_t i;

	cr_assert_eq(elf_find_symbol(lib, "fix_bss_area", &sym), 0);
	cr_assert_eq(sym.size, sizeof(buf));
	/* The writable segment: fix_bss_area lies past its file contents. */
	cr_assert(rd_find_phdr(lib_path, "LOAD", "W", &seg));
	cr_assert(sym.value >= seg.vaddr + seg.filesz);
	cr_assert(sym.value + sym.size <= seg.vaddr + seg.memsz);
	memset(buf, 0xaa, sizeof(buf));
	cr_assert_eq(elf_read_vaddr(lib, sym.value, buf, sizeof(buf)), 0);
	for (i = 0; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0, "byte %zu of .bss is %#x", i, buf[i]);

	/* Straddling p_filesz: file bytes then zeros, in one read. */
	cr_assert_eq(elf_read_vaddr(lib, seg.vaddr + seg.filesz - 8, buf, 16), 0);
	for (i = 8; i < 16; i++)
		cr_assert_eq(buf[i], 0);

	/* Past the end of the segment, across it, and nowhere near any. */
	cr_assert_eq(elf_read_vaddr(lib, seg.vaddr + seg.memsz, buf, 1), -EFAULT);
	cr_assert_eq(elf_read_vaddr(lib, seg.vaddr + seg.memsz - 4, buf, 8), -EFAULT);
	cr_assert_eq(elf_read_vaddr(lib, 0x7fff00000000ULL, buf, 8), -EFAULT);
	cr_assert_eq(elf_read_vaddr(lib, UINT64_MAX - 2, buf, 8), -EFAULT);
}

Test(elf, lib_read_matches_file_bytes, .init = lib_open, .fini = lib_close)
{
	struct rd_phdr text;
	unsigned char buf[64], *file;
	size_t len;

	cr_assert(rd_find_phdr(lib_path, "LOAD", "E", &text));
	file = slurp(lib_path, &len);
	cr_assert(text.offset + sizeof(buf) <= len);
	cr_assert_eq(elf_read_vaddr(lib, text.vaddr, buf, sizeof(buf)), 0);
	cr_assert_arr_eq(buf, file + text.offset, sizeof(buf));
	free(file);
}

Test(elf, lib_dtpmod_slot, .init = lib_open, .fini = lib_close)
{
	uint64_t slot = 0, want_named, want_anon;

	cr_assert(rd_dtpmod(lib_path, "fix_current_ec", &want_named),
		  "no named DTPMOD64 in fixture");
	cr_assert(rd_dtpmod(lib_path, NULL, &want_anon), "no symbol-less DTPMOD64 in fixture");
	cr_assert_neq(want_named, want_anon);

	cr_assert_eq(elf_dtpmod_slot(lib, "fix_current_ec", &slot), 0);
	cr_assert_eq(slot, want_named, "slot %#" PRIx64 ", readelf %#" PRIx64, slot, want_named);
	/* No name, or a name without a relocation: the symbol-less (local-dynamic) one. */
	cr_assert_eq(elf_dtpmod_slot(lib, NULL, &slot), 0);
	cr_assert_eq(slot, want_anon);
	cr_assert_eq(elf_dtpmod_slot(lib, "fix_version", &slot), 0);
	cr_assert_eq(slot, want_anon);
}

Test(elf, lib_dtpmod_slot_falls_back_to_own_tls_symbol)
{
	char path[PATH_MAX];
	unsigned char *file;
	Elf64_Shdr *sh;
	Elf64_Rela *r;
	struct elf_file *ef;
	uint64_t slot = 0, want_named, want_anon;
	size_t len, i, n;

	/* Turn the symbol-less DTPMOD64 into a non-TLS relocation: only the named one is left. */
	fixture_path(path, sizeof(path), "libtlsfix.so");
	cr_assert(rd_dtpmod(path, "fix_current_ec", &want_named));
	cr_assert(rd_dtpmod(path, NULL, &want_anon));
	file = slurp(path, &len);
	sh = shdr_by_type(file, len, SHT_RELA);
	r = (Elf64_Rela *)(file + sh->sh_offset);
	n = sh->sh_size / sizeof(*r);
	for (i = 0; i < n; i++) {
		if (r[i].r_offset == want_anon)
			r[i].r_info = ELF64_R_INFO(0, R_X86_64_RELATIVE);
	}
	ef = open_bytes(file, len);
	cr_assert_not_null(ef);
	cr_assert_eq(elf_dtpmod_slot(ef, NULL, &slot), 0);
	cr_assert_eq(slot, want_named);
	cr_assert_eq(elf_dtpmod_slot(ef, "other", &slot), 0);
	cr_assert_eq(slot, want_named);
	elf_file__free(ef);
	free(file);
}

Test(elf, lib_tls_segment, .init = lib_open, .fini = lib_close)
{
	struct rd_phdr rd;
	struct elf_tls tls;

	cr_assert(rd_find_phdr(lib_path, "TLS", NULL, &rd));
	cr_assert_eq(elf_tls_segment(lib, &tls), 0);
	cr_assert_eq(tls.vaddr, rd.vaddr);
	cr_assert_eq(tls.filesz, rd.filesz);
	cr_assert_eq(tls.memsz, rd.memsz);
	cr_assert_eq(tls.align, rd.align);
	/* fix_current_ec (8 bytes at 8) and fix_local_counter both live in it. */
	cr_assert_geq(tls.memsz, 16);
}

Test(elf, lib_offset_to_vaddr, .init = lib_open, .fini = lib_close)
{
	struct rd_phdr first, text, data;
	uint64_t vaddr, page = (uint64_t)sysconf(_SC_PAGESIZE);

	cr_assert(rd_find_phdr(lib_path, "LOAD", NULL, &first));
	cr_assert(rd_find_phdr(lib_path, "LOAD", "E", &text));
	cr_assert(rd_find_phdr(lib_path, "LOAD", "W", &data));

	cr_assert_eq(elf_offset_to_vaddr(lib, 0, &vaddr), 0);
	cr_assert_eq(vaddr, first.vaddr - first.offset);
	cr_assert_eq(elf_offset_to_vaddr(lib, text.offset, &vaddr), 0);
	cr_assert_eq(vaddr, text.vaddr);
	/*
	 * Inside the data segment only. (Its mapping starts at its offset rounded down to a page,
	 * which here is also where the read-only segment before it starts: both mappings show the
	 * same offset in /proc/PID/maps, and the first segment is the answer.)
	 */
	cr_assert_eq(elf_offset_to_vaddr(lib, data.offset, &vaddr), 0);
	cr_assert_eq(vaddr, data.vaddr);
	cr_assert_eq(elf_offset_to_vaddr(lib, data.offset + data.filesz - 1, &vaddr), 0);
	cr_assert_eq(vaddr, data.vaddr + data.filesz - 1);
	if ((data.offset & ~(page - 1)) != (text.offset & ~(page - 1))) {
		cr_assert_eq(elf_offset_to_vaddr(lib, data.offset & ~(page - 1), &vaddr), 0);
		cr_assert_eq(vaddr & (page - 1), 0);
	}
	/* Past every segment's file contents. */
	cr_assert_eq(elf_offset_to_vaddr(lib, data.offset + data.filesz + 0x100000, &vaddr),
		     -ENOENT);
}

Test(elf, lib_build_id, .init = lib_open, .fini = lib_close)
{
	char want[128], got[128];

	cr_assert(rd_build_id(lib_path, want, sizeof(want)));
	cr_assert_eq(elf_build_id(lib, got, sizeof(got)), 0);
	cr_assert_str_eq(got, want);
	cr_assert_eq(strlen(got), 40);
	/* Exactly enough room for SHA-1, and one byte short. */
	cr_assert_eq(elf_build_id(lib, got, 41), 0);
	cr_assert_eq(elf_build_id(lib, got, 40), -ENOSPC);
	cr_assert_eq(elf_build_id(lib, got, 0), -ENOSPC);
}

Test(elf, lib_section, .init = lib_open, .fini = lib_close)
{
	uint64_t addr, size, want_addr, want_size;
	char link[PATH_MAX];

	cr_assert(rd_section(lib_path, ".text", &want_addr, &want_size));
	cr_assert_eq(elf_section(lib, ".text", &addr, &size), 0);
	cr_assert_eq(addr, want_addr);
	cr_assert_eq(size, want_size);
	cr_assert_eq(elf_section(lib, ".no_such_section", &addr, &size), -ENOENT);
	/* Not stripped: no debuglink. */
	cr_assert_eq(elf_debuglink(lib, link, sizeof(link), NULL), -ENOENT);
}

Test(elf, offset_to_vaddr_prefers_segment_starting_there)
{
	unsigned char *file;
	struct elf_file *ef;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph, *load[4];
	uint64_t vaddr;
	size_t len, i, n = 0;

	/*
	 * A packed layout: segment 2 (read-only, bias 0) runs past 0x3000, and segment 3 (bias
	 * 0x1000) starts in the page at 0x3000. The mapping at file offset 0x3000 is segment 3's.
	 */
	file = slurp_fixture("libtlsfix.so", &len);
	eh = (Elf64_Ehdr *)file;
	ph = (Elf64_Phdr *)(file + eh->e_phoff);
	for (i = 0; i < eh->e_phnum && n < 4; i++) {
		if (ph[i].p_type == PT_LOAD)
			load[n++] = &ph[i];
	}
	cr_assert_eq(n, 4);
	load[2]->p_offset = load[2]->p_vaddr = 0x2000;
	load[2]->p_filesz = load[2]->p_memsz = 0x1100;
	load[3]->p_offset = 0x3010;
	load[3]->p_vaddr = 0x4010;
	load[3]->p_filesz = load[3]->p_memsz = 0x100;
	ef = open_bytes(file, len);
	cr_assert_not_null(ef);
	cr_assert_eq(elf_offset_to_vaddr(ef, 0x3000, &vaddr), 0);
	cr_assert_eq(vaddr, 0x4000, "vaddr %#" PRIx64, vaddr);
	/* Inside segment 2 only. */
	cr_assert_eq(elf_offset_to_vaddr(ef, 0x2800, &vaddr), 0);
	cr_assert_eq(vaddr, 0x2800);
	elf_file__free(ef);
	free(file);
}

/* ---- the stripped copy ------------------------------------------------------------------------ */

Test(elf, stripped_has_dynsym_only)
{
	struct elf_file *ef = open_fixture("libtlsfix-stripped.so");
	char path[PATH_MAX];
	struct elf_sym sym;
	struct rd_sym rd;

	fixture_path(path, sizeof(path), "libtlsfix-stripped.so");
	cr_assert(!elf_has_symtab(ef));
	cr_assert_eq(elf_find_symbol_in(ef, ELF_SYM_SYMTAB, "fix_current_ec", &sym), -ENOENT);
	cr_assert(rd_find_sym(path, ".dynsym", "fix_current_ec", &rd));
	cr_assert_eq(elf_find_symbol(ef, "fix_current_ec", &sym), 0);
	cr_assert_eq(sym.source, ELF_SYM_DYNSYM);
	cr_assert_eq(sym.type, STT_TLS);
	cr_assert_eq(sym.value, rd.value);
	/* The local TLS variable was only in .symtab. */
	cr_assert_eq(elf_find_symbol(ef, "fix_local_counter", &sym), -ENOENT);
	elf_file__free(ef);
}

Test(elf, stripped_debuglink)
{
	struct elf_file *ef = open_fixture("libtlsfix-stripped.so");
	char name[64];
	unsigned char *file;
	uint32_t crc = 0;
	size_t len;

	cr_assert_eq(elf_debuglink(ef, name, sizeof(name), &crc), 0);
	cr_assert_str_eq(name, "libtlsfix.so");
	/* objcopy stored the CRC32 of the unstripped file. */
	file = slurp_fixture("libtlsfix.so", &len);
	cr_assert_eq(crc, crc32_ieee(file, len), "crc %#x, want %#x", crc, crc32_ieee(file, len));
	free(file);
	cr_assert_eq(elf_debuglink(ef, name, sizeof("libtlsfix.so") - 1, &crc), -ENOSPC);
	cr_assert_eq(elf_debuglink(ef, name, sizeof("libtlsfix.so"), NULL), 0);
	elf_file__free(ef);
}

Test(elf, stripped_same_build_id_and_slots)
{
	struct elf_file *ef = open_fixture("libtlsfix-stripped.so");
	struct elf_file *orig = open_fixture("libtlsfix.so");
	char a[64], b[64];
	uint64_t s1, s2;

	cr_assert_eq(elf_build_id(ef, a, sizeof(a)), 0);
	cr_assert_eq(elf_build_id(orig, b, sizeof(b)), 0);
	cr_assert_str_eq(a, b);
	cr_assert_eq(elf_dtpmod_slot(ef, "fix_current_ec", &s1), 0);
	cr_assert_eq(elf_dtpmod_slot(orig, "fix_current_ec", &s2), 0);
	cr_assert_eq(s1, s2);
	elf_file__free(orig);
	elf_file__free(ef);
}

/* ---- the executable --------------------------------------------------------------------------- */

Test(elf, exe_tls_in_symtab)
{
	struct elf_file *ef = open_fixture("exetls");
	char path[PATH_MAX], want[128], got[128];
	struct elf_sym sym;
	struct elf_tls tls;
	struct rd_sym rd;
	struct rd_phdr ph;
	uint64_t slot;

	fixture_path(path, sizeof(path), "exetls");
	cr_assert_eq(elf_file_type(ef), ET_DYN); /* PIE */
	cr_assert(elf_has_symtab(ef));
	cr_assert(rd_find_sym(path, ".symtab", "exe_current_ec", &rd));
	cr_assert_eq(elf_find_symbol_in(ef, ELF_SYM_DYNSYM, "exe_current_ec", &sym), -ENOENT);
	cr_assert_eq(elf_find_symbol(ef, "exe_current_ec", &sym), 0);
	cr_assert_eq(sym.source, ELF_SYM_SYMTAB);
	cr_assert_eq(sym.type, STT_TLS);
	cr_assert_eq(sym.value, rd.value);
	cr_assert(rd_find_sym(path, ".symtab", "main", &rd));
	cr_assert_eq(elf_find_symbol(ef, "main", &sym), 0);
	cr_assert_eq(sym.type, STT_FUNC);
	cr_assert_eq(sym.value, rd.value);

	cr_assert(rd_find_phdr(path, "TLS", NULL, &ph));
	cr_assert_eq(elf_tls_segment(ef, &tls), 0);
	cr_assert_eq(tls.vaddr, ph.vaddr);
	cr_assert_eq(tls.memsz, ph.memsz);
	/* The executable's TLS is module 1, reached by local-exec: no DTPMOD relocation. */
	cr_assert_eq(elf_dtpmod_slot(ef, "exe_current_ec", &slot), -ENOENT);

	cr_assert(rd_build_id(path, want, sizeof(want)));
	cr_assert_eq(elf_build_id(ef, got, sizeof(got)), 0);
	cr_assert_str_eq(got, want);
	elf_file__free(ef);
}

Test(elf, exe_offset_to_vaddr)
{
	struct elf_file *ef = open_fixture("exetls");
	char path[PATH_MAX];
	struct rd_phdr first, text;
	uint64_t vaddr;

	fixture_path(path, sizeof(path), "exetls");
	cr_assert(rd_find_phdr(path, "LOAD", NULL, &first));
	cr_assert(rd_find_phdr(path, "LOAD", "E", &text));
	cr_assert_eq(elf_offset_to_vaddr(ef, 0, &vaddr), 0);
	cr_assert_eq(vaddr, first.vaddr - first.offset);
	cr_assert_eq(elf_offset_to_vaddr(ef, text.offset, &vaddr), 0);
	cr_assert_eq(vaddr, text.vaddr);
	cr_assert_eq(elf_offset_to_vaddr(ef, text.offset + 4, &vaddr), 0);
	cr_assert_eq(vaddr, text.vaddr + 4);
	elf_file__free(ef);
}

/* ---- the host's libruby (Debian bookworm, Ruby 3.1.2) ----------------------------------------- */

static struct elf_file *open_libruby(void)
{
	struct elf_file *ef;

	if (access(LIBRUBY, R_OK))
		cr_skip_test("missing: %s (make deps installs ruby)", LIBRUBY);
	ef = elf_file__open(LIBRUBY);
	cr_assert_not_null(ef, "elf_file__open(\"%s\"): %s", LIBRUBY, strerror(errno));
	return ef;
}

Test(elf, libruby_symbols)
{
	struct elf_file *ef = open_libruby();
	struct elf_sym sym;
	struct rd_sym rd;
	char buf[16];

	cr_assert_eq(elf_find_symbol(ef, "ruby_current_ec", &sym), 0);
	cr_assert_eq(sym.type, STT_TLS);
	cr_assert_eq(sym.source, ELF_SYM_DYNSYM);
	cr_assert_eq(sym.value, 8);

	cr_assert(rd_find_sym(LIBRUBY, ".dynsym", "rb_vm_exec", &rd));
	cr_assert_eq(elf_find_symbol(ef, "rb_vm_exec", &sym), 0);
	cr_assert_eq(sym.type, STT_FUNC);
	cr_assert_eq(sym.value, rd.value);
	cr_assert_eq(sym.size, rd.size);

	/* const char ruby_version[] = "3.1.2" */
	cr_assert_eq(elf_find_symbol(ef, "ruby_version", &sym), 0);
	cr_assert_eq(sym.type, STT_OBJECT);
	cr_assert_eq(sym.size, sizeof("3.1.2"));
	cr_assert_eq(elf_read_vaddr(ef, sym.value, buf, sym.size), 0);
	cr_assert_str_eq(buf, "3.1.2");

	/* Debian strips it; the DWARF lives in a -dbgsym package. */
	cr_assert(!elf_has_symtab(ef));
	elf_file__free(ef);
}

Test(elf, libruby_tls_and_dtpmod)
{
	struct elf_file *ef = open_libruby();
	struct elf_tls tls;
	struct rd_phdr ph;
	uint64_t slot, want;

	cr_assert(rd_find_phdr(LIBRUBY, "TLS", NULL, &ph));
	cr_assert_eq(elf_tls_segment(ef, &tls), 0);
	cr_assert_eq(tls.vaddr, ph.vaddr);
	cr_assert_eq(tls.memsz, ph.memsz);
	cr_assert_eq(tls.memsz, 0x10);

	cr_assert(rd_dtpmod(LIBRUBY, "ruby_current_ec", &want));
	cr_assert_eq(elf_dtpmod_slot(ef, "ruby_current_ec", &slot), 0);
	cr_assert_eq(slot, want, "slot %#" PRIx64 ", readelf %#" PRIx64, slot, want);
	cr_assert(rd_dtpmod(LIBRUBY, NULL, &want));
	cr_assert_eq(elf_dtpmod_slot(ef, NULL, &slot), 0);
	cr_assert_eq(slot, want);
	/* what discovery holds of Debian's libruby: its tables and relocations, far below the
	 * joint bound (docs/security.md), and never its code */
	cr_assert_eq(elf_find_symbol(ef, "ruby_version", NULL), 0);
	cr_expect_lt(elf_file_held(ef), 2U << 20, "%" PRIu64 " bytes held", elf_file_held(ef));
	cr_log_info("libruby: %" PRIu64 " bytes held", elf_file_held(ef));
	elf_file__free(ef);
}

Test(elf, libruby_build_id_and_debuglink)
{
	struct elf_file *ef = open_libruby();
	char want[128], got[128], line[512], name[256];
	uint32_t crc;
	bool found = false;
	FILE *f;

	cr_assert(rd_build_id(LIBRUBY, want, sizeof(want)));
	cr_assert_eq(elf_build_id(ef, got, sizeof(got)), 0);
	cr_assert_str_eq(got, want);

	cr_assert_eq(elf_debuglink(ef, name, sizeof(name), &crc), 0);
	f = readelf("-p .gnu_debuglink", LIBRUBY);
	while (fgets(line, sizeof(line), f)) {
		char s[256];

		if (!found && sscanf(line, " [ %*x] %255s", s) == 1) {
			cr_assert_str_eq(name, s);
			found = true;
		}
	}
	pclose(f);
	cr_assert(found);
	elf_file__free(ef);
}

/* ---- refused and corrupt input ---------------------------------------------------------------- */

static void assert_refused(const void *buf, size_t len, const char *what)
{
	struct elf_file *ef;

	errno = 0;
	ef = open_bytes(buf, len);
	cr_assert_null(ef, "%s was accepted", what);
	cr_assert_eq(errno, ENOEXEC, "%s: errno %d (%s)", what, errno, strerror(errno));
}

Test(elf, refuses_non_elf)
{
	static const char text[] = "#!/bin/sh\necho this is not an ELF file\n";
	struct elf_file *ef;

	assert_refused("", 0, "an empty file");
	assert_refused(text, sizeof(text) - 1, "a text file");
	assert_refused("\177ELF", 4, "a bare magic");

	errno = 0;
	cr_assert_null(elf_file__open("/nonexistent/libruby.so"));
	cr_assert_eq(errno, ENOENT);
	errno = 0;
	ef = elf_file__open("/tmp");
	cr_assert_null(ef);
	cr_assert_eq(errno, ENOEXEC);
}

Test(elf, refuses_truncated)
{
	unsigned char *file;
	size_t len;

	file = slurp_fixture("libtlsfix.so", &len);
	assert_refused(file, 100, "the first 100 bytes");
	assert_refused(file, 4096, "the first 4096 bytes");
	assert_refused(file, len - 1, "all but the last byte");
	free(file);
}

Test(elf, refuses_other_classes_and_machines)
{
	unsigned char *file;
	Elf64_Ehdr *eh;
	size_t len;

	file = slurp_fixture("libtlsfix.so", &len);
	eh = (Elf64_Ehdr *)file;

	eh->e_ident[EI_CLASS] = ELFCLASS32;
	assert_refused(file, len, "ELFCLASS32");
	eh->e_ident[EI_CLASS] = ELFCLASS64;

	eh->e_ident[EI_DATA] = ELFDATA2MSB;
	assert_refused(file, len, "big-endian");
	eh->e_ident[EI_DATA] = ELFDATA2LSB;

	eh->e_machine = EM_386;
	assert_refused(file, len, "EM_386");
	eh->e_machine = EM_RISCV;
	assert_refused(file, len, "EM_RISCV");
	free(file);
}

Test(elf, refuses_bogus_header_offsets)
{
	unsigned char *file;
	Elf64_Ehdr *eh;
	uint64_t shoff, phoff;
	size_t len;

	file = slurp_fixture("libtlsfix.so", &len);
	eh = (Elf64_Ehdr *)file;
	shoff = eh->e_shoff;
	phoff = eh->e_phoff;

	eh->e_shoff = 0x7fffffff00000000ULL;
	assert_refused(file, len, "e_shoff far past the end");
	eh->e_shoff = len - 10;
	assert_refused(file, len, "e_shoff near the end");
	eh->e_shoff = UINT64_MAX - 8;
	assert_refused(file, len, "e_shoff wrapping");
	eh->e_shoff = shoff;

	eh->e_phoff = len + 4096;
	assert_refused(file, len, "e_phoff past the end");
	eh->e_phoff = phoff;
	eh->e_phnum = 0xfff0;
	assert_refused(file, len, "e_phnum too large");
	free(file);
}

Test(elf, survives_garbage_section_headers)
{
	unsigned char *file;
	struct elf_file *ef;
	Elf64_Ehdr *eh;
	size_t len;

	/* Section headers read from the program headers: plausible to libelf, nonsense to us. */
	file = slurp_fixture("libtlsfix.so", &len);
	eh = (Elf64_Ehdr *)file;
	eh->e_shoff = 64;
	eh->e_shnum = 8;
	eh->e_shstrndx = 3;
	ef = open_bytes(file, len);
	if (ef) {
		exercise(ef);
		elf_file__free(ef);
	}
	free(file);
}

Test(elf, corrupt_dynsym_falls_back_to_symtab)
{
	enum { ENTSIZE_7, ENTSIZE_0, LINK_OUT_OF_RANGE, LINK_TO_ITSELF, LINK_TO_NULL, NR_CASES };
	static const char *const what[NR_CASES] = {
		"sh_entsize 7",
		"sh_entsize 0",
		"sh_link out of range",
		"sh_link to itself",
		"sh_link to the null section",
	};
	char path[PATH_MAX];
	unsigned char *orig;
	uint64_t want_anon;
	size_t len;
	int c;

	fixture_path(path, sizeof(path), "libtlsfix.so");
	cr_assert(rd_dtpmod(path, NULL, &want_anon));
	orig = slurp(path, &len);
	for (c = 0; c < NR_CASES; c++) {
		unsigned char *file = malloc(len);
		struct elf_file *ef;
		struct elf_sym sym;
		Elf64_Ehdr *eh;
		Elf64_Shdr *sh;
		uint64_t slot = 0;
		int err;

		cr_assert_not_null(file);
		memcpy(file, orig, len);
		eh = (Elf64_Ehdr *)file;
		sh = shdr_by_type(file, len, SHT_DYNSYM);
		switch (c) {
		case ENTSIZE_7:
			sh->sh_entsize = 7;
			break;
		case ENTSIZE_0:
			sh->sh_entsize = 0;
			break;
		case LINK_OUT_OF_RANGE:
			sh->sh_link = 999;
			break;
		case LINK_TO_ITSELF:
			sh->sh_link = (uint32_t)(sh - (Elf64_Shdr *)(file + eh->e_shoff));
			break;
		case LINK_TO_NULL:
			sh->sh_link = 0;
			break;
		}

		ef = open_bytes(file, len);
		cr_assert_not_null(ef, "%s: %s", what[c], strerror(errno));
		err = elf_find_symbol_in(ef, ELF_SYM_DYNSYM, "fix_version", &sym);
		cr_assert(err < 0 && err != -ENOENT, "%s: dynsym lookup gave %d", what[c], err);
		/* The error sticks, and .symtab still answers. */
		cr_assert_eq(elf_find_symbol_in(ef, ELF_SYM_DYNSYM, "fix_version", &sym), err);
		cr_assert_eq(elf_find_symbol(ef, "fix_version", &sym), 0, "%s", what[c]);
		cr_assert_eq(sym.source, ELF_SYM_SYMTAB);
		/* A symbol neither table can give: the dynsym error, not -ENOENT. */
		cr_assert_eq(elf_find_symbol(ef, "no_such_symbol", &sym), err);
		/* .rela.dyn's symbols are unreadable: only the symbol-less slot is left. */
		cr_assert_eq(elf_dtpmod_slot(ef, "fix_current_ec", &slot), 0, "%s", what[c]);
		cr_assert_eq(slot, want_anon, "%s", what[c]);
		exercise(ef);
		elf_file__free(ef);
		free(file);
	}
	free(orig);
}

Test(elf, corrupt_string_table)
{
	unsigned char *file;
	struct elf_file *ef;
	struct elf_sym sym;
	Elf64_Shdr *dynsym, *dynstr;
	Elf64_Ehdr *eh;
	size_t len;

	/* .dynstr cut to 4 bytes, without a NUL at its end: the table is refused as corrupt. */
	file = slurp_fixture("libtlsfix.so", &len);
	eh = (Elf64_Ehdr *)file;
	dynsym = shdr_by_type(file, len, SHT_DYNSYM);
	dynstr = (Elf64_Shdr *)(file + eh->e_shoff) + dynsym->sh_link;
	dynstr->sh_size = 4;
	file[dynstr->sh_offset + 3] = 'x';
	ef = open_bytes(file, len);
	cr_assert_not_null(ef);
	cr_assert_eq(elf_find_symbol_in(ef, ELF_SYM_DYNSYM, "fix_version", &sym), -EINVAL);
	cr_assert_eq(elf_find_symbol(ef, "fix_version", &sym), 0);
	cr_assert_eq(sym.source, ELF_SYM_SYMTAB);
	exercise(ef);
	elf_file__free(ef);

	/* .dynstr pointing past the end of the file. */
	dynstr->sh_size = 0x1000;
	dynstr->sh_offset = len - 16;
	ef = open_bytes(file, len);
	if (ef) {
		cr_assert_neq(elf_find_symbol_in(ef, ELF_SYM_DYNSYM, "fix_version", &sym), 0);
		exercise(ef);
		elf_file__free(ef);
	}
	free(file);
}

Test(elf, segment_past_end_of_file)
{
	unsigned char *file;
	struct elf_file *ef;
	struct elf_sym sym;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	char buf[8];
	size_t len, i;

	/* The read-only data segment claims far more file bytes than there are. */
	file = slurp_fixture("libtlsfix.so", &len);
	eh = (Elf64_Ehdr *)file;
	for (i = 0; i < eh->e_phnum; i++) {
		ph = (Elf64_Phdr *)(file + eh->e_phoff) + i;
		if (ph->p_type == PT_LOAD && ph->p_flags == PF_R && ph->p_offset) {
			ph->p_filesz = ph->p_memsz = 1ULL << 40;
			break;
		}
	}
	cr_assert(i < eh->e_phnum);
	ef = open_bytes(file, len);
	cr_assert_not_null(ef);
	cr_assert_eq(elf_find_symbol(ef, "fix_version", &sym), 0);
	cr_assert_eq(elf_read_vaddr(ef, sym.value, buf, sym.size), -EIO);
	exercise(ef);
	elf_file__free(ef);
	free(file);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Seeded random damage: header fields set to edge values, random bytes in the first pages and in
 * the section header table, random truncation. Nothing is asserted but survival (and, under
 * valgrind, clean memory accesses).
 */
Test(elf, survives_random_damage, .timeout = 300)
{
	static const uint64_t edges[] = {0,	 1,	     7,		 24,	     0xff,
					 0xffff, 0x7fffffff, 0xffffffff, 1ULL << 40, UINT64_MAX};
	const char *env = getenv("RP_FUZZ_ITERS");
	long iters = env ? strtol(env, NULL, 10) : 3000;
	unsigned char *orig, *file;
	const char *seed_env = getenv("RP_FUZZ_SEED");
	uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0x9e3779b97f4a7c15ULL;
	size_t len;
	long it, opened = 0;

	orig = slurp_fixture("libtlsfix.so", &len);
	file = malloc(len);
	cr_assert_not_null(file);
	cr_assert_neq(seed, 0);
	for (it = 0; it < iters; it++) {
		/* Header tables located through the undamaged original. */
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)orig;
		size_t cut = len, n, k;
		struct elf_file *ef;

		memcpy(file, orig, len);
		n = 1 + xorshift(&seed) % 4;
		for (k = 0; k < n; k++) {
			uint64_t r = xorshift(&seed), v = xorshift(&seed);
			size_t off;

			if (r % 8 < 3 && eh->e_shnum) {
				/* A field of a section header. */
				off = eh->e_shoff + (r >> 8) % eh->e_shnum * sizeof(Elf64_Shdr) +
				      (r >> 24) % (sizeof(Elf64_Shdr) / 4) * 4;
			} else if (r % 8 < 5 && eh->e_phnum) {
				/* A field of a program header. */
				off = eh->e_phoff + (r >> 8) % eh->e_phnum * sizeof(Elf64_Phdr) +
				      (r >> 24) % (sizeof(Elf64_Phdr) / 4) * 4;
			} else if (r % 8 < 7) {
				/* The headers, symbols, strings, relocations, notes. */
				off = (r >> 8) % (len < 0x1000 ? len : 0x1000) & ~(size_t)3;
			} else {
				off = (r >> 8) % len & ~(size_t)3;
			}
			if (off > len - 8)
				continue;
			if (v & 1)
				v = edges[(v >> 1) % (sizeof(edges) / sizeof(edges[0]))];
			memcpy(file + off, &v, (r >> 40) & 1 ? 8 : 4);
		}
		if (xorshift(&seed) % 10 == 0)
			cut = xorshift(&seed) % len;
		ef = open_bytes(file, cut);
		if (!ef) {
			cr_assert_neq(errno, 0);
			continue;
		}
		opened++;
		exercise(ef);
		elf_file__free(ef);
	}
	cr_log_info("%ld of %ld damaged files opened", opened, iters);
	/* The damage must leave enough files open for the calls to be exercised. */
	cr_assert(iters < 10 || opened > iters / 4, "only %ld of %ld opened", opened, iters);
	free(file);
	free(orig);
}

Test(elf, free_null)
{
	elf_file__free(NULL);
}

/* ---- bounds: what a hostile object claims is not read ------------------------------------------ */

/*
 * A copy of the fixture whose section of type `type` claims `size` bytes, the file made sparse
 * up to the section's claimed end (a few KiB on disk): the tenant's cheap 1 GiB .dynsym.
 */
static void sparse_section_copy(const char *from, const char *to, uint32_t type, uint64_t size)
{
	char src[PATH_MAX], cmd[PATH_MAX * 3];
	Elf64_Shdr sh;
	size_t idx;
	int fd;

	if (from[0] == '/')
		snprintf(src, sizeof(src), "%s", from);
	else
		fixture_path(src, sizeof(src), from);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, to);
	cr_assert_eq(system(cmd), 0);
	fd = open(to, O_RDWR | O_CLOEXEC);
	cr_assert(fd >= 0);
	idx = find_section(fd, type, &sh);
	sh.sh_size = size;
	write_section(fd, idx, &sh);
	cr_assert_eq(ftruncate(fd, (off_t)(sh.sh_offset + size)), 0);
	close(fd);
}

/*
 * What a refused object costs and leaves, since *before and the peak RSS rss0 (KiB): the peak
 * grew by less than max_mib MiB, bound b was met n times, and the object was logged once.
 */
static void expect_refused(const struct bounds_stats *before, long rss0, long max_mib,
			   enum bound_id b, uint64_t n)
{
	struct bounds_stats after;
	long grew;

	bounds_stats(&after);
	grew = status_kib("VmHWM:") - rss0;
	cr_expect_lt(grew, max_mib * 1024, "peak RSS grew by %ld KiB", grew);
	cr_expect_eq(after.refused[b] - before->refused[b], n, "bound %s met %" PRIu64 " times",
		     bounds_name(b), after.refused[b] - before->refused[b]);
	cr_expect_eq(after.logged - before->logged, 1, "one log line for the object");
}

Test(elf, sparse_section_past_the_bound_is_refused_counted_and_logged_once)
{
	char path[] = "/tmp/rp-elf-sparse-XXXXXX";
	struct bounds_stats before;
	struct elf_sym sym;
	struct elf_file *ef;
	long rss0;
	int fd, i;

	fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	/* a whole number of symbols, as libelf wants */
	sparse_section_copy(LIBRUBY, path, SHT_DYNSYM,
			    (1ULL << 30) - (1ULL << 30) % sizeof(Elf64_Sym));
	bounds_stats(&before);
	rss0 = status_kib("VmHWM:");
	for (i = 0; i < 3; i++) {
		ef = elf_file__open(path);
		cr_assert_not_null(ef, "the headers are fine: %s", strerror(errno));
		cr_expect_eq(elf_find_symbol_in(ef, ELF_SYM_DYNSYM, "ruby_version", &sym), -EFBIG);
		elf_file__free(ef);
	}
	/* the old reader read the claimed 1 GiB (and copied it): here a few MiB at most */
	expect_refused(&before, rss0, 16, BOUND_SECTION, 3);
	unlink(path);
}

Test(elf, sections_within_the_bound_are_read)
{
	char path[] = "/tmp/rp-elf-sparse-XXXXXX";
	struct bounds_stats before, after;
	struct elf_file *ef;
	struct elf_sym sym;
	int fd;

	fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	/* a .symtab as large as the bound: read (zeros past the real one are null symbols) */
	sparse_section_copy("libtlsfix.so", path, SHT_SYMTAB,
			    BOUND_SECTION_BYTES - BOUND_SECTION_BYTES % sizeof(Elf64_Sym));
	bounds_stats(&before);
	ef = elf_file__open(path);
	cr_assert_not_null(ef);
	cr_expect_eq(elf_find_symbol_in(ef, ELF_SYM_DYNSYM, "fix_version", &sym), 0);
	cr_expect_eq(elf_find_symbol_in(ef, ELF_SYM_SYMTAB, "fix_version", &sym), 0);
	bounds_stats(&after);
	cr_expect_eq(after.refused[BOUND_SECTION], before.refused[BOUND_SECTION]);
	elf_file__free(ef);
	unlink(path);
}

/*
 * A string table with no NUL at its end, 2 MiB of 'x' behind a NUL at offset 0, and a .dynsym of
 * 100,000 defined symbols whose names start at offset 1: libelf's elf_strptr would scan the
 * table back from its end for each of them (200 GB; minutes). Refused at once as corrupt.
 */
Test(elf, string_table_without_a_final_nul_is_refused_at_once, .timeout = 20)
{
	const size_t nsyms = 100000, strsize = 2U << 20;
	unsigned char *file, *big;
	Elf64_Shdr *dynsym, *dynstr;
	struct elf_file *ef;
	struct elf_sym sym;
	Elf64_Sym *syms;
	Elf64_Ehdr *eh;
	size_t len, total, i;
	int64_t t0;

	file = slurp_fixture("libtlsfix.so", &len);
	len = (len + 7) & ~(size_t)7;
	total = len + nsyms * sizeof(Elf64_Sym) + strsize;
	big = calloc(1, total);
	cr_assert_not_null(big);
	memcpy(big, file, len);
	free(file);
	eh = (Elf64_Ehdr *)big;
	dynsym = shdr_by_type(big, total, SHT_DYNSYM);
	dynstr = (Elf64_Shdr *)(big + eh->e_shoff) + dynsym->sh_link;
	syms = (Elf64_Sym *)(big + len);
	for (i = 1; i < nsyms; i++) {
		syms[i].st_name = 1 + (uint32_t)(i % 1000);
		syms[i].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[i].st_shndx = 1;
	}
	dynsym->sh_offset = len;
	dynsym->sh_size = nsyms * sizeof(Elf64_Sym);
	dynstr->sh_offset = len + nsyms * sizeof(Elf64_Sym);
	dynstr->sh_size = strsize;
	memset(big + dynstr->sh_offset + 1, 'x', strsize - 1);
	ef = open_bytes(big, total);
	cr_assert_not_null(ef, "%s", strerror(errno));
	t0 = clock_mono_ns();
	cr_assert_eq(elf_find_symbol_in(ef, ELF_SYM_DYNSYM, "fix_version", &sym), -EINVAL);
	/* .symtab is intact: the name is still found */
	cr_assert_eq(elf_find_symbol(ef, "fix_version", &sym), 0);
	cr_assert_lt(clock_mono_ns() - t0, 2000000000LL, "%lld ms",
		     (long long)((clock_mono_ns() - t0) / 1000000));
	elf_file__free(ef);
	free(big);
}

/*
 * e_shnum 0: the count is section 0's sh_size, here 2 million (a sparse 128 MiB table behind a
 * real object): libelf would make a structure for each (530 MB, 1.3 s). Refused before libelf
 * sees it, counted by bound, logged once.
 */
Test(elf, extended_section_count_past_the_bound_is_refused)
{
	char path[] = "/tmp/rp-elf-shnum-XXXXXX";
	struct bounds_stats before;
	const uint64_t count = 2000000;
	Elf64_Shdr sh0;
	Elf64_Ehdr eh;
	char src[PATH_MAX], cmd[PATH_MAX * 3];
	long rss0;
	int fd, i;

	fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	fixture_path(src, sizeof(src), "libtlsfix.so");
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, path);
	cr_assert_eq(system(cmd), 0);
	fd = open(path, O_RDWR | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
	cr_assert_eq(pread(fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff), (ssize_t)sizeof(sh0));
	eh.e_shnum = 0;
	sh0.sh_size = count;
	cr_assert_eq(pwrite(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
	cr_assert_eq(pwrite(fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff), (ssize_t)sizeof(sh0));
	cr_assert_eq(ftruncate(fd, (off_t)(eh.e_shoff + count * sizeof(sh0))), 0);
	close(fd);
	bounds_stats(&before);
	rss0 = status_kib("VmHWM:");
	for (i = 0; i < 2; i++) {
		cr_assert_null(elf_file__open(path));
		cr_assert_eq(errno, ENOEXEC);
	}
	expect_refused(&before, rss0, 16, BOUND_SECTIONS, 2);
	unlink(path);
}

/*
 * An object of 300 PT_NOTE headers of 4 MiB each (zeros: no build id in any), plus one PT_LOAD,
 * in a sparse file of a few KiB: each note is within the section bound, but libelf keeps every
 * one it reads until the file is closed (a hostile tenant's libruby: 1.7 GiB and seconds of the
 * main loop before the notes were bounded all together). Refused once 8 MiB of notes are
 * counted, before they are read; counted and logged.
 */
Test(elf, notes_past_the_bound_all_together_are_refused, .timeout = 30)
{
	char path[] = "/tmp/rp-elf-notes-XXXXXX", buf[64];
	struct bounds_stats before;
	enum { NOTES = 300 };
	const uint64_t note = 4ULL << 20;
	Elf64_Phdr ph[NOTES + 1];
	Elf64_Ehdr eh = elf_header();
	struct elf_file *ef;
	long rss0;
	int fd, i;

	fd = mkstemp(path);
	cr_assert(fd >= 0);
	eh.e_phoff = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = NOTES + 1;
	memset(ph, 0, sizeof(ph));
	ph[0] = (Elf64_Phdr){.p_type = PT_LOAD,
			     .p_flags = PF_R,
			     .p_filesz = 4096,
			     .p_memsz = 4096,
			     .p_align = 4096};
	for (i = 1; i <= NOTES; i++)
		ph[i] = (Elf64_Phdr){.p_type = PT_NOTE,
				     .p_flags = PF_R,
				     .p_offset = 4096 + (uint64_t)(i - 1) * note,
				     .p_filesz = note,
				     .p_memsz = note,
				     .p_align = 4};
	cr_assert_eq(pwrite(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
	cr_assert_eq(pwrite(fd, ph, sizeof(ph), sizeof(eh)), (ssize_t)sizeof(ph));
	cr_assert_eq(ftruncate(fd, (off_t)(4096 + NOTES * note)), 0);
	close(fd);

	bounds_stats(&before);
	rss0 = status_kib("VmHWM:");
	ef = elf_file__open(path);
	cr_assert_not_null(ef, "the headers are fine: %s", strerror(errno));
	cr_expect_eq(elf_build_id(ef, buf, sizeof(buf)), -EFBIG);
	elf_file__free(ef);
	expect_refused(&before, rss0, 32, BOUND_SECTION, 1);
	unlink(path);
}

/*
 * An object and its debug file each with a .symtab as large as the section bound (sparse
 * copies): each is within its own bounds (13 MiB held: the table and its index), but together
 * they passed 26 MiB, and with both string tables and .dynsym at the bound too, 86 MiB at one
 * discovery. What both hold is bounded together (BOUND_HELD_BYTES): the debug file's index is
 * refused, counted and logged once; the object's own symbols are still found.
 */
Test(elf, object_and_debug_file_held_together_are_bounded)
{
	char obj_path[] = "/tmp/rp-elf-held-XXXXXX", dbg_path[] = "/tmp/rp-elf-held-XXXXXX";
	const uint64_t size = BOUND_SECTION_BYTES - BOUND_SECTION_BYTES % sizeof(Elf64_Sym);
	struct bounds_stats before, after;
	struct elf_file *ef, *dbg;
	struct elf_sym sym;
	int fd;

	fd = mkstemp(obj_path);
	cr_assert(fd >= 0);
	close(fd);
	fd = mkstemp(dbg_path);
	cr_assert(fd >= 0);
	close(fd);
	sparse_section_copy("libtlsfix.so", obj_path, SHT_SYMTAB, size);
	sparse_section_copy("libtlsfix.so", dbg_path, SHT_SYMTAB, size);
	bounds_stats(&before);
	ef = elf_file__open(obj_path);
	cr_assert_not_null(ef);
	cr_expect_eq(elf_find_symbol_in(ef, ELF_SYM_SYMTAB, "fix_version", &sym), 0);
	dbg = elf_file__open(dbg_path);
	cr_assert_not_null(dbg);
	/* on its own, the debug file's table would be read */
	elf_file_share_budget(dbg, ef);
	cr_expect_eq(elf_find_symbol_in(dbg, ELF_SYM_SYMTAB, "fix_version", &sym), -EFBIG);
	cr_expect_eq(elf_find_symbol_in(dbg, ELF_SYM_SYMTAB, "fix_version", &sym), -EFBIG);
	bounds_stats(&after);
	cr_expect_eq(after.refused[BOUND_HELD] - before.refused[BOUND_HELD], 1,
		     "refused %" PRIu64 " times",
		     after.refused[BOUND_HELD] - before.refused[BOUND_HELD]);
	cr_expect_eq(after.refused[BOUND_SECTION], before.refused[BOUND_SECTION]);
	cr_expect_eq(after.logged - before.logged, 1, "one log line for the debug file");
	/* the object's own tables stay usable */
	cr_expect_eq(elf_find_symbol_in(ef, ELF_SYM_SYMTAB, "fix_version", &sym), 0);
	elf_file__free(dbg);
	elf_file__free(ef);
	/* the same debug file alone reads its table */
	dbg = elf_file__open(dbg_path);
	cr_assert_not_null(dbg);
	cr_expect_eq(elf_find_symbol_in(dbg, ELF_SYM_SYMTAB, "fix_version", &sym), 0);
	elf_file__free(dbg);
	unlink(obj_path);
	unlink(dbg_path);
}

/*
 * A copy of libtlsfix.so with 200 more section headers, all relocation tables of 8 MiB that
 * claim the same sparse region behind it (a few KiB on disk): each is within the section bound,
 * but the search for the TLS module id's relocation read every one and libelf kept each (1.6 GiB
 * here; with 4000 of them, 32 GB; and each entry is looked at: 16 MiB of them took 80-440 ms).
 * Past BOUND_RELOC_BYTES of them all together the rest are not read; the
 * real relocation table, first, still gives the slot (a name that is no TLS symbol: the
 * search goes through every table).
 */
Test(elf, relocation_tables_past_the_held_bound_are_not_read, .timeout = 60)
{
	char path[] = "/tmp/rp-elf-rela-XXXXXX", src[PATH_MAX];
	const uint64_t size = BOUND_SECTION_BYTES - BOUND_SECTION_BYTES % sizeof(Elf64_Rela);
	enum { EXTRA = 200 };
	struct bounds_stats before;
	unsigned char *file;
	Elf64_Shdr *old, *sh, *rela;
	uint64_t slot = 0, want = 0, shoff, region;
	struct elf_file *ef;
	Elf64_Ehdr *eh;
	size_t len, i;
	long rss0;
	int fd;

	fixture_path(src, sizeof(src), "libtlsfix.so");
	ef = elf_file__open(src);
	cr_assert_not_null(ef);
	cr_assert_eq(elf_dtpmod_slot(ef, "fix_version", &want), 0);
	elf_file__free(ef);
	file = slurp_fixture("libtlsfix.so", &len);
	eh = (Elf64_Ehdr *)file;
	old = (Elf64_Shdr *)(file + eh->e_shoff);
	rela = shdr_by_type(file, len, SHT_RELA);
	shoff = (len + 63) & ~(uint64_t)63;
	region = shoff + (eh->e_shnum + EXTRA) * sizeof(Elf64_Shdr);
	sh = calloc(eh->e_shnum + EXTRA, sizeof(*sh));
	cr_assert_not_null(sh);
	memcpy(sh, old, eh->e_shnum * sizeof(*sh));
	for (i = eh->e_shnum; i < (size_t)eh->e_shnum + EXTRA; i++) {
		sh[i] = *rela;
		sh[i].sh_offset = region;
		sh[i].sh_size = size;
		sh[i].sh_flags &= ~(uint64_t)SHF_ALLOC;
	}
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	eh->e_shoff = shoff;
	eh->e_shnum += EXTRA;
	cr_assert_eq(pwrite(fd, file, len, 0), (ssize_t)len);
	cr_assert_eq(pwrite(fd, sh, eh->e_shnum * sizeof(*sh), (off_t)shoff),
		     (ssize_t)(eh->e_shnum * sizeof(*sh)));
	cr_assert_eq(ftruncate(fd, (off_t)(region + size)), 0);
	close(fd);
	free(sh);
	free(file);

	bounds_stats(&before);
	rss0 = status_kib("VmHWM:");
	ef = elf_file__open(path);
	cr_assert_not_null(ef, "%s", strerror(errno));
	cr_expect_eq(elf_dtpmod_slot(ef, "fix_version", &slot), 0);
	cr_expect_eq(slot, want, "slot 0x%" PRIx64 ", want 0x%" PRIx64, slot, want);
	cr_expect_lt(elf_file_held(ef), BOUND_RELOC_BYTES + (1U << 20), "%" PRIu64 " bytes held",
		     elf_file_held(ef));
	elf_file__free(ef);
	expect_refused(&before, rss0, 8, BOUND_RELOCS, 1);
	unlink(path);
}
