// SPDX-License-Identifier: GPL-2.0-only
/*
 * elf.c - the ELF reader behind elf.h, on top of libelf.
 *
 * The files come from other processes' mount namespaces and may be anything: truncated, corrupt,
 * replaced while we read. Hence the file is opened with ELF_C_READ (libelf preads what it needs;
 * no mapping that could SIGBUS if the file shrinks), every section is checked against the file
 * size before its data is used, symbol tables and relocation sections must have the entry size and
 * the sh_link type they claim, and strings only come through elf_strptr (which checks the offset
 * and the terminating NUL inside the string table). Nothing here logs: errors go to the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bounds.h"
#include "native/elf.h"

/*
 * A defined, named symbol of one table, in the by-name index. Only the index into the table is
 * kept; the symbol itself is read again on a hit.
 */
struct sym_entry {
	const char *name; /* inside libelf's copy of the string table */
	uint32_t idx;
	uint32_t rank; /* among equal names, lower wins: global, weak, then local */
};

struct sym_table {
	size_t scn_idx; /* 0: the file has no such table */
	/* 0: index not built yet, 1: built, <0: the table is unusable (-errno, not retried). */
	int state;
	struct sym_entry *entries;
	size_t nr_entries;
};

struct elf_file {
	char *path;
	char *shown; /* the path a log line names (elf_file_set_shown), else path */
	uint64_t dev, ino;
	int fd;
	Elf *elf;
	GElf_Ehdr ehdr;
	uint64_t file_size;
	GElf_Phdr *phdrs;
	size_t phnum;
	size_t shnum;
	size_t shstrndx; /* SHN_UNDEF when section names are unavailable */
	struct sym_table dynsym;
	struct sym_table symtab;
	/* What libelf holds of the sections read, and the indexes on them, against
	 * BOUND_HELD_BYTES: this object's own count, or that of the object whose debug file this
	 * is (elf_file_share_budget). charged: a bit per section whose data is counted already. */
	uint64_t held_own;
	uint64_t *held;
	uint8_t *charged;
};

/* A section's header and data, once checked to lie inside the file. */
struct scn_view {
	GElf_Shdr shdr;
	Elf_Data *data;
};

static bool range_in_file(const struct elf_file *ef, uint64_t off, uint64_t size)
{
	return off <= ef->file_size && size <= ef->file_size - off;
}

/* The name of section idx for a log line: its own, or its index. */
static const char *scn_name(struct elf_file *ef, size_t idx, char *buf, size_t len)
{
	Elf_Scn *scn = elf_getscn(ef->elf, idx);
	const char *name = NULL;
	GElf_Shdr shdr, strs;

	/* only a section name table within the bound is read for the name */
	if (scn && gelf_getshdr(scn, &shdr) && ef->shstrndx != SHN_UNDEF &&
	    gelf_getshdr(elf_getscn(ef->elf, ef->shstrndx), &strs) &&
	    strs.sh_size <= BOUND_SECTION_BYTES)
		name = elf_strptr(ef->elf, ef->shstrndx, shdr.sh_name);
	if (name)
		snprintf(buf, len, "section %.64s", name);
	else
		snprintf(buf, len, "section %zu", idx);
	return buf;
}

/* Whether section idx of size bytes is past BOUND_SECTION_BYTES (refused, counted, logged). */
static bool past_bound(struct elf_file *ef, size_t idx, uint64_t size)
{
	char name[96];

	if (size <= BOUND_SECTION_BYTES)
		return false;
	bounds_refuse(BOUND_SECTION, ef->shown ? ef->shown : ef->path, ef->dev, ef->ino,
		      scn_name(ef, idx, name, sizeof(name)), size);
	return true;
}

/*
 * Whether size more bytes held (section idx's data, once; idx 0: an index or a note chunk, each
 * time) pass BOUND_HELD_BYTES with what this object and its debug file hold already: refused,
 * counted, logged. Else counted in.
 */
static bool held_past_bound(struct elf_file *ef, size_t idx, uint64_t size, const char *what)
{
	char name[96], said[160];

	if (idx && idx < ef->shnum && ef->charged && (ef->charged[idx / 8] & (1U << idx % 8)))
		return false;
	/* *held may pass the bound once a debug file's count is added in (elf_file_share_budget) */
	if (*ef->held > BOUND_HELD_BYTES || size > BOUND_HELD_BYTES - *ef->held) {
		if (idx && !what)
			what = scn_name(ef, idx, name, sizeof(name));
		snprintf(said, sizeof(said), "%.64s, with what is held of the object already,",
			 what ? what : "a section");
		bounds_refuse(BOUND_HELD, ef->shown ? ef->shown : ef->path, ef->dev, ef->ino, said,
			      *ef->held + size);
		return true;
	}
	*ef->held += size;
	if (idx && idx < ef->shnum && ef->charged)
		ef->charged[idx / 8] |= (uint8_t)(1U << idx % 8);
	return false;
}

static int scn_view(struct elf_file *ef, size_t idx, struct scn_view *v)
{
	Elf_Scn *scn;

	if (idx == SHN_UNDEF || idx >= ef->shnum)
		return -EINVAL;
	scn = elf_getscn(ef->elf, idx);
	if (!scn || !gelf_getshdr(scn, &v->shdr))
		return -EINVAL;
	if (v->shdr.sh_type == SHT_NOBITS)
		return -ENOENT;
	if (!range_in_file(ef, v->shdr.sh_offset, v->shdr.sh_size))
		return -EINVAL;
	if (past_bound(ef, idx, v->shdr.sh_size) || held_past_bound(ef, idx, v->shdr.sh_size, NULL))
		return -EFBIG;
	v->data = elf_getdata(scn, NULL);
	if (!v->data || !v->data->d_buf || v->data->d_size > v->shdr.sh_size)
		return -EINVAL;
	return 0;
}

/*
 * Whether string table idx (within the bound) ends in a NUL, as every sound one does. libelf's
 * elf_strptr looks for the NUL that ends a name from the table's end backwards, on every call:
 * in a table without one at its end each name costs the table's size, and a symbol table's
 * worth of names costs its size squared (a 2 MiB .dynstr and 100,000 symbols: minutes).
 */
static bool strtab_ends_in_nul(struct elf_file *ef, size_t idx)
{
	Elf_Scn *scn = elf_getscn(ef->elf, idx);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;

	return d && d->d_buf && d->d_size && ((const char *)d->d_buf)[d->d_size - 1] == '\0';
}

/*
 * A symbol table (or any section that claims to be one through a relocation section's sh_link):
 * right type and entry size, and a string table behind its own sh_link. *strndx receives that.
 */
static int symtab_view(struct elf_file *ef, size_t idx, struct scn_view *v, size_t *strndx)
{
	GElf_Shdr strshdr;
	Elf_Scn *strscn;
	int err;

	err = scn_view(ef, idx, v);
	if (err)
		return err;
	if (v->shdr.sh_type != SHT_SYMTAB && v->shdr.sh_type != SHT_DYNSYM)
		return -EINVAL;
	if (v->shdr.sh_entsize != sizeof(Elf64_Sym) || v->data->d_type != ELF_T_SYM)
		return -EINVAL;
	if (v->shdr.sh_link == SHN_UNDEF || v->shdr.sh_link >= ef->shnum)
		return -EINVAL;
	strscn = elf_getscn(ef->elf, v->shdr.sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strshdr) || strshdr.sh_type != SHT_STRTAB)
		return -EINVAL;
	/* elf_strptr reads the string table whole */
	if (past_bound(ef, v->shdr.sh_link, strshdr.sh_size) ||
	    held_past_bound(ef, v->shdr.sh_link, strshdr.sh_size, NULL))
		return -EFBIG;
	if (!strtab_ends_in_nul(ef, v->shdr.sh_link))
		return -EINVAL;
	*strndx = v->shdr.sh_link;
	return 0;
}

static uint32_t sym_rank(const GElf_Sym *sym)
{
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/* Whether a symbol is something a name lookup should return. */
static bool sym_is_defined(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return sym->st_shndx != SHN_UNDEF && type != STT_SECTION && type != STT_FILE;
}

static int sym_entry_cmp(const void *a, const void *b)
{
	const struct sym_entry *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Builds t's by-name index: every defined, named symbol, sorted by name then rank. */
static int sym_table_index(struct elf_file *ef, struct sym_table *t)
{
	struct sym_entry *entries = NULL;
	struct scn_view v;
	size_t strndx, count, n = 0, i;
	int err;

	err = symtab_view(ef, t->scn_idx, &v, &strndx);
	if (err)
		goto cleanup;
	count = v.data->d_size / sizeof(Elf64_Sym);
	if (count > UINT32_MAX) {
		err = -E2BIG;
		goto cleanup;
	}
	if (count > 1 &&
	    held_past_bound(ef, 0, (count - 1) * sizeof(*entries), "its symbol index")) {
		err = -EFBIG;
		goto cleanup;
	}
	if (count > 1) {
		entries = calloc(count - 1, sizeof(*entries));
		if (!entries) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	/* Entry 0 is the reserved null symbol. */
	for (i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(v.data, (int)i, &sym) || !sym_is_defined(&sym) || !sym.st_name)
			continue;
		/* A bad name offset loses that symbol, not the whole table. */
		name = elf_strptr(ef->elf, strndx, sym.st_name);
		if (!name || !*name)
			continue;
		entries[n].name = name;
		entries[n].idx = (uint32_t)i;
		entries[n].rank = sym_rank(&sym);
		n++;
	}
	if (n)
		qsort(entries, n, sizeof(*entries), sym_entry_cmp);
	t->entries = entries;
	t->nr_entries = n;
	entries = NULL;
cleanup:
	free(entries);
	/* Out of memory may pass; a corrupt table stays corrupt. */
	if (err != -ENOMEM)
		t->state = err ? err : 1;
	return err;
}

static int sym_table_find(struct elf_file *ef, struct sym_table *t, enum elf_sym_source source,
			  const char *name, struct elf_sym *out)
{
	struct scn_view v;
	size_t strndx, lo = 0, hi;
	GElf_Sym sym;
	int err;

	if (!t->scn_idx)
		return -ENOENT;
	if (t->state < 0)
		return t->state;
	if (!t->state) {
		err = sym_table_index(ef, t);
		if (err)
			return err;
	}
	/* Lower bound: the first entry named `name`, which is the best ranked one. */
	hi = t->nr_entries;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(t->entries[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->nr_entries || strcmp(t->entries[lo].name, name))
		return -ENOENT;
	err = symtab_view(ef, t->scn_idx, &v, &strndx);
	if (err)
		return err;
	if (!gelf_getsym(v.data, (int)t->entries[lo].idx, &sym))
		return -EINVAL;
	if (out) {
		out->value = sym.st_value;
		out->size = sym.st_size;
		out->type = GELF_ST_TYPE(sym.st_info);
		out->source = source;
	}
	return 0;
}

static bool machine_supported(const GElf_Ehdr *ehdr)
{
	return ehdr->e_machine == EM_X86_64 || ehdr->e_machine == EM_AARCH64;
}

/*
 * libelf quietly shrinks header tables that do not fit in the file (a truncated file reads as one
 * with no sections): the counts it reports must be the ones the ELF header claims, and the tables
 * must lie inside the file.
 */
static int check_header_tables(const struct elf_file *ef)
{
	const GElf_Ehdr *eh = &ef->ehdr;

	/* PN_XNUM: the real count is in section 0's sh_info, only libelf's answer is available. */
	if (eh->e_phnum != PN_XNUM && ef->phnum != eh->e_phnum)
		return -ENOEXEC;
	if (ef->phnum &&
	    (eh->e_phentsize != sizeof(Elf64_Phdr) ||
	     !range_in_file(ef, eh->e_phoff, (uint64_t)ef->phnum * sizeof(Elf64_Phdr))))
		return -ENOEXEC;
	if (!eh->e_shoff)
		return eh->e_shnum || ef->shnum ? -ENOEXEC : 0;
	/* e_shnum 0 with a section header table: the count is in section 0's sh_size. */
	if (eh->e_shnum && ef->shnum != eh->e_shnum)
		return -ENOEXEC;
	if (eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !range_in_file(ef, eh->e_shoff,
			   (uint64_t)(ef->shnum ? ef->shnum : 1) * sizeof(Elf64_Shdr)))
		return -ENOEXEC;
	return 0;
}

/*
 * Reads the headers the rest relies on: the program headers, and every section header (so that a
 * bogus e_shoff or a cut-off section header table refuses the file here, not later).
 */
static int elf_file_load_headers(struct elf_file *ef)
{
	size_t i;
	int err;

	if (elf_kind(ef->elf) != ELF_K_ELF || gelf_getclass(ef->elf) != ELFCLASS64)
		return -ENOEXEC;
	if (!gelf_getehdr(ef->elf, &ef->ehdr))
		return -ENOEXEC;
	if (ef->ehdr.e_ident[EI_DATA] != ELFDATA2LSB || !machine_supported(&ef->ehdr))
		return -ENOEXEC;

	if (elf_getphdrnum(ef->elf, &ef->phnum) || elf_getshdrnum(ef->elf, &ef->shnum))
		return -ENOEXEC;
	err = check_header_tables(ef);
	if (err)
		return err;
	ef->charged = calloc(ef->shnum / 8 + 1, 1);
	if (!ef->charged)
		return -ENOMEM;
	if (ef->phnum) {
		ef->phdrs = calloc(ef->phnum, sizeof(*ef->phdrs));
		if (!ef->phdrs)
			return -ENOMEM;
	}
	for (i = 0; i < ef->phnum; i++) {
		if (!gelf_getphdr(ef->elf, (int)i, &ef->phdrs[i]))
			return -ENOEXEC;
	}

	for (i = 1; i < ef->shnum; i++) {
		Elf_Scn *scn = elf_getscn(ef->elf, i);
		GElf_Shdr shdr;

		if (!scn || !gelf_getshdr(scn, &shdr))
			return -ENOEXEC;
		/* The first table of each kind; a well-formed file has at most one. */
		if (shdr.sh_type == SHT_DYNSYM && !ef->dynsym.scn_idx)
			ef->dynsym.scn_idx = i;
		else if (shdr.sh_type == SHT_SYMTAB && !ef->symtab.scn_idx)
			ef->symtab.scn_idx = i;
	}
	/* Files without section names still have symbols and segments. */
	if (elf_getshdrstrndx(ef->elf, &ef->shstrndx) || ef->shstrndx >= ef->shnum)
		ef->shstrndx = SHN_UNDEF;
	/* section names are read through elf_strptr, which reads their table whole */
	if (ef->shstrndx != SHN_UNDEF) {
		GElf_Shdr strs;

		if (!gelf_getshdr(elf_getscn(ef->elf, ef->shstrndx), &strs) ||
		    strs.sh_type != SHT_STRTAB || past_bound(ef, ef->shstrndx, strs.sh_size) ||
		    held_past_bound(ef, ef->shstrndx, strs.sh_size, NULL) ||
		    !strtab_ends_in_nul(ef, ef->shstrndx))
			ef->shstrndx = SHN_UNDEF;
	}
	return 0;
}

/*
 * The section count the file claims, before libelf sees it (elf_begin makes a structure for each
 * claimed section): e_shnum, or with e_shnum 0 section 0's sh_size, at most BOUND_SECTION_COUNT
 * (past it refused: counted and logged). 0, or -ENOEXEC. What else
 * the headers say is checked once libelf has read them (elf_file_load_headers).
 */
static int section_count_within_bound(struct elf_file *ef)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	uint64_t n;

	if (pread(ef->fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || !eh.e_shoff)
		return 0; /* not ELF64, or no sections: libelf says what it is */
	n = eh.e_shnum;
	if (!n) {
		if (pread(ef->fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff) != (ssize_t)sizeof(sh0))
			return 0; /* a table outside the file: refused by the header checks */
		n = sh0.sh_size;
	}
	if (n <= BOUND_SECTION_COUNT)
		return 0;
	bounds_refuse(BOUND_SECTIONS, ef->shown ? ef->shown : ef->path, ef->dev, ef->ino,
		      "the section header table", n);
	return -ENOEXEC;
}

struct elf_file *elf_file__open(const char *path)
{
	return elf_file__open_shown(path, NULL);
}

struct elf_file *elf_file__open_shown(const char *path, const char *shown)
{
	struct elf_file *ef;
	struct stat st;
	int err;

	ef = calloc(1, sizeof(*ef));
	if (!ef)
		return NULL;
	ef->fd = -1;
	ef->held = &ef->held_own;
	ef->path = strdup(path);
	ef->shown = shown ? strdup(shown) : NULL;
	if (!ef->path || (shown && !ef->shown)) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* O_NONBLOCK: a FIFO planted at the path must not hang us; no effect on regular files. */
	ef->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (ef->fd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (fstat(ef->fd, &st)) {
		err = -errno;
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	ef->file_size = (uint64_t)st.st_size;
	ef->dev = (uint64_t)st.st_dev;
	ef->ino = (uint64_t)st.st_ino;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = section_count_within_bound(ef);
	if (err)
		goto cleanup;
	ef->elf = elf_begin(ef->fd, ELF_C_READ, NULL);
	if (!ef->elf) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = elf_file_load_headers(ef);
cleanup:
	if (err) {
		elf_file__free(ef);
		errno = -err;
		return NULL;
	}
	return ef;
}

struct elf_file *elf_file__open_fd(int fd, const char *shown)
{
	char link[64];

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	return elf_file__open_shown(link, shown);
}

void elf_file__free(struct elf_file *ef)
{
	if (!ef)
		return;
	free(ef->dynsym.entries);
	free(ef->symtab.entries);
	free(ef->phdrs);
	free(ef->charged);
	if (ef->elf)
		elf_end(ef->elf);
	if (ef->fd >= 0)
		close(ef->fd);
	free(ef->path);
	free(ef->shown);
	free(ef);
}

const char *elf_file_path(const struct elf_file *ef)
{
	return ef->path;
}

int elf_file_fd(const struct elf_file *ef)
{
	return ef->fd;
}

int elf_file_type(const struct elf_file *ef)
{
	return ef->ehdr.e_type;
}

void elf_file_share_budget(struct elf_file *dbg, struct elf_file *ef)
{
	if (!dbg || !ef || dbg->held == ef->held)
		return;
	/* what the debug file holds already (its notes, the section names) counts too */
	*ef->held += *dbg->held;
	dbg->held = ef->held;
}

uint64_t elf_file_held(const struct elf_file *ef)
{
	return *ef->held;
}

int elf_find_symbol_in(struct elf_file *ef, enum elf_sym_source table, const char *name,
		       struct elf_sym *out)
{
	switch (table) {
	case ELF_SYM_DYNSYM:
		return sym_table_find(ef, &ef->dynsym, table, name, out);
	case ELF_SYM_SYMTAB:
		return sym_table_find(ef, &ef->symtab, table, name, out);
	}
	return -EINVAL;
}

int elf_find_symbol(struct elf_file *ef, const char *name, struct elf_sym *out)
{
	int err_dyn, err;

	err_dyn = elf_find_symbol_in(ef, ELF_SYM_DYNSYM, name, out);
	if (!err_dyn)
		return 0;
	/* A corrupt .dynsym does not hide .symtab. */
	err = elf_find_symbol_in(ef, ELF_SYM_SYMTAB, name, out);
	if (!err)
		return 0;
	/* -ENOENT only when neither table could have had it. */
	return err_dyn != -ENOENT ? err_dyn : err;
}

bool elf_has_symtab(struct elf_file *ef)
{
	return ef->symtab.scn_idx != 0;
}

int elf_tls_segment(struct elf_file *ef, struct elf_tls *out)
{
	size_t i;

	for (i = 0; i < ef->phnum; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];

		if (ph->p_type != PT_TLS)
			continue;
		out->vaddr = ph->p_vaddr;
		out->filesz = ph->p_filesz;
		out->memsz = ph->p_memsz;
		out->align = ph->p_align;
		return 0;
	}
	return -ENOENT;
}

static uint32_t dtpmod_reloc_type(const struct elf_file *ef)
{
	return ef->ehdr.e_machine == EM_AARCH64 ? R_AARCH64_TLS_DTPMOD : R_X86_64_DTPMOD64;
}

/* Preference of a DTPMOD relocation, lower is better; -1 when it is not this file's module id. */
enum {
	DTPMOD_NAMED = 0,
	DTPMOD_NO_SYMBOL = 1,
	DTPMOD_OWN_TLS = 2,
};

static int dtpmod_rank(struct elf_file *ef, const struct scn_view *syms, size_t strndx,
		       size_t sym_idx, const char *sym_name)
{
	const char *name;
	GElf_Sym sym;

	if (!sym_idx)
		return DTPMOD_NO_SYMBOL;
	if (!syms->data || sym_idx > INT32_MAX || !gelf_getsym(syms->data, (int)sym_idx, &sym))
		return -1;
	/* Against an undefined symbol, the slot gets another module's id. */
	if (sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) != STT_TLS)
		return -1;
	if (sym_name) {
		name = elf_strptr(ef->elf, strndx, sym.st_name);
		if (name && !strcmp(name, sym_name))
			return DTPMOD_NAMED;
	}
	return DTPMOD_OWN_TLS;
}

/* The slot of the best relocation of type `want` (dtpmod_rank's order; named_only: only one
 * against sym_name). */
static int tls_reloc_slot(struct elf_file *ef, uint32_t want, const char *sym_name, bool named_only,
			  uint64_t *slot_vaddr)
{
	uint64_t total = 0;
	int best = -1;
	size_t i;

	for (i = 1; i < ef->shnum && best != DTPMOD_NAMED; i++) {
		struct scn_view rel, syms = {0};
		size_t strndx = SHN_UNDEF, j, count;
		GElf_Shdr sh;

		/* the type first: a section's data is read only when it is a relocation table */
		if (!gelf_getshdr(elf_getscn(ef->elf, i), &sh) || sh.sh_type != SHT_RELA)
			continue;
		/* every entry is looked at: the tables all together are bounded (time, not only
		 * memory) */
		if (sh.sh_size > BOUND_RELOC_BYTES - total) {
			bounds_refuse(BOUND_RELOCS, ef->shown ? ef->shown : ef->path, ef->dev,
				      ef->ino, "the relocation tables (all together)",
				      total + sh.sh_size);
			break;
		}
		total += sh.sh_size;
		if (scn_view(ef, i, &rel) || rel.shdr.sh_type != SHT_RELA)
			continue;
		if (rel.shdr.sh_entsize != sizeof(Elf64_Rela) || rel.data->d_type != ELF_T_RELA)
			continue;
		/* Without a usable symbol table, only symbol-less relocations can be judged. */
		if (symtab_view(ef, rel.shdr.sh_link, &syms, &strndx))
			syms.data = NULL;
		count = rel.data->d_size / sizeof(Elf64_Rela);
		for (j = 0; j < count && j <= INT32_MAX; j++) {
			GElf_Rela rela;
			int rank;

			if (!gelf_getrela(rel.data, (int)j, &rela))
				break;
			if (GELF_R_TYPE(rela.r_info) != want)
				continue;
			rank = dtpmod_rank(ef, &syms, strndx, GELF_R_SYM(rela.r_info), sym_name);
			if (rank < 0 || (best >= 0 && rank >= best) ||
			    (named_only && rank != DTPMOD_NAMED))
				continue;
			best = rank;
			*slot_vaddr = rela.r_offset;
			if (best == DTPMOD_NAMED)
				break;
		}
	}
	return best < 0 ? -ENOENT : 0;
}

int elf_dtpmod_slot(struct elf_file *ef, const char *sym_name, uint64_t *slot_vaddr)
{
	return tls_reloc_slot(ef, dtpmod_reloc_type(ef), sym_name, false, slot_vaddr);
}

int elf_tlsdesc_slot(struct elf_file *ef, const char *sym_name, uint64_t *slot_vaddr)
{
	return tls_reloc_slot(
		ef, ef->ehdr.e_machine == EM_AARCH64 ? R_AARCH64_TLSDESC : R_X86_64_TLSDESC,
		sym_name, true, slot_vaddr);
}

int elf_tpoff_slot(struct elf_file *ef, const char *sym_name, uint64_t *slot_vaddr)
{
	return tls_reloc_slot(
		ef, ef->ehdr.e_machine == EM_AARCH64 ? R_AARCH64_TLS_TPREL : R_X86_64_TPOFF64,
		sym_name, true, slot_vaddr);
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* The file shrank under us. */
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int elf_read_vaddr(struct elf_file *ef, uint64_t vaddr, void *buf, size_t len)
{
	size_t i;

	if (vaddr + len < vaddr)
		return -EFAULT;
	for (i = 0; i < ef->phnum; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];
		uint64_t rel, in_file;
		int err;

		if (ph->p_type != PT_LOAD || vaddr < ph->p_vaddr)
			continue;
		rel = vaddr - ph->p_vaddr;
		if (rel > ph->p_memsz || len > ph->p_memsz - rel)
			continue;
		if (ph->p_filesz > ph->p_memsz || !range_in_file(ef, ph->p_offset, ph->p_filesz))
			return -EIO;
		in_file = rel < ph->p_filesz ? ph->p_filesz - rel : 0;
		if (in_file > len)
			in_file = len;
		if (in_file) {
			err = pread_full(ef->fd, buf, in_file, ph->p_offset + rel);
			if (err)
				return err;
		}
		/* Past p_filesz is .bss: zeros in memory, absent from the file. */
		memset((char *)buf + in_file, 0, len - in_file);
		return 0;
	}
	return -EFAULT;
}

int elf_offset_to_vaddr(struct elf_file *ef, uint64_t off, uint64_t *vaddr)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t mask = page > 0 ? (uint64_t)page - 1 : 4095;
	const GElf_Phdr *hit = NULL;
	size_t i;

	/*
	 * A mapping starts at its segment's p_offset rounded down to a page. When segments share a
	 * page (packed layouts), that offset also lies inside the previous segment, whose bias can
	 * differ: a segment that starts exactly at `off` wins over one that merely contains it.
	 */
	for (i = 0; i < ef->phnum; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];
		uint64_t start = ph->p_offset & ~mask;

		if (ph->p_type != PT_LOAD || !ph->p_filesz)
			continue;
		if (ph->p_offset + ph->p_filesz < ph->p_offset)
			continue;
		if (off < start || off >= ph->p_offset + ph->p_filesz)
			continue;
		if (off == start) {
			hit = ph;
			break;
		}
		if (!hit)
			hit = ph;
	}
	if (!hit)
		return -ENOENT;
	*vaddr = hit->p_vaddr - hit->p_offset + off;
	return 0;
}

/* Finds NT_GNU_BUILD_ID in a note buffer; 0 and its descriptor, or -ENOENT. */
static int note_build_id(Elf_Data *data, const unsigned char **desc, size_t *desc_len)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	while (off < data->d_size) {
		next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off);
		if (!next)
			break;
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == sizeof(ELF_NOTE_GNU) &&
		    !memcmp((const char *)data->d_buf + name_off, ELF_NOTE_GNU,
			    sizeof(ELF_NOTE_GNU)) &&
		    nhdr.n_descsz) {
			*desc = (const unsigned char *)data->d_buf + desc_off;
			*desc_len = nhdr.n_descsz;
			return 0;
		}
		off = next;
	}
	return -ENOENT;
}

static int build_id_hex(const unsigned char *desc, size_t desc_len, char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	if (!len || desc_len > (len - 1) / 2)
		return -ENOSPC;
	for (i = 0; i < desc_len; i++) {
		buf[2 * i] = hex[desc[i] >> 4];
		buf[2 * i + 1] = hex[desc[i] & 0xf];
	}
	buf[2 * desc_len] = '\0';
	return 0;
}

/*
 * Whether the notes read so far (*total) and size more pass BOUND_SECTION_BYTES, all notes of
 * the object together: each note is within the bound, but a file may claim thousands of them
 * (program headers or sections), each read and kept by libelf until the file is closed (300
 * PT_NOTE headers of 8 MiB: 2.4 GiB and seconds of the main loop). Past it refused, counted,
 * logged; else *total grows.
 */
static bool notes_past_bound(struct elf_file *ef, uint64_t *total, uint64_t size)
{
	if (size <= BOUND_SECTION_BYTES - *total) {
		*total += size;
		return false;
	}
	bounds_refuse(BOUND_SECTION, ef->shown ? ef->shown : ef->path, ef->dev, ef->ino,
		      "the notes (all together)", *total + size);
	return true;
}

int elf_build_id(struct elf_file *ef, char *buf, size_t len)
{
	const unsigned char *desc;
	uint64_t total = 0;
	size_t desc_len, i;

	if (!len)
		return -ENOSPC;
	/* The loaded notes first: they are what a running process has. */
	for (i = 0; i < ef->phnum; i++) {
		const GElf_Phdr *ph = &ef->phdrs[i];
		Elf_Data *data;

		if (ph->p_type != PT_NOTE || !range_in_file(ef, ph->p_offset, ph->p_filesz) ||
		    ph->p_filesz > BOUND_SECTION_BYTES)
			continue;
		if (notes_past_bound(ef, &total, ph->p_filesz) ||
		    held_past_bound(ef, 0, ph->p_filesz, "a note segment"))
			return -EFBIG;
		data = elf_getdata_rawchunk(ef->elf, (int64_t)ph->p_offset, ph->p_filesz,
					    ph->p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (data && !note_build_id(data, &desc, &desc_len))
			return build_id_hex(desc, desc_len, buf, len);
	}
	for (i = 1; i < ef->shnum; i++) {
		Elf_Scn *scn = elf_getscn(ef->elf, i);
		struct scn_view v;
		GElf_Shdr sh;

		/* the type and the size before scn_view reads the section (one past the bound is
		 * scn_view's to refuse) */
		if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (sh.sh_size <= BOUND_SECTION_BYTES && notes_past_bound(ef, &total, sh.sh_size))
			return -EFBIG;
		if (scn_view(ef, i, &v))
			continue;
		if (v.data->d_type != ELF_T_NHDR && v.data->d_type != ELF_T_NHDR8)
			continue;
		if (!note_build_id(v.data, &desc, &desc_len))
			return build_id_hex(desc, desc_len, buf, len);
	}
	return -ENOENT;
}

/* Index of the section called `name`, or 0. */
static size_t section_by_name(struct elf_file *ef, const char *name)
{
	size_t i;

	if (ef->shstrndx == SHN_UNDEF)
		return 0;
	for (i = 1; i < ef->shnum; i++) {
		Elf_Scn *scn = elf_getscn(ef->elf, i);
		const char *sname;
		GElf_Shdr shdr;

		if (!scn || !gelf_getshdr(scn, &shdr))
			continue;
		sname = elf_strptr(ef->elf, ef->shstrndx, shdr.sh_name);
		if (sname && !strcmp(sname, name))
			return i;
	}
	return 0;
}

int elf_debuglink(struct elf_file *ef, char *name, size_t len, uint32_t *crc)
{
	const unsigned char *p;
	struct scn_view v;
	size_t idx, name_len, crc_off;
	int err;

	idx = section_by_name(ef, ".gnu_debuglink");
	if (!idx)
		return -ENOENT;
	err = scn_view(ef, idx, &v);
	if (err)
		return err == -ENOENT ? err : -EINVAL;
	p = v.data->d_buf;
	/* The name, NUL-terminated, padded to 4 bytes, then the CRC32 of the debug file. */
	name_len = strnlen((const char *)p, v.data->d_size);
	if (!name_len || name_len == v.data->d_size)
		return -EINVAL;
	crc_off = (name_len + 1 + 3) & ~(size_t)3;
	if (crc_off > v.data->d_size || v.data->d_size - crc_off < 4)
		return -EINVAL;
	if (name_len >= len)
		return -ENOSPC;
	memcpy(name, p, name_len + 1);
	if (crc) {
		/* Only little-endian files are opened. */
		*crc = (uint32_t)p[crc_off] | (uint32_t)p[crc_off + 1] << 8 |
		       (uint32_t)p[crc_off + 2] << 16 | (uint32_t)p[crc_off + 3] << 24;
	}
	return 0;
}

int elf_section(struct elf_file *ef, const char *name, uint64_t *vaddr, uint64_t *size)
{
	Elf_Scn *scn;
	GElf_Shdr shdr;
	size_t idx;

	idx = section_by_name(ef, name);
	if (!idx)
		return -ENOENT;
	scn = elf_getscn(ef->elf, idx);
	if (!scn || !gelf_getshdr(scn, &shdr))
		return -EINVAL;
	*vaddr = shdr.sh_addr;
	*size = shdr.sh_size;
	return 0;
}
