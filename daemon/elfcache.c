// SPDX-License-Identifier: GPL-2.0-only
/*
 * elfcache.c - ELF objects parsed once and shared by every process's unwinder.
 *
 * Each object is read whole into memory by libelf (ELF_C_READ, then ELF_C_FDREAD: pread into a
 * buffer that libelf owns and frees with the last reference), never mapped: a target that
 * truncates its mapped library would make a read of a mapping die of SIGBUS; a short read is an
 * error. The file's size is checked against BOUND_OBJECT_BYTES before, and the cache's total
 * against its byte bound.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bounds.h"
#include "elfcache.h"

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
	size_t id_len; /* 0: no build id */
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

/*
 * The file of fd, read whole into memory, after the bounds: the object's own, and the cache's
 * total. NULL with errno (EFBIG, ENOSPC, ENOEXEC, EIO: it changed while read).
 */
static Elf *read_object(struct elfcache *c, int fd, const struct stat *st, const char *shown)
{
	Elf *elf;

	if ((uint64_t)st->st_size > BOUND_OBJECT_BYTES) {
		bounds_refuse(BOUND_OBJECT, shown ? shown : "?", (uint64_t)st->st_dev,
			      (uint64_t)st->st_ino, "the object", (uint64_t)st->st_size);
		errno = EFBIG;
		return NULL;
	}
	if (c->stats.bytes + (uint64_t)st->st_size > c->max_bytes) {
		c->stats.full_bytes++;
		errno = ENOSPC;
		return NULL;
	}
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		errno = ENOEXEC;
		return NULL;
	}
	/* the whole file, by pread, the size fstat saw when elf_begin ran; then libelf lets the fd
	 * go (FDREAD does FDDONE's part) */
	if (elf_cntl(elf, ELF_C_FDREAD)) {
		elf_end(elf);
		errno = EIO;
		return NULL;
	}
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
	o->elf = read_object(c, fd, &st, shown);
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
	c->stats.bytes += (uint64_t)st.st_size;
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
	c->stats.bytes -= (uint64_t)o->size;
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
