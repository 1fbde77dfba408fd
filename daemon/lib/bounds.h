/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bounds.h - how much of what a profiled process controls the daemon reads, and what happens
 * past that: the object is refused, the refusal counted by bound
 * (rubyprofd_refused_objects_total{bound}), and one log line names the pid, the file and the
 * bound, once per object (its device and inode). The process is still profiled where what is
 * left allows it. The figures measured beside each bound: docs/security.md.
 */
#ifndef RP_BOUNDS_H
#define RP_BOUNDS_H

#include <stdint.h>
#include <sys/types.h>

/* One ELF section read into memory (libelf reads a section whole: .dynsym, .symtab, a string
 * table, a note), with its index beside it (2/3 of its size): the largest such section of
 * Debian's libruby 2.7-3.4, libstdc++, libxml2 and nokogiri.so is 0.3 MiB (.dynstr of
 * libstdc++); their largest section of any kind 3.1 MiB (.text of libruby 3.4). */
#define BOUND_SECTION_BYTES (8ULL << 20)
/* Sections of one object (libelf keeps a structure of ~270 bytes for each that the file claims,
 * and e_shnum 0 lets section 0's sh_size claim billions): Debian's shared objects and their
 * debug files have 25-40; a sparse file's 2 million cost libelf 530 MB and 1.3 s. */
#define BOUND_SECTION_COUNT 4096ULL
/* What libelf holds of one object's sections at once (symbol, string, relocation and note
 * tables, each within BOUND_SECTION_BYTES) with the by-name indexes built on them, the object
 * and the separate debug file that stands for it together (elf_file_share_budget): Debian's
 * libruby 3.1 holds 0.2 MiB at its discovery. Without it, both symbol
 * tables and their string tables of the object and of its debug file at the section bound made
 * 86 MiB, and 4000 relocation sections of 8 MiB (one sparse region they all claim) 32 GB. */
#define BOUND_HELD_BYTES    (24ULL << 20)
/* The relocation tables of one object read all together (the search for the TLS module id's
 * relocation, which walks every entry): Debian's libruby 3.1 has 96 KiB (.rela.dyn and
 * .rela.plt). 16 MiB of them cost the main loop 80-440 ms. */
#define BOUND_RELOC_BYTES   (2ULL << 20)
/* One file read whole (the CRC32 of a debug file that .gnu_debuglink names). */
#define BOUND_FILE_BYTES    (256ULL << 20)
/* The parts of one object read into memory for the unwinder (stacks = mixed: headers, CFI,
 * symbol and string tables, notes; elfcache_image), or of one separate debug file: of Debian's
 * libruby 3.1 (a 3.7 MiB file) 0.5 MiB, libc 0.3, libstdc++ 0.7, libcrypto 0.8; of libLLVM-14,
 * the largest shared object here (105 MiB), 9.5 MiB. */
#define BOUND_OBJECT_BYTES  (16ULL << 20)
/* One C++ name demangled, mangled and demangled (DEMANGLE_INPUT_MAX and DEMANGLE_MAX of
 * demangle.h, with the NUL): past it the name is kept mangled. */
#define BOUND_NAME_BYTES    1024ULL
/* A process's /proc/PID/maps, read whole at its discovery: a Ruby with nokogiri and 21 threads
 * has 23 KiB (274 mappings); a tenant's 64,000 mappings of a 3.8 KB path make 250 MB, which
 * the kernel writes at ~125 MB/s here (2 s of the main loop; the bound's 2 MiB, docs/security.md). */
#define BOUND_MAPS_BYTES    (2ULL << 20)
/* A process's /proc/PID/mountinfo, read before one of its files on a device without a block
 * device of its own is opened (to tell a FUSE mount): a host with Docker has ~4 KiB, a
 * container ~3 KiB; a tenant's own mount namespace may hold 100,000 mounts (fs.mount-max). */
#define BOUND_MOUNTS_BYTES  (1ULL << 20)

enum bound_id {
	BOUND_SECTION,	/* a section larger than BOUND_SECTION_BYTES */
	BOUND_FILE,	/* a file read whole larger than BOUND_FILE_BYTES */
	BOUND_NAME,	/* a C++ name longer than BOUND_NAME_BYTES, mangled or demangled */
	BOUND_OBJECT,	/* an object to unwind in whose parts to read pass BOUND_OBJECT_BYTES */
	BOUND_REGULAR,	/* not a regular file (a FIFO, a device) where a file is read: no size */
	BOUND_MAPS,	/* a process's list of mappings longer than BOUND_MAPS_BYTES */
	BOUND_SECTIONS, /* an object that claims more than BOUND_SECTION_COUNT sections */
	BOUND_SERVED,	/* a file on a filesystem that a process serves (FUSE): never opened */
	BOUND_MOUNTS,	/* a mount table longer than BOUND_MOUNTS_BYTES: its files not opened */
	BOUND_HELD,   /* sections of an object and its debug file past BOUND_HELD_BYTES together */
	BOUND_RELOCS, /* relocation tables of an object past BOUND_RELOC_BYTES together */
	BOUND_MAX,
};

struct bounds_stats {
	uint64_t refused[BOUND_MAX];  /* objects refused, by bound (each time one is met) */
	uint64_t logged;	      /* of those, the ones logged (once per object) */
	uint64_t held;		      /* lines past the log budget: at debug level only */
	uint64_t openat2_unavailable; /* target files not opened: openat2 said ENOSYS */
};

/*
 * The process whose objects are read from now on (0: none known), for the log line: set by
 * whoever reads a target's files (discovery, the symbolizer, the unwinder). The daemon has one
 * thread that does it.
 */
void bounds_set_pid(pid_t pid);

/*
 * Bound b was met by `what` (".dynsym", "the debug file") of size bytes in the file at path
 * (dev, ino: the object; 0, 0 when unknown; size 0: not known, not said): counted, and logged at warning level unless this
 * object was already logged for b (the last BOUNDS_LOGGED_MAX objects are remembered).
 */
void bounds_refuse(enum bound_id b, const char *path, uint64_t dev, uint64_t ino, const char *what,
		   uint64_t size);

/*
 * A target's file not opened because openat2 is not there (ENOSYS: a kernel before 5.6, or a
 * seccomp filter that refuses it): there is no other safe way to resolve a path inside a
 * process's root, so the file is not read. Counted; logged once for the daemon's life.
 */
void bounds_openat2_unavailable(const char *path);

void bounds_stats(struct bounds_stats *out);
/* The name of bound b as the metric's label spells it: "section", "file", "name", "object",
 * "not_regular", "maps", "sections", "served_fs", "mounts", "held", "relocations". */
const char *bounds_name(enum bound_id b);

#endif
