/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * debugfile.h - the separate debug file of an object (its symbols when it is stripped), looked up
 * the way gdb does, inside a process's root ("/proc/PID/root"; symlinks cannot leave it): by
 * build id, /usr/lib/debug/.build-id/xx/rest.debug (whose build id must match); then by
 * .gnu_debuglink NAME next to the object, in its .debug/ subdirectory, and as
 * /usr/lib/debug/DIR/NAME (whose CRC32 must match). Files are opened through procs_open_in_root;
 * a CRC32 is read only under BOUND_FILE_BYTES, off the main loop (checksum.h). Used by the Ruby
 * discovery (the Ruby object's symbols) and the native unwinder (every module's).
 */
#ifndef RP_DEBUGFILE_H
#define RP_DEBUGFILE_H

#include <stddef.h>
#include <stdint.h>

struct elf_file;

/*
 * The debug file of ef, the object at `path` as its process sees it. `found` receives the debug
 * file's path as the process sees it, *how "build id" or ".gnu_debuglink". NULL with errno set:
 * ENOENT, there is none; EINPROGRESS or EAGAIN, a .gnu_debuglink candidate's CRC32 is being
 * computed (`found` names it): ask again later.
 */
struct elf_file *debugfile_find(const char *root, const char *path, struct elf_file *ef,
				char *found, size_t len, const char **how);
/* The same lookup from what it needs of the object: its build id in hex ("" or NULL: none), its
 * .gnu_debuglink name (NULL or "": none) and CRC (the unwinder's, from libdwfl). */
struct elf_file *debugfile_lookup(const char *root, const char *path, const char *build_id,
				  const char *link, uint32_t crc, char *found, size_t len,
				  const char **how);

#endif
