// SPDX-License-Identifier: GPL-2.0-only
/*
 * safepath.c - the StrictModes check of safepath.h: a walk from / that holds each directory by
 * an O_PATH descriptor and checks what it holds (fstat), so that the directories checked are the
 * ones resolved, and follows symbolic links itself, checking each link and each directory it
 * leads through.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/safepath.h"

static bool safepath_trusted(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* "nobody", or "uid 1234" for a uid without a name. */
static const char *safepath_user(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char pwbuf[1024];

	if (!getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) && res)
		snprintf(buf, len, "%s", res->pw_name);
	else
		snprintf(buf, len, "uid %u", (unsigned int)uid);
	return buf;
}

/*
 * The -EPERM message. part: the object at the end (end), a directory on the way or a link
 * followed, as resolved; path: as given.
 */
static int safepath_refuse(const char *path, const char *part, bool end, const struct stat *st,
			   char *err, size_t errlen)
{
	char owner[64], me[64], who[96], what[PATH_MAX + 64];

	safepath_user(st->st_uid, owner, sizeof(owner));
	if (geteuid() == 0)
		snprintf(who, sizeof(who), "root");
	else
		snprintf(who, sizeof(who), "root and %s", safepath_user(geteuid(), me, sizeof(me)));
	if (S_ISLNK(st->st_mode))
		snprintf(what, sizeof(what), "the symbolic link '%s' (owner %s)", part, owner);
	else
		snprintf(what, sizeof(what), "%s'%s' (owner %s, mode %04o)",
			 end ? "" : "the directory ", part, owner,
			 (unsigned int)(st->st_mode & 07777));
	if (end && !strcmp(part, path))
		snprintf(err, errlen, "%s can be changed by a user other than %s", what, who);
	else
		snprintf(err, errlen, "'%s': %s can be changed by a user other than %s", path, what,
			 who);
	return -EPERM;
}

static int safepath_fail(const char *path, int e, char *err, size_t errlen)
{
	snprintf(err, errlen, "'%s': %s", path, strerror(e));
	return -e;
}

/* A directory passed through: a sticky one (/tmp) may be writable by others. */
static bool safepath_dir_ok(const struct stat *st)
{
	return safepath_trusted(st->st_uid) && (!(st->st_mode & 022) || (st->st_mode & S_ISVTX));
}

/* The object at the end: no exception. */
static bool safepath_end_ok(const struct stat *st)
{
	return safepath_trusted(st->st_uid) && !(st->st_mode & 022);
}

/* cur = its parent ("/a/b" -> "/a", "/a" -> "/"). */
static void safepath_up(char *cur)
{
	char *slash = strrchr(cur, '/');

	if (slash == cur)
		cur[1] = '\0';
	else if (slash)
		*slash = '\0';
}

/* Replaces *dfd with a descriptor of "/" (a link's absolute target starts there again). */
static int safepath_reroot(int *dfd, char *cur)
{
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	close(*dfd);
	*dfd = fd;
	cur[0] = '/';
	cur[1] = '\0';
	return 0;
}

int safepath_check(const char *path, char *err, size_t errlen)
{
	/* rest: what is left to resolve; cur: the directory dfd holds, for the messages */
	char rest[PATH_MAX], cur[PATH_MAX], part[PATH_MAX], target[PATH_MAX], name[NAME_MAX + 1];
	unsigned int links = 0;
	struct stat st;
	const char *p;
	bool last;
	size_t len;
	ssize_t n;
	int dfd = -1, fd, ret = 0;

	if (errlen)
		err[0] = '\0';
	if (!path || !*path)
		return safepath_fail(path ? path : "", ENOENT, err, errlen);
	if (path[0] == '/') {
		len = strlen(path);
		if (len >= sizeof(rest))
			return safepath_fail(path, ENAMETOOLONG, err, errlen);
		memcpy(rest, path, len + 1);
	} else {
		if (!getcwd(cur, sizeof(cur)))
			return safepath_fail(path, errno, err, errlen);
		if (snprintf(rest, sizeof(rest), "%s/%s", cur, path) >= (int)sizeof(rest))
			return safepath_fail(path, ENAMETOOLONG, err, errlen);
	}
	dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st)) {
		ret = safepath_fail(path, errno, err, errlen);
		goto cleanup;
	}
	cur[0] = '/';
	cur[1] = '\0';
	if (!safepath_dir_ok(&st)) {
		ret = safepath_refuse(path, "/", false, &st, err, errlen);
		goto cleanup;
	}
	p = rest;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p) { /* "/", or a path ending in '/': the directory held is the object */
			if (fstat(dfd, &st)) {
				ret = safepath_fail(path, errno, err, errlen);
				goto cleanup;
			}
			if (!safepath_end_ok(&st))
				ret = safepath_refuse(path, cur, true, &st, err, errlen);
			goto cleanup;
		}
		len = strcspn(p, "/");
		if (len > NAME_MAX) {
			ret = safepath_fail(path, ENAMETOOLONG, err, errlen);
			goto cleanup;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		p += len;
		last = !p[strspn(p, "/")];
		if (!strcmp(name, ".") && !last)
			continue;
		if (!strcmp(name, "..") && !last) {
			fd = openat(dfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0) {
				ret = safepath_fail(path, errno, err, errlen);
				goto cleanup;
			}
			close(dfd);
			dfd = fd;
			safepath_up(cur);
			continue;
		}
		if (snprintf(part, sizeof(part), "%s%s%s", cur, strcmp(cur, "/") ? "/" : "",
			     name) >= (int)sizeof(part)) {
			ret = safepath_fail(path, ENAMETOOLONG, err, errlen);
			goto cleanup;
		}
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
			ret = safepath_fail(path, errno, err, errlen);
			goto cleanup;
		}
		if (S_ISLNK(st.st_mode)) {
			/* a link of another user could be replaced by them in a sticky directory */
			if (!safepath_trusted(st.st_uid)) {
				ret = safepath_refuse(path, part, false, &st, err, errlen);
				goto cleanup;
			}
			if (++links > SAFEPATH_MAX_LINKS) {
				ret = safepath_fail(path, ELOOP, err, errlen);
				goto cleanup;
			}
			n = readlinkat(dfd, name, target, sizeof(target) - 1);
			if (n < 0 || (size_t)n >= sizeof(target) - 1) {
				ret = safepath_fail(path, n < 0 ? errno : ENAMETOOLONG, err,
						    errlen);
				goto cleanup;
			}
			target[n] = '\0';
			/* the target, then what was left after the link */
			if (snprintf(part, sizeof(part), "%s%s", target, p) >= (int)sizeof(part)) {
				ret = safepath_fail(path, ENAMETOOLONG, err, errlen);
				goto cleanup;
			}
			memcpy(rest, part, strlen(part) + 1);
			p = rest;
			if (target[0] == '/') {
				ret = safepath_reroot(&dfd, cur);
				if (ret) {
					ret = safepath_fail(path, -ret, err, errlen);
					goto cleanup;
				}
			}
			continue;
		}
		if (last) {
			if (!safepath_end_ok(&st))
				ret = safepath_refuse(path, part, true, &st, err, errlen);
			goto cleanup;
		}
		if (!S_ISDIR(st.st_mode)) {
			ret = safepath_fail(path, ENOTDIR, err, errlen);
			goto cleanup;
		}
		fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			ret = safepath_fail(path, errno, err, errlen);
			goto cleanup;
		}
		close(dfd);
		dfd = fd;
		/* what is held now, whatever the name pointed to a moment ago */
		if (fstat(dfd, &st)) {
			ret = safepath_fail(path, errno, err, errlen);
			goto cleanup;
		}
		memcpy(cur, part, strlen(part) + 1);
		if (!safepath_dir_ok(&st)) {
			ret = safepath_refuse(path, cur, false, &st, err, errlen);
			goto cleanup;
		}
	}
cleanup:
	if (dfd >= 0)
		close(dfd);
	return ret;
}
