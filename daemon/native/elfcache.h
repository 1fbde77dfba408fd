/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * elfcache.h - parsed ELF objects shared by the unwinders of every process (libelf handles of
 * libruby, libc, the extensions...), keyed by GNU build id, or by the file's identity (device,
 * inode, size, mtime) when it has none. Forked workers of one master map the same files: each
 * object is read and parsed once, not once per process.
 *
 * An object is never mapped (a target can truncate its file) nor read whole: the parts that
 * unwinding reads are copied into an image of ours (elfcache_image), at most BOUND_OBJECT_BYTES
 * (bounds.h) for one. It is held by references (one per process's Dwfl
 * module that uses it) and freed when the last goes. At most `max` objects and `max_bytes`
 * bytes at once: past either a file is refused (its module unwinds without it), and that is
 * counted.
 */
#ifndef RP_ELFCACHE_H
#define RP_ELFCACHE_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Objects kept at once, by default. */
#define ELFCACHE_MAX_DEFAULT   512
/* Bytes of images kept at once, by default: the images of Debian's libruby 3.1, libc and
 * libstdc++ are 0.5, 0.3 and 0.7 MiB; all the files a Ruby 3.1 with nokogiri maps, ~2 MiB
 * (docs/security.md). */
#define ELFCACHE_BYTES_DEFAULT (24ULL << 20)

struct elfcache;
struct elfcache_obj;

struct elfcache_stats {
	uint64_t hits;	     /* references served by an object already parsed */
	uint64_t misses;     /* files parsed (each object once while it is held) */
	uint64_t full;	     /* files refused: the cache held `max` objects */
	uint64_t full_bytes; /* files refused: they would pass the cache's `max_bytes` */
	uint64_t unreadable; /* files refused: not ELF, or changed (truncated) while read */
	uint64_t freed;	     /* objects freed: their last reference went */
	uint64_t objects;    /* objects held now */
	uint64_t peak;	     /* most objects held at once */
	uint64_t bytes;	     /* bytes of the objects' images held */
};

/* max: objects at once (0: ELFCACHE_MAX_DEFAULT); max_bytes: their bytes at once (0:
 * ELFCACHE_BYTES_DEFAULT). NULL with errno set. */
struct elfcache *elfcache__new(size_t max, uint64_t max_bytes);
/* A new byte bound (0: ELFCACHE_BYTES_DEFAULT); what is held already stays. */
void elfcache_set_max_bytes(struct elfcache *c, uint64_t max_bytes);
/* Frees the cache's own references; an Elf handed out stays valid until its holder ends it. */
void elfcache__free(struct elfcache *c);

/*
 * The object of fd (an open regular file; the call takes it: closed in every case), with one more
 * reference; shown: its path as the process sees it, for the log line of a refusal. NULL with
 * errno: ENOSPC (the cache is at one of its bounds), EFBIG (the parts to read are past
 * BOUND_OBJECT_BYTES: counted and logged by bounds.h), ENOEXEC (not ELF), EIO (it changed while
 * read), or another errno.
 */
struct elfcache_obj *elfcache_get(struct elfcache *c, int fd, const char *shown);
/* A new reference to the object's Elf, for a holder that ends it with elf_end() (libdwfl does,
 * when its module goes). NULL with errno. */
Elf *elfcache_obj_elf(struct elfcache_obj *o);
/* The object's GNU build id in hex, "" when it has none. */
const char *elfcache_obj_build_id(const struct elfcache_obj *o);
/* Drops a reference of elfcache_get; the last frees the object. NULL is ignored. */
void elfcache_put(struct elfcache *c, struct elfcache_obj *o);

/*
 * Bytes held for unwinding outside the cache's objects (copies of debug files that libdwfl holds
 * by descriptor), counted against the same byte bound: 0, or -ENOSPC (counted in full_bytes).
 * Released by their holder when it lets them go.
 */
int elfcache_reserve(struct elfcache *c, uint64_t bytes);
void elfcache_release(struct elfcache *c, uint64_t bytes);

/*
 * The image of the ELF object of fd (st: its fstat) in a new memory file, sealed against
 * shrinking: its ELF header, program headers and section headers, and the sections unwinding
 * and naming read (symbol tables and the string tables they name, notes, .dynamic, .eh_frame,
 * .eh_frame_hdr, .debug_frame, .gnu_debuglink, the section names), packed; every other section
 * is SHT_NOBITS there, and a program header points into the image where a kept section holds
 * its bytes. At most `max` bytes are read, checked before any section is: past it -EFBIG,
 * *needed saying what it would have taken. The memory file's fd, its size in *bytes; or
 * -E2BIG (more than BOUND_SECTION_COUNT sections: *needed says how many), -ENOEXEC (not a
 * 64-bit little-endian ELF object, more than 1024 program headers, headers outside the file),
 * -EIO (shorter than st says: changed while read),
 * -ENOMEM, or another -errno.
 */
int elfcache_image(int fd, const struct stat *st, uint64_t max, uint64_t *bytes, uint64_t *needed);

/* What libelf keeps for each section of an image once it reads it (its Elf_Scn and what hangs
 * from it): measured 230 bytes a section at 4096 sections. */
#define ELFCACHE_SECTION_COST 256ULL

/*
 * What the image img of `bytes` bytes costs in memory held: its bytes and, for each of its
 * sections, ELFCACHE_SECTION_COST (an image of 4096 sections is 270 KiB, and libelf keeps
 * 1 MiB for it: twenty of them took 15 MiB that the byte bound did not see). What the cache's
 * byte bound counts.
 */
uint64_t elfcache_image_cost(int img, uint64_t bytes);

void elfcache_stats(const struct elfcache *c, struct elfcache_stats *out);

#endif
