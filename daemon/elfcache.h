/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * elfcache.h - parsed ELF objects shared by the unwinders of every process (libelf handles of
 * libruby, libc, the extensions...), keyed by GNU build id, or by the file's identity (device,
 * inode, size, mtime) when it has none. Forked workers of one master map the same files: each
 * object is mapped and parsed once, not once per process.
 *
 * An object is held by references (one per process's Dwfl module that uses it) and freed when
 * the last goes. At most `max` objects at once: past the bound a file is not shared (the
 * caller parses its own copy, as without the cache), and that is counted.
 */
#ifndef RP_ELFCACHE_H
#define RP_ELFCACHE_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* Objects kept at once, by default. */
#define ELFCACHE_MAX_DEFAULT 512

struct elfcache;
struct elfcache_obj;

struct elfcache_stats {
	uint64_t hits;	  /* references served by an object already parsed */
	uint64_t misses;  /* files parsed (each object once while it is held) */
	uint64_t full;	  /* files not shared: the cache held `max` objects */
	uint64_t freed;	  /* objects freed: their last reference went */
	uint64_t objects; /* objects held now */
	uint64_t peak;	  /* most objects held at once */
	uint64_t bytes;	  /* bytes of the files of the objects held (mapped, not all resident) */
};

/* max: objects at once (0: ELFCACHE_MAX_DEFAULT). NULL with errno set. */
struct elfcache *elfcache__new(size_t max);
/* Frees the cache's own references; an Elf handed out stays valid until its holder ends it. */
void elfcache__free(struct elfcache *c);

/*
 * The object of fd (an open ELF file; the call takes it: kept in the object or closed), with one
 * more reference. NULL with errno: ENOSPC (the cache is full: fd is left open for the caller),
 * ENOEXEC (not ELF: fd closed), or another errno (fd closed).
 */
struct elfcache_obj *elfcache_get(struct elfcache *c, int fd);
/* A new reference to the object's Elf, for a holder that ends it with elf_end() (libdwfl does,
 * when its module goes). NULL with errno. */
Elf *elfcache_obj_elf(struct elfcache_obj *o);
/* The object's GNU build id in hex, "" when it has none. */
const char *elfcache_obj_build_id(const struct elfcache_obj *o);
/* Drops a reference of elfcache_get; the last frees the object. NULL is ignored. */
void elfcache_put(struct elfcache *c, struct elfcache_obj *o);

void elfcache_stats(const struct elfcache *c, struct elfcache_stats *out);

#endif
