// SPDX-License-Identifier: GPL-2.0-only
/* procs.c - /proc parsing. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "lib/array.h"
#include "lib/bounds.h"
#include "lib/lines.h"
#include "lib/text.h"
#include "proc/procs.h"

int procs_list(pid_t **pids, size_t *n)
{
	struct dirent *de;
	size_t cap = 0;
	pid_t *v = NULL;
	char *end;
	long pid;
	DIR *d;

	*pids = NULL;
	*n = 0;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		if (array_reserve(v, cap, *n + 1, 256)) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v[(*n)++] = (pid_t)pid;
	}
	closedir(d);
	*pids = v;
	return 0;
}

int procs_parse_maps_line(const char *line, struct proc_map *m)
{
	unsigned long long start, end, off;
	char perms[5], dev[16];
	unsigned long inode;
	unsigned int major, minor;
	int pos = 0;
	const char *path;
	size_t len;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%llx-%llx %4s %llx %15s %lu %n", &start, &end, perms, &off, dev, &inode,
		   &pos) < 6 ||
	    !pos)
		return -EINVAL;
	m->start = start;
	m->end = end;
	m->offset = off;
	memcpy(m->perms, perms, sizeof(m->perms));
	if (sscanf(dev, "%x:%x", &major, &minor) == 2)
		m->dev = makedev(major, minor);
	m->inode = inode;
	path = line + pos;
	len = strcspn(path, "\n");
	m->otel_ctx = strncmp(path, "/memfd:OTEL_CTX", 15) == 0 ||
		      strncmp(path, "[anon_shmem:OTEL_CTX]", 21) == 0;
	if (len == 0 || path[0] != '/')
		return 0;
	if (len > 10 && strncmp(path + len - 10, " (deleted)", 10) == 0) {
		m->deleted = true;
		len -= 10;
	}
	m->path = strndup(path, len);
	return m->path ? 0 : -ENOMEM;
}

int procs_read_maps(pid_t pid, struct proc_maps *out)
{
	char fname[64];
	struct lines l;
	size_t cap = 0;
	int err, r;

	out->v = NULL;
	out->n = 0;
	snprintf(fname, sizeof(fname), "/proc/%d/maps", pid);
	/* a target chooses how many mappings it has and how long their paths are */
	err = lines_open(&l, fname, BOUND_MAPS_BYTES);
	if (err)
		return err;
	/* a read that fails (the process exited) ends the list */
	while ((r = lines_next(&l)) > 0) {
		if (array_reserve(out->v, cap, out->n + 1, 64)) {
			err = -ENOMEM;
			break;
		}
		if (procs_parse_maps_line(l.line, &out->v[out->n]) == 0)
			out->n++;
	}
	if (r == -EFBIG) {
		bounds_refuse(BOUND_MAPS, fname, 0, 0, "the list of mappings", l.read);
		err = r;
	}
	lines_close(&l);
	if (err)
		procs_maps_free(out);
	return err;
}

void procs_maps_free(struct proc_maps *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

int procs_parse_status_line(const char *line, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);

	if (strncmp(line, key, klen) != 0 || line[klen] != ':')
		return -ENOENT;
	snprintf(buf, len, "%s", line + klen + 1);
	return 0;
}

/* Lines are read in pieces of the buffer's size (a Groups line may be long): only a piece that
 * starts a line can be the key's. */
int procs_status_field(const char *fname, const char *key, char *buf, size_t len)
{
	char line[512];
	bool at_start = true;
	FILE *f;
	int err = -ENOENT;

	f = fopen(fname, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (at_start && procs_parse_status_line(line, key, buf, len) == 0) {
			err = 0;
			break;
		}
		at_start = strchr(line, '\n') != NULL;
	}
	fclose(f);
	return err;
}

/* A pid: the len bytes at s, decimal digits. */
static int parse_pid(const char *s, size_t len, pid_t *out)
{
	char digits[16];
	uint64_t v;

	if (len >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, s, len);
	digits[len] = '\0';
	if (text_parse_u64(digits, 0, INT_MAX, &v))
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

int procs_parse_ppid(const char *value, pid_t *ppid)
{
	size_t n;

	value += strspn(value, " \t");
	n = strcspn(value, " \t\n");
	if (value[n + strspn(value + n, "\n")] != '\0')
		return -EINVAL;
	return parse_pid(value, n, ppid);
}

int procs_ppid(pid_t pid, pid_t *ppid)
{
	char buf[64], fname[64];
	int err;

	snprintf(fname, sizeof(fname), "/proc/%d/status", pid);
	err = procs_status_field(fname, "PPid", buf, sizeof(buf));

	return err ? err : procs_parse_ppid(buf, ppid);
}

int procs_parse_nspid(const char *value, pid_t *nspid)
{
	const char *p = value;
	pid_t v, last = 0;
	size_t n;

	/* "NSpid:\t1234\t1": the pid in the namespace of this /proc (the daemon's, pidns.c)
	 * first, the process's innermost namespace last */
	for (;;) {
		p += strspn(p, " \t");
		n = strcspn(p, " \t\n");
		if (!n)
			break;
		if (parse_pid(p, n, &v))
			return -EINVAL;
		last = v;
		p += n;
	}
	if (last <= 0 || p[strspn(p, "\n")] != '\0')
		return -EINVAL;
	*nspid = last;
	return 0;
}

int procs_nspid(pid_t pid, pid_t *nspid)
{
	char buf[512], fname[64];
	int err;

	snprintf(fname, sizeof(fname), "/proc/%d/status", pid);
	err = procs_status_field(fname, "NSpid", buf, sizeof(buf));

	if (err)
		return err;
	/* without its newline the line was longer than a piece: its last pid may be cut */
	if (!strchr(buf, '\n'))
		return -EINVAL;
	return procs_parse_nspid(buf, nspid);
}

bool procs_is_descendant(pid_t pid, pid_t ancestor)
{
	pid_t ppid;
	int depth;

	for (depth = 0; depth < 4096 && pid > 1; depth++) {
		if (pid == ancestor)
			return true;
		if (procs_ppid(pid, &ppid))
			return false;
		pid = ppid;
	}
	return pid == ancestor;
}

/*
 * fd if it is a regular file, else closed and -EINVAL (or fstat's -errno). What else a target
 * put there (a FIFO, a device) is refused, counted and logged once (bounds.h); a directory is
 * only a wrong guess of a lookup.
 */
static int procs_regular(int fd, const char *shown)
{
	struct stat st;
	int err;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		if (!S_ISDIR(st.st_mode))
			bounds_refuse(BOUND_REGULAR, shown, (uint64_t)st.st_dev,
				      (uint64_t)st.st_ino, "the file", 0);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* mountinfo's escapes (\040 for a space, \011, \012, \134) undone in place */
static void procs_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Whether mount point mp holds path (at a whole component); its length if so, else -1. */
static ssize_t procs_mount_holds(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (n == 1 && mp[0] == '/')
		return path[0] == '/' ? 1 : -1;
	return strncmp(mp, path, n) == 0 && (path[n] == '/' || path[n] == '\0') ? (ssize_t)n : -1;
}

int procs_served_fs(const char *procdir, const char *path, uint64_t dev, char *type, size_t len,
		    uint64_t *mount_dev)
{
	char fname[PATH_MAX], *line, *save, *f[5], *sep, *fstype;
	ssize_t best = -1, held;
	unsigned int maj, min;
	struct lines mi;
	int i, err, r;

	type[0] = '\0';
	*mount_dev = 0;
	/* a block device's filesystem is the kernel's (fuseblk needs root to mount) */
	if (dev && major(dev) != 0)
		return 0;
	if (snprintf(fname, sizeof(fname), "%s/mountinfo", procdir) >= (int)sizeof(fname))
		return -ENAMETOOLONG;
	err = lines_open(&mi, fname, BOUND_MOUNTS_BYTES);
	if (err)
		return err;
	while ((r = lines_next(&mi)) > 0) {
		line = mi.line;
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE SOURCE OPTIONS */
		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = '\0';
		fstype = strtok_r(sep + 3, " \n", &save);
		for (i = 0; i < 5; i++)
			f[i] = strtok_r(i ? NULL : line, " ", &save);
		if (!fstype || !f[4] || sscanf(f[2], "%u:%u", &maj, &min) != 2)
			continue;
		if (dev) {
			if (makedev(maj, min) != dev)
				continue;
		} else {
			procs_unescape(f[4]);
			/* the mount whose point holds path the most closely; the last of equal ones
			 * (mounted over the others) */
			held = procs_mount_holds(f[4], path);
			if (held < best || held < 0)
				continue;
			best = held;
		}
		snprintf(type, len, "%s", fstype);
		*mount_dev = makedev(maj, min);
		if (dev)
			break;
	}
	lines_close(&mi);
	if (r == -EFBIG) {
		bounds_refuse(BOUND_MOUNTS, fname, 0, 0, "the mount table", 0);
		return r;
	}
	return strncmp(type, "fuse", 4) == 0 ? 1 : 0;
}

/*
 * 0 if a file of the process whose /proc directory is procdir may be opened as far as its
 * filesystem goes, else refused (counted, logged once) with -EPERM: on FUSE, or its mount
 * table past the bound.
 */
static int procs_check_fs(const char *procdir, const char *path, uint64_t dev, const char *shown)
{
	char type[64];
	uint64_t mdev;
	int r = procs_served_fs(procdir, path, dev, type, sizeof(type), &mdev);

	/* logged once per mount (its device), whichever of its files is met first */
	if (r == 1)
		bounds_refuse(BOUND_SERVED, shown, mdev, 0, type, 0);
	/* a mount table that cannot be read: the process is gone, or it cannot be told */
	return r == 0 ? 0 : r == 1 || r == -EFBIG ? -EPERM : r;
}

int procs_open_in_root(const char *root, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		/* no link at all: the mount table says which filesystem holds path only as it is
		 * written (a link could lead onto FUSE); a path from the maps has none (the kernel
		 * writes it resolved), and a file replaced by a link is read through map_files */
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS,
	};
	char procdir[PATH_MAX];
	size_t n = root ? strlen(root) : 0;
	int dfd, fd;

	/* "/proc/PID/root": the mount table beside it; "/": ours */
	if (n > 5 && strcmp(root + n - 5, "/root") == 0)
		snprintf(procdir, sizeof(procdir), "%.*s", (int)(n - 5), root);
	else
		snprintf(procdir, sizeof(procdir), "/proc/self");
	fd = procs_check_fs(procdir, path, 0, path);
	if (fd)
		return fd;
	dfd = open(root && root[0] ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(dfd);
	/* no fallback: a plain openat would follow the target's links out of its root */
	if (fd == -ENOSYS)
		bounds_openat2_unavailable(path);
	return procs_regular(fd, path);
}

int procs_open_mapped(pid_t pid, const struct proc_map *m)
{
	char mf[128], procdir[32];
	int fd;

	snprintf(procdir, sizeof(procdir), "/proc/%d", (int)pid);
	fd = procs_check_fs(procdir, NULL, m->dev, m->path ? m->path : "(the mapping)");
	if (fd)
		return fd;
	/* a magic link by design: it is the mapping's own file, whatever its name says now */
	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start,
		 m->end);
	fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	return procs_regular(fd < 0 ? -errno : fd, m->path ? m->path : mf);
}

bool procs_is_mapped_file(int fd, const struct proc_map *m, bool any_dev)
{
	struct stat st;

	return !fstat(fd, &st) && (uint64_t)st.st_ino == m->inode &&
	       (any_dev || (uint64_t)st.st_dev == m->dev);
}

int procs_parse_start_ticks(const char *stat, uint64_t *ticks)
{
	const char *p = strrchr(stat, ')');
	unsigned long long v;
	int field;

	/* a text ending at ')' has no field after it (and p + 1 below would pass its NUL) */
	if (!p || !p[1])
		return -EINVAL;
	/* after "pid (comm)" come field 3 (state) ... field 22 (starttime) */
	p++;
	for (field = 2; field < 21; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	if (sscanf(p, " %llu", &v) != 1)
		return -EINVAL;
	*ticks = v;
	return 0;
}

int procs_start_ticks(pid_t pid, uint64_t *ticks)
{
	char fname[64], buf[1024];
	ssize_t n;
	int fd;

	snprintf(fname, sizeof(fname), "/proc/%d/stat", pid);
	fd = open(fname, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	return procs_parse_start_ticks(buf, ticks);
}
