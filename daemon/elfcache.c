// SPDX-License-Identifier: GPL-2.0-only
/* elfcache.c - ELF objects parsed once and shared by every process's unwinder. */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfcache.h"

/* GNU build ids are 20 bytes (SHA-1); longer ones are keyed by their first 32. */
#define BUILD_ID_MAX 32

struct elfcache_obj {
	Elf *elf; /* our reference: every holder has its own (elf_begin on it) */
	int fd;
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
	struct elfcache_stats stats;
};

struct elfcache *elfcache__new(size_t max)
{
	struct elfcache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max = max ? max : ELFCACHE_MAX_DEFAULT;
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
	if (o->fd >= 0)
		close(o->fd);
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
	close(fd);
	o->refs++;
	c->stats.hits++;
	return o;
}

struct elfcache_obj *elfcache_get(struct elfcache *c, int fd)
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
		errno = ENOSPC;
		return NULL;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		err = ENOMEM;
		goto cleanup;
	}
	o->fd = fd;
	fd = -1;
	/* private: libdwfl may write into an object's sections (relocating ET_REL files) */
	o->elf = elf_begin(o->fd, ELF_C_READ_MMAP_PRIVATE, NULL);
	if (!o->elf || elf_kind(o->elf) != ELF_K_ELF) {
		err = ENOEXEC;
		goto cleanup;
	}
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
			fd = o->fd;
			o->fd = -1;
			obj_free(o);
			return hit(c, c->objs[i], fd);
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
	return elf_begin(-1, ELF_C_READ_MMAP_PRIVATE, o->elf);
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

void elfcache_stats(const struct elfcache *c, struct elfcache_stats *out)
{
	*out = c->stats;
}
