// SPDX-License-Identifier: GPL-2.0-only
/*
 * elfcache.c - ELF objects parsed once and shared by every process's unwinder.
 *
 * An object is never mapped (a target that truncates its mapped library would make a read of
 * the mapping die of SIGBUS), nor read whole (a sparse file claims any size for a few KiB of
 * disk): only the parts that unwinding and naming frames read (headers, CFI, symbol tables and
 * their strings, notes, .gnu_debuglink, .dynamic) are copied, by pread, into a sealed memory
 * file of ours, the rest of its sections turned into SHT_NOBITS; libelf maps that image. The
 * parts are checked against BOUND_OBJECT_BYTES before any is read, and the image against the
 * cache's byte bound.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bounds.h"
#include "native/elfcache.h"

/* GNU build ids are 20 bytes (SHA-1); longer ones are keyed by their first 32. */
#define BUILD_ID_MAX 32

struct elfcache_obj {
	Elf *elf; /* our reference: every holder has its own (elf_begin on it) */
	uint64_t refs;
	/* the file's identity: how a second open of the same file is found before parsing it */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint64_t bytes; /* of its image */
	size_t id_len;	/* 0: no build id */
	unsigned char id[BUILD_ID_MAX];
	char id_hex[2 * BUILD_ID_MAX + 1];
};

struct elfcache {
	struct elfcache_obj **objs;
	size_t n, max;
	uint64_t max_bytes;
	struct elfcache_stats stats;
};

struct elfcache *elfcache__new(size_t max, uint64_t max_bytes)
{
	struct elfcache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max = max ? max : ELFCACHE_MAX_DEFAULT;
	c->max_bytes = max_bytes ? max_bytes : ELFCACHE_BYTES_DEFAULT;
	c->objs = calloc(c->max, sizeof(*c->objs));
	if (!c->objs) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	elf_version(EV_CURRENT);
	return c;
}

void elfcache_set_max_bytes(struct elfcache *c, uint64_t max_bytes)
{
	c->max_bytes = max_bytes ? max_bytes : ELFCACHE_BYTES_DEFAULT;
}

static void obj_free(struct elfcache_obj *o)
{
	if (!o)
		return;
	if (o->elf)
		elf_end(o->elf);
	free(o);
}

void elfcache__free(struct elfcache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		obj_free(c->objs[i]);
	free(c->objs);
	free(c);
}

static bool same_file(const struct elfcache_obj *o, const struct stat *st)
{
	return o->dev == st->st_dev && o->ino == st->st_ino && o->size == st->st_size &&
	       o->mtime.tv_sec == st->st_mtim.tv_sec && o->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static struct elfcache_obj *hit(struct elfcache *c, struct elfcache_obj *o, int fd)
{
	if (fd >= 0)
		close(fd);
	o->refs++;
	c->stats.hits++;
	return o;
}

/* ---- the image: the parts of an object the unwinder reads, in a memory file of ours ------- */

/* Sections (BOUND_SECTION_COUNT) and program headers an image takes at most: Debian's shared
 * objects have 25-40 sections and 10-12 program headers. */
#define IMAGE_SHNUM_MAX BOUND_SECTION_COUNT
#define IMAGE_PHNUM_MAX 1024
/* pread and write in pieces of this size: no buffer sized by the file */
#define IMAGE_CHUNK	65536

/* A range of the file copied into the image: at `to` there. */
struct image_part {
	uint64_t from, size, to;
};

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO; /* shorter than fstat said: changed while read */
		done += (size_t)n;
	}
	return 0;
}

static int pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static bool in_file(uint64_t off, uint64_t size, uint64_t file_size)
{
	return off <= file_size && size <= file_size - off;
}

/* Section names an unwinder reads whatever their type (.eh_frame is SHT_X86_64_UNWIND for some
 * linkers). */
static bool wanted_name(const char *name)
{
	static const char *const names[] = {".eh_frame", ".eh_frame_hdr", ".debug_frame",
					    ".gnu_debuglink"};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i]))
			return true;
	}
	return false;
}

static bool wanted_type(uint32_t type)
{
	return type == SHT_SYMTAB || type == SHT_DYNSYM || type == SHT_NOTE ||
	       type == SHT_DYNAMIC || type == SHT_SYMTAB_SHNDX;
}

/* Copies [from, from + size) of in to `to` of out. */
static int copy_range(int in, int out, uint64_t from, uint64_t size, uint64_t to)
{
	char buf[IMAGE_CHUNK];
	uint64_t done = 0;
	size_t n;
	int err;

	while (done < size) {
		n = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
		err = pread_full(in, buf, n, from + done);
		if (!err)
			err = pwrite_full(out, buf, n, to + done);
		if (err)
			return err;
		done += n;
	}
	return 0;
}

/* The image's offset of file range [off, off + size) when a part holds it whole; else none. */
static bool part_of(const struct image_part *parts, size_t n, uint64_t off, uint64_t size,
		    uint64_t *to)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (off >= parts[i].from && size <= parts[i].size &&
		    off - parts[i].from <= parts[i].size - size) {
			*to = parts[i].to + (off - parts[i].from);
			return true;
		}
	}
	return false;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

int elfcache_image(int fd, const struct stat *st, uint64_t max, uint64_t *bytes, uint64_t *needed)
{
	uint64_t size = (uint64_t)st->st_size, at, want, shoff, phoff, to;
	Elf64_Shdr *sh = NULL, sh0;
	Elf64_Phdr *ph = NULL;
	struct image_part *parts = NULL;
	size_t shnum, phnum, shstrndx, nparts = 0, i;
	char *names = NULL;
	bool *keep = NULL;
	Elf64_Ehdr eh;
	int out = -1, err;

	*bytes = *needed = 0;
	if (size < sizeof(eh)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	err = pread_full(fd, &eh, sizeof(eh), 0);
	if (err)
		goto cleanup;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ehsize < sizeof(eh) ||
	    (eh.e_phnum && eh.e_phentsize != sizeof(Elf64_Phdr)) ||
	    (eh.e_shoff && eh.e_shentsize != sizeof(Elf64_Shdr))) {
		err = -ENOEXEC;
		goto cleanup;
	}
	/* Extended numbering: 0 sections (or PN_XNUM program headers, or SHN_XINDEX as the name
	 * table's index) says the real figure is in section 0's header. */
	shnum = eh.e_shnum;
	phnum = eh.e_phnum;
	shstrndx = eh.e_shstrndx;
	memset(&sh0, 0, sizeof(sh0));
	if (eh.e_shoff) {
		if (!in_file(eh.e_shoff, sizeof(sh0), size)) {
			err = -ENOEXEC;
			goto cleanup;
		}
		err = pread_full(fd, &sh0, sizeof(sh0), eh.e_shoff);
		if (err)
			goto cleanup;
		if (!shnum)
			shnum = sh0.sh_size > IMAGE_SHNUM_MAX ? IMAGE_SHNUM_MAX + 1 : sh0.sh_size;
		if (shstrndx == SHN_XINDEX)
			shstrndx = sh0.sh_link;
		if (phnum == PN_XNUM)
			phnum = sh0.sh_info;
	} else {
		shnum = 0;
	}
	if (shnum > IMAGE_SHNUM_MAX) {
		*needed = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
		err = -E2BIG;
		goto cleanup;
	}
	if (phnum > IMAGE_PHNUM_MAX || !in_file(eh.e_shoff, (uint64_t)shnum * sizeof(*sh), size) ||
	    !in_file(eh.e_phoff, (uint64_t)phnum * sizeof(*ph), size)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	sh = calloc(shnum ? shnum : 1, sizeof(*sh));
	ph = calloc(phnum ? phnum : 1, sizeof(*ph));
	keep = calloc(shnum ? shnum : 1, sizeof(*keep));
	parts = calloc(shnum + phnum + 1, sizeof(*parts));
	if (!sh || !ph || !keep || !parts) {
		err = -ENOMEM;
		goto cleanup;
	}
	if ((shnum && (err = pread_full(fd, sh, shnum * sizeof(*sh), eh.e_shoff))) ||
	    (phnum && (err = pread_full(fd, ph, phnum * sizeof(*ph), eh.e_phoff))))
		goto cleanup;
	want = sizeof(eh) + phnum * sizeof(*ph) + shnum * sizeof(*sh);
	/* the section names first: which sections are wanted */
	if (shstrndx && shstrndx < shnum && sh[shstrndx].sh_type == SHT_STRTAB &&
	    in_file(sh[shstrndx].sh_offset, sh[shstrndx].sh_size, size) && sh[shstrndx].sh_size &&
	    sh[shstrndx].sh_size <= max) {
		names = malloc(sh[shstrndx].sh_size + 1);
		if (!names) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = pread_full(fd, names, sh[shstrndx].sh_size, sh[shstrndx].sh_offset);
		if (err)
			goto cleanup;
		names[sh[shstrndx].sh_size] = '\0';
		keep[shstrndx] = true;
	}
	for (i = 1; i < shnum; i++) {
		if (sh[i].sh_type == SHT_NOBITS || !sh[i].sh_size)
			continue;
		if (wanted_type(sh[i].sh_type) || (names && sh[i].sh_name < sh[shstrndx].sh_size &&
						   wanted_name(names + sh[i].sh_name)))
			keep[i] = true;
	}
	/* and the string tables that the symbol tables and .dynamic name */
	for (i = 1; i < shnum; i++) {
		if (keep[i] &&
		    (sh[i].sh_type == SHT_SYMTAB || sh[i].sh_type == SHT_DYNSYM ||
		     sh[i].sh_type == SHT_DYNAMIC) &&
		    sh[i].sh_link && sh[i].sh_link < shnum &&
		    sh[sh[i].sh_link].sh_type == SHT_STRTAB)
			keep[sh[i].sh_link] = true;
	}
	/* a section that is not in the file (a truncated one) is not kept */
	for (i = 1; i < shnum; i++) {
		if (keep[i] && !in_file(sh[i].sh_offset, sh[i].sh_size, size))
			keep[i] = false;
		if (keep[i])
			want += sh[i].sh_size + 16;
	}
	*needed = want;
	if (want > max) {
		err = -EFBIG;
		goto cleanup;
	}
	/* the layout: header, program headers, the kept sections, the section headers */
	at = sizeof(eh);
	phoff = phnum ? at : 0;
	at += phnum * sizeof(*ph);
	for (i = 1; i < shnum; i++) {
		uint64_t a = sh[i].sh_addralign;

		if (!keep[i])
			continue;
		a = a < 8 || (a & (a - 1)) ? 8 : a > 16 ? 16 : a;
		at = align_up(at, a);
		parts[nparts++] = (struct image_part){sh[i].sh_offset, sh[i].sh_size, at};
		at += sh[i].sh_size;
	}
	/* segments the headers point at (PT_NOTE, PT_GNU_EH_FRAME, PT_DYNAMIC) keep their place
	 * where a kept section holds them; elsewhere they are not read (their p_offset stays, past
	 * the image: a reader is refused) */
	for (i = 0; i < phnum; i++) {
		if (ph[i].p_type != PT_LOAD && ph[i].p_filesz &&
		    part_of(parts, nparts, ph[i].p_offset, ph[i].p_filesz, &to))
			ph[i].p_offset = to;
	}
	at = align_up(at, 8);
	shoff = shnum ? at : 0;
	at += shnum * sizeof(*sh);

	out = memfd_create("rubyprofd-elf", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (out < 0 || ftruncate(out, (off_t)at)) {
		err = -errno;
		goto cleanup;
	}
	for (i = 0; i < nparts; i++) {
		err = copy_range(fd, out, parts[i].from, parts[i].size, parts[i].to);
		if (err)
			goto cleanup;
	}
	/* every string table ends in a NUL (a no-op for a sound one): libelf's elf_strptr looks
	 * for the NUL that ends a name from the table's end backwards, on every call, so a table
	 * without one at its end costs its size per symbol name looked up */
	for (i = 1, nparts = 0; i < shnum; i++) {
		if (!keep[i])
			continue;
		if (sh[i].sh_type == SHT_STRTAB &&
		    (err = pwrite_full(out, "", 1, parts[nparts].to + sh[i].sh_size - 1)))
			goto cleanup;
		nparts++;
	}
	for (i = 1, nparts = 0; i < shnum; i++) {
		if (keep[i]) {
			sh[i].sh_offset = parts[nparts++].to;
		} else if (sh[i].sh_type != SHT_NOBITS) {
			/* not read: a section with no bytes in the image */
			sh[i].sh_type = SHT_NOBITS;
		}
	}
	eh.e_phoff = phoff;
	eh.e_shoff = shoff;
	if ((err = pwrite_full(out, &eh, sizeof(eh), 0)) ||
	    (phnum && (err = pwrite_full(out, ph, phnum * sizeof(*ph), phoff))) ||
	    (shnum && (err = pwrite_full(out, sh, shnum * sizeof(*sh), shoff))))
		goto cleanup;
	/* no one, this process included, can make it shorter under a mapping of it */
	if (fcntl(out, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		err = -errno;
		goto cleanup;
	}
	*bytes = at;
	err = 0;
cleanup:
	free(sh);
	free(ph);
	free(keep);
	free(parts);
	free(names);
	if (err) {
		if (out >= 0)
			close(out);
		return err;
	}
	return out;
}

uint64_t elfcache_image_cost(int img, uint64_t bytes)
{
	Elf64_Shdr sh0;
	Elf64_Ehdr eh;
	uint64_t n;

	/* our own image: its header is sound, extended numbering kept as the object had it */
	if (pread_full(img, &eh, sizeof(eh), 0) || !eh.e_shoff)
		return bytes;
	n = eh.e_shnum;
	if (!n && !pread_full(img, &sh0, sizeof(sh0), eh.e_shoff))
		n = sh0.sh_size;
	if (n > IMAGE_SHNUM_MAX)
		n = IMAGE_SHNUM_MAX;
	return bytes + n * ELFCACHE_SECTION_COST;
}

/*
 * The image of fd's object (elfcache_image) as an Elf, after the bounds: the object's own, and
 * the cache's total. NULL with errno (EFBIG, ENOSPC, ENOEXEC, EIO: it changed while read).
 */
static Elf *read_object(struct elfcache *c, int fd, const struct stat *st, const char *shown,
			uint64_t *bytes)
{
	uint64_t needed;
	Elf *elf;
	int img;

	img = elfcache_image(fd, st, BOUND_OBJECT_BYTES, bytes, &needed);
	if (img == -EFBIG) {
		bounds_refuse(BOUND_OBJECT, shown ? shown : "?", (uint64_t)st->st_dev,
			      (uint64_t)st->st_ino, "the parts unwinding reads", needed);
		errno = EFBIG;
		return NULL;
	}
	if (img == -E2BIG) {
		bounds_refuse(BOUND_SECTIONS, shown ? shown : "?", (uint64_t)st->st_dev,
			      (uint64_t)st->st_ino, "the section header table", needed);
		errno = ENOEXEC;
		return NULL;
	}
	if (img < 0) {
		errno = img == -ENOMEM ? ENOMEM : img == -EIO ? EIO : ENOEXEC;
		return NULL;
	}
	/* and what libelf keeps for each of its sections once it has read them */
	*bytes = elfcache_image_cost(img, *bytes);
	if (c->stats.bytes + *bytes > c->max_bytes) {
		close(img);
		c->stats.full_bytes++;
		errno = ENOSPC;
		return NULL;
	}
	/* a private mapping of our own sealed memory file: its pages are the image's, once */
	elf = elf_begin(img, ELF_C_READ_MMAP_PRIVATE, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_cntl(elf, ELF_C_FDDONE)) {
		elf_end(elf);
		close(img);
		errno = ENOEXEC;
		return NULL;
	}
	close(img);
	return elf;
}

struct elfcache_obj *elfcache_get(struct elfcache *c, int fd, const char *shown)
{
	struct elfcache_obj *o = NULL;
	const void *id = NULL;
	struct stat st;
	ssize_t len;
	size_t i;
	int err;

	if (fstat(fd, &st)) {
		err = errno;
		goto cleanup;
	}
	/* the same file (a forked worker's libruby): no parsing at all */
	for (i = 0; i < c->n; i++) {
		if (same_file(c->objs[i], &st))
			return hit(c, c->objs[i], fd);
	}
	if (c->n == c->max) {
		c->stats.full++;
		err = ENOSPC;
		goto cleanup;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		err = ENOMEM;
		goto cleanup;
	}
	o->elf = read_object(c, fd, &st, shown, &o->bytes);
	if (!o->elf) {
		err = errno;
		if (err == ENOEXEC || err == EIO)
			c->stats.unreadable++;
		goto cleanup;
	}
	close(fd);
	len = dwelf_elf_gnu_build_id(o->elf, &id);
	if (len > 0) {
		o->id_len = (size_t)len < BUILD_ID_MAX ? (size_t)len : BUILD_ID_MAX;
		memcpy(o->id, id, o->id_len);
		for (i = 0; i < o->id_len; i++)
			snprintf(o->id_hex + 2 * i, 3, "%02x", o->id[i]);
	}
	/* the same object under another path or inode (another container's copy of libc) */
	for (i = 0; o->id_len && i < c->n; i++) {
		if (c->objs[i]->id_len == o->id_len && !memcmp(c->objs[i]->id, o->id, o->id_len)) {
			obj_free(o);
			return hit(c, c->objs[i], -1);
		}
	}
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->size = st.st_size;
	o->mtime = st.st_mtim;
	o->refs = 1;
	c->objs[c->n++] = o;
	c->stats.misses++;
	c->stats.objects = c->n;
	if (c->n > c->stats.peak)
		c->stats.peak = c->n;
	c->stats.bytes += o->bytes;
	return o;
cleanup:
	obj_free(o);
	if (fd >= 0)
		close(fd);
	errno = err;
	return NULL;
}

Elf *elfcache_obj_elf(struct elfcache_obj *o)
{
	/* with a reference Elf, elf_begin only counts one more holder of the same handle */
	return elf_begin(-1, ELF_C_READ, o->elf);
}

const char *elfcache_obj_build_id(const struct elfcache_obj *o)
{
	return o->id_hex;
}

void elfcache_put(struct elfcache *c, struct elfcache_obj *o)
{
	size_t i;

	if (!o || --o->refs)
		return;
	for (i = 0; i < c->n && c->objs[i] != o; i++)
		;
	if (i < c->n)
		c->objs[i] = c->objs[--c->n];
	c->stats.freed++;
	c->stats.objects = c->n;
	c->stats.bytes -= o->bytes;
	obj_free(o);
}

int elfcache_reserve(struct elfcache *c, uint64_t bytes)
{
	if (c->stats.bytes + bytes > c->max_bytes) {
		c->stats.full_bytes++;
		return -ENOSPC;
	}
	c->stats.bytes += bytes;
	return 0;
}

void elfcache_release(struct elfcache *c, uint64_t bytes)
{
	c->stats.bytes -= bytes < c->stats.bytes ? bytes : c->stats.bytes;
}

void elfcache_stats(const struct elfcache *c, struct elfcache_stats *out)
{
	*out = c->stats;
}
