/* SPDX-License-Identifier: GPL-2.0-only */
/* fileio.h - small file helpers shared by the writers (pprof files, views, the spool) and the
 * readers of whole files (the shipper, the sidecar, the pprof reader, the upload's secrets). */
#ifndef RP_FILEIO_H
#define RP_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/*
 * The mode of every file rubyprofd writes for a user (--oneshot's profile, views): the owner
 * reads and writes, the group (the directory's, or the writer's) reads, others nothing: the
 * profile of every user's processes is not for every user. The umask may take more away.
 */
#define FILEIO_MODE 0640

/* Writes all of data to fd, across short writes and EINTR. 0 or -errno (-ENOSPC: disk full). */
int fileio_write_all(int fd, const void *data, size_t len);

/*
 * Writes a file for a user, never through a link: data goes to a new file beside path (created
 * with O_CREAT | O_EXCL | O_NOFOLLOW, mode FILEIO_MODE), synced, then renamed over path, so
 * that a link, or a file another user holds open or has linked elsewhere, is never written
 * through, and a reader sees the old file or the whole new one. What is at path must be absent
 * or a regular file: -ELOOP for a symbolic link, -EISDIR for a directory, -EEXIST for anything
 * else (a FIFO, a device); it stays untouched. 0 or -errno; on error nothing new stays.
 */
int fileio_write_file(const char *path, const void *data, size_t len);

/*
 * The check of what is at path that fileio_write_file makes first (0: nothing, or a regular
 * file; else its error), for a caller that wants to know before it spends a run on the data.
 */
int fileio_check_target(const char *path);

/* For fileio_open_regular and fileio_read_file: a symbolic link at path is refused (-ELOOP). */
#define FILEIO_NOFOLLOW 1

/*
 * Opens path for reading, and only a regular file of at most max bytes: -EINVAL for anything
 * else (a directory, a device, a FIFO: opened O_NONBLOCK, so refused rather than waited on),
 * -EFBIG for a larger file, -ELOOP for a link with FILEIO_NOFOLLOW, else open's -errno. The fd
 * (O_CLOEXEC), its fstat in *st (zeroed where open or fstat fails).
 */
int fileio_open_regular(const char *path, int flags, uint64_t max, struct stat *st);

/*
 * Reads all of a regular file of at most max bytes (fileio_open_regular's checks, and -EFBIG
 * for a file that grew past max while read) into *out, malloc'ed, with a NUL after its *len
 * bytes for a caller that parses text. 0 or -errno; *out is untouched on error.
 */
int fileio_read_file(const char *path, int flags, size_t max, uint8_t **out, size_t *len);

/*
 * Reads what fd gives, at most max bytes (the first allocation holds first, or 4 KiB when 0),
 * into *out, malloc'ed, NUL-terminated, its length in *len; sets *cut when there was more.
 * 0 or -errno; *out is untouched on error. For files that stat cannot size (/proc's).
 */
int fileio_read_fd(int fd, size_t first, size_t max, uint8_t **out, size_t *len, bool *cut);

/* The words for a fileio_write_file error: strerror's, but saying what is in the way. */
const char *fileio_strerror(int err);

#endif
