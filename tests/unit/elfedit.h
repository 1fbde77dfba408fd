/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * elfedit.h - the tests' edits of an ELF file in place, as a hostile tenant makes them: find a
 * section header by type, write it back (a claimed size, a moved offset), each read and write
 * asserted whole; the header of an object made from nothing. For 64-bit little-endian objects
 * such as the fixtures and the test binaries.
 */
#ifndef RP_TEST_ELFEDIT_H
#define RP_TEST_ELFEDIT_H

#include <criterion/criterion.h>
#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static inline void pread_all(int fd, void *buf, size_t len, off_t off)
{
	cr_assert_eq(pread(fd, buf, len, off), (ssize_t)len);
}

static inline void pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	cr_assert_eq(pwrite(fd, buf, len, off), (ssize_t)len);
}

/* The ELF header of a shared object for x86-64, made from nothing: no segments, no sections. */
static inline Elf64_Ehdr elf_header(void)
{
	Elf64_Ehdr eh = {0};

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	return eh;
}

/* The index of the first section of type `type` of the ELF file fd; its header in *out. */
static inline size_t find_section(int fd, uint32_t type, Elf64_Shdr *out)
{
	Elf64_Ehdr eh;
	size_t i;

	pread_all(fd, &eh, sizeof(eh), 0);
	for (i = 1; i < eh.e_shnum; i++) {
		pread_all(fd, out, sizeof(*out), (off_t)(eh.e_shoff + i * eh.e_shentsize));
		if (out->sh_type == type)
			return i;
	}
	cr_assert_fail("no section of type %u", type);
	return 0;
}

static inline void write_section(int fd, size_t idx, const Elf64_Shdr *sh)
{
	Elf64_Ehdr eh;

	pread_all(fd, &eh, sizeof(eh), 0);
	pwrite_all(fd, sh, sizeof(*sh), (off_t)(eh.e_shoff + idx * eh.e_shentsize));
}

#endif
