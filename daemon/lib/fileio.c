// SPDX-License-Identifier: GPL-2.0-only
/* fileio.c - small file helpers shared by the writers. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileio.h"

#define FILEIO_TMP_TRIES 100

int fileio_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A new file in dfd under a name no one can guess: "*tmp" is its name. fd or -errno. */
static int fileio_create_tmp(int dfd, char tmp[32])
{
	unsigned long long r;
	int i, fd;

	for (i = 0; i < FILEIO_TMP_TRIES; i++) {
		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			return errno ? -errno : -EIO;
		snprintf(tmp, 32, ".rubyprofd-%016llx.tmp", r);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    FILEIO_MODE);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
	}
	return -EAGAIN;
}

/*
 * What is at name in dfd, for fileio_write_file: said here rather than replaced by the rename,
 * as a link or a device there is the user's mistake or someone's trap (and a rename over
 * /dev/null would be root's own harm).
 */
static int fileio_target_at(int dfd, const char *name)
{
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno;
	if (S_ISREG(st.st_mode))
		return 0;
	return S_ISLNK(st.st_mode) ? -ELOOP : S_ISDIR(st.st_mode) ? -EISDIR : -EEXIST;
}

int fileio_check_target(const char *path)
{
	return fileio_target_at(AT_FDCWD, path);
}

int fileio_write_file(const char *path, const void *data, size_t len)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char *dir = NULL, tmp[32];
	bool created = false;
	int dfd = -1, fd = -1, ret = 0;

	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EISDIR;
	dir = !slash ? strdup(".") : strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	/* one descriptor for the directory: the file is created and renamed in the same one */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		ret = -errno;
		goto cleanup;
	}
	ret = fileio_target_at(dfd, base);
	if (ret)
		goto cleanup;
	fd = fileio_create_tmp(dfd, tmp);
	if (fd < 0) {
		ret = fd;
		goto cleanup;
	}
	created = true;
	ret = fileio_write_all(fd, data, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	fd = -1;
	if (ret)
		goto cleanup;
	/* a link put at path meanwhile is replaced, never followed */
	if (renameat(dfd, tmp, dfd, base)) {
		ret = -errno;
		goto cleanup;
	}
	created = false;
	/* Some filesystems cannot sync a directory (EINVAL); the data itself is synced already. */
	if (fsync(dfd) && errno != EINVAL)
		ret = -errno;
cleanup:
	if (fd >= 0)
		close(fd);
	if (created)
		unlinkat(dfd, tmp, 0);
	if (dfd >= 0)
		close(dfd);
	free(dir);
	return ret;
}

int fileio_open_regular(const char *path, int flags, uint64_t max, struct stat *st)
{
	int fd, err;

	memset(st, 0, sizeof(*st));
	fd = open(path,
		  O_RDONLY | O_CLOEXEC | O_NONBLOCK | (flags & FILEIO_NOFOLLOW ? O_NOFOLLOW : 0));
	if (fd < 0)
		return -errno;
	if (fstat(fd, st))
		err = -errno;
	else if (!S_ISREG(st->st_mode))
		err = -EINVAL;
	else if ((uint64_t)st->st_size > max)
		err = -EFBIG;
	else
		return fd;
	close(fd);
	return err;
}

int fileio_read_fd(int fd, size_t first, size_t max, uint8_t **out, size_t *len, bool *cut)
{
	size_t got = 0, cap = first ? first : 4096;
	uint8_t *buf, *grown, c;
	ssize_t n;

	if (cap > max)
		cap = max;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (got == cap) {
			if (cap >= max) {
				/* one byte more says whether there was more */
				do
					n = read(fd, &c, 1);
				while (n < 0 && errno == EINTR);
				if (n == 1)
					*cut = true;
				break;
			}
			cap = cap > max / 2 ? max : cap * 2;
			grown = realloc(buf, cap + 1);
			if (!grown) {
				free(buf);
				return -ENOMEM;
			}
			buf = grown;
		}
		n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno ? -errno : -EIO;

			free(buf);
			return err;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	buf[got] = 0;
	*out = buf;
	*len = got;
	return 0;
}

int fileio_read_file(const char *path, int flags, size_t max, uint8_t **out, size_t *len)
{
	struct stat st;
	bool cut = false;
	uint8_t *buf = NULL;
	size_t got = 0;
	int fd, err;

	fd = fileio_open_regular(path, flags, max, &st);
	if (fd < 0)
		return fd;
	/* one byte more than fstat said, so that a file that grew is seen */
	err = fileio_read_fd(fd, (size_t)st.st_size + 1, max, &buf, &got, &cut);
	close(fd);
	if (err)
		return err;
	if (cut) {
		free(buf);
		return -EFBIG;
	}
	*out = buf;
	*len = got;
	return 0;
}

const char *fileio_strerror(int err)
{
	switch (err) {
	case -ELOOP:
		return "a symbolic link is there (never followed)";
	case -EEXIST:
		return "something other than a regular file is there";
	default:
		return strerror(err < 0 ? -err : err);
	}
}
