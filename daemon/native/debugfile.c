// SPDX-License-Identifier: GPL-2.0-only
/* debugfile.c - separate debug files, found as gdb finds them, inside a process's root. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bounds.h"
#include "native/checksum.h"
#include "native/debugfile.h"
#include "native/elf.h"
#include "proc/procs.h"

/* Where distributions install separate debug files (gdb's default debug-file-directory). */
#define DEBUG_DIR "/usr/lib/debug"

/*
 * A debug file candidate, if it is ef's: the same build id (build_id != NULL), or else the CRC32
 * that .gnu_debuglink records. NULL with errno set: EINPROGRESS or EAGAIN while its CRC32 is
 * being computed off the main loop (checksum.h): ask again later.
 */
static struct elf_file *debug_candidate(const char *root, const char *path, const char *build_id,
					uint32_t crc)
{
	struct stat st;
	struct elf_file *dbg = NULL;
	char id[128];
	uint32_t c = 0;
	int fd, err;

	fd = procs_open_in_root(root, path);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	err = -ENOENT;
	/* a regular file (procs_open_in_root): the CRC of a device would never end */
	if (fstat(fd, &st))
		goto cleanup;
	/* read whole for its CRC (a sparse file of any size costs nothing to make) */
	if (!build_id && (uint64_t)st.st_size > BOUND_FILE_BYTES) {
		bounds_refuse(BOUND_FILE, path, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
			      "the debug file", (uint64_t)st.st_size);
		err = -EFBIG;
		goto cleanup;
	}
	if (!build_id) {
		err = checksum_crc32(fd, &st, &c);
		if (err == -EINPROGRESS || err == -EAGAIN)
			goto cleanup;
		err = -ENOENT;
		if (c != crc)
			goto cleanup;
	}
	dbg = elf_file__open_fd(fd, path);
	if (!dbg) {
		err = -errno;
		goto cleanup;
	}
	if (build_id && (elf_build_id(dbg, id, sizeof(id)) || strcmp(id, build_id))) {
		elf_file__free(dbg);
		dbg = NULL;
		goto cleanup;
	}
	err = 0;
cleanup:
	close(fd);
	if (err)
		errno = -err;
	return dbg;
}

struct elf_file *debugfile_lookup(const char *root, const char *path, const char *build_id,
				  const char *link, uint32_t crc, char *found, size_t len,
				  const char **how)
{
	/* gdb's order: next to the file, in its .debug/ subdirectory, under the debug directory */
	static const char *const link_dirs[][2] = {{"", "/"}, {"", "/.debug/"}, {DEBUG_DIR, "/"}};
	char dir[PATH_MAX], cand[PATH_MAX * 2 + 64];
	const char *slash;
	struct elf_file *dbg;
	size_t i;

	if (build_id && strlen(build_id) > 2) {
		snprintf(cand, sizeof(cand), DEBUG_DIR "/.build-id/%.2s/%s.debug", build_id,
			 build_id + 2);
		dbg = debug_candidate(root, cand, build_id, 0);
		if (dbg) {
			snprintf(found, len, "%s", cand);
			*how = "build id";
			return dbg;
		}
	}
	slash = strrchr(path, '/');
	if (!link || !*link || strchr(link, '/') || !slash ||
	    (size_t)(slash - path) >= sizeof(dir)) {
		errno = ENOENT;
		return NULL;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	for (i = 0; i < sizeof(link_dirs) / sizeof(link_dirs[0]); i++) {
		snprintf(cand, sizeof(cand), "%s%s%s%s", link_dirs[i][0], dir, link_dirs[i][1],
			 link);
		dbg = debug_candidate(root, cand, NULL, crc);
		if (dbg || errno == EINPROGRESS || errno == EAGAIN) {
			/* found; or not known yet: the next candidates wait (gdb's order) */
			snprintf(found, len, "%s", cand);
			*how = ".gnu_debuglink";
			return dbg;
		}
	}
	errno = ENOENT;
	return NULL;
}

struct elf_file *debugfile_find(const char *root, const char *path, struct elf_file *ef,
				char *found, size_t len, const char **how)
{
	char build_id[128], link[PATH_MAX];
	struct elf_file *dbg;
	uint32_t crc = 0;

	if (elf_build_id(ef, build_id, sizeof(build_id)))
		build_id[0] = '\0';
	if (elf_debuglink(ef, link, sizeof(link), &crc))
		link[0] = '\0';
	dbg = debugfile_lookup(root, path, build_id, link, crc, found, len, how);
	/* the debug file stands for ef: what both hold is bounded together */
	elf_file_share_budget(dbg, ef);
	return dbg;
}
