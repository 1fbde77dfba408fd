/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * elf.h - reads what rubyprofd needs from an ELF file on disk (libelf): symbols from .dynsym and
 * .symtab (TLS symbols included), the TLS segment, the GOT slot of a TLS module id relocation,
 * bytes at a virtual address, build id and .gnu_debuglink, and the vaddr of a file offset (for the
 * load bias of a mapping). No process memory is touched here.
 */
#ifndef RP_ELF_H
#define RP_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_file;

/* Where a symbol was found. */
enum elf_sym_source {
	ELF_SYM_DYNSYM = 1,
	ELF_SYM_SYMTAB = 2,
};

struct elf_sym {
	uint64_t value; /* st_value: a vaddr, or the offset in the TLS block for STT_TLS */
	uint64_t size;
	int type; /* STT_* */
	enum elf_sym_source source;
};

struct elf_tls {
	uint64_t vaddr; /* PT_TLS p_vaddr */
	uint64_t filesz;
	uint64_t memsz;
	uint64_t align;
};

/* Opens and checks path (ELF64, x86_64 or aarch64). NULL with errno set (ENOEXEC: not a usable ELF). */
struct elf_file *elf_file__open(const char *path);
/* The same, with the path that log lines name for it (the target's view of the file: shown). */
struct elf_file *elf_file__open_shown(const char *path, const char *shown);
/* The same on a file the caller opened (procs_open_in_root), through its /proc/self/fd link: ef
 * has a descriptor of its own, fd stays the caller's. shown: its path in the target's root. */
struct elf_file *elf_file__open_fd(int fd, const char *shown);
void elf_file__free(struct elf_file *ef);

/*
 * dbg, the separate debug file of ef, holds its sections in memory against the same
 * BOUND_HELD_BYTES as ef (what it holds already counted in): an object and its debug file
 * together, not each on its own. ef must outlive dbg.
 */
void elf_file_share_budget(struct elf_file *dbg, struct elf_file *ef);

/* The bytes counted against BOUND_HELD_BYTES so far (ef's, with its debug file's if shared). */
uint64_t elf_file_held(const struct elf_file *ef);

const char *elf_file_path(const struct elf_file *ef);
/* The open file's descriptor (owned by ef). */
int elf_file_fd(const struct elf_file *ef);
/* ET_EXEC, ET_DYN... */
int elf_file_type(const struct elf_file *ef);

/* Defined symbol `name`: .dynsym first, then .symtab. 0, -ENOENT, or -errno. */
int elf_find_symbol(struct elf_file *ef, const char *name, struct elf_sym *out);
/* Same, but only in the given table. */
int elf_find_symbol_in(struct elf_file *ef, enum elf_sym_source table, const char *name,
		       struct elf_sym *out);
/* Whether the file has a .symtab. */
bool elf_has_symtab(struct elf_file *ef);

/* The PT_TLS segment. 0, or -ENOENT when the file has no TLS. */
int elf_tls_segment(struct elf_file *ef, struct elf_tls *out);

/*
 * vaddr of the GOT slot that the dynamic loader fills with this file's TLS module id: an
 * R_X86_64_DTPMOD64 (R_AARCH64_TLS_DTPMOD) relocation in .rela.dyn. Preference: the relocation
 * against `sym_name` (may be NULL), then one with no symbol (local-dynamic), then one against any
 * TLS symbol defined in this file. 0 or -ENOENT.
 */
int elf_dtpmod_slot(struct elf_file *ef, const char *sym_name, uint64_t *slot_vaddr);
/* The GOT pair of a TLSDESC relocation against sym_name (R_X86_64_TLSDESC, R_AARCH64_TLSDESC),
 * which the loader fills with {resolver, argument}. 0 or -ENOENT. */
int elf_tlsdesc_slot(struct elf_file *ef, const char *sym_name, uint64_t *slot_vaddr);
/* The GOT slot of an initial-exec relocation against sym_name (R_X86_64_TPOFF64,
 * R_AARCH64_TLS_TPREL), which the loader fills with its offset from the thread pointer. */
int elf_tpoff_slot(struct elf_file *ef, const char *sym_name, uint64_t *slot_vaddr);

/* Copies len bytes at vaddr from the file's PT_LOAD contents (.bss reads as zeros). 0 or -errno. */
int elf_read_vaddr(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len);

/* vaddr that file offset `off` of a PT_LOAD segment is mapped at. 0 or -ENOENT. */
int elf_offset_to_vaddr(struct elf_file *ef, uint64_t off, uint64_t *vaddr);

/* NT_GNU_BUILD_ID as lowercase hex in buf (at least 41 bytes for SHA-1). 0 or -ENOENT. */
int elf_build_id(struct elf_file *ef, char *buf, size_t len);

/* .gnu_debuglink file name and CRC. 0 or -ENOENT. */
int elf_debuglink(struct elf_file *ef, char *name, size_t len, uint32_t *crc);

/* Start vaddr and size of the section `name` (e.g. ".text"). 0 or -ENOENT. */
int elf_section(struct elf_file *ef, const char *name, uint64_t *vaddr, uint64_t *size);

#endif
