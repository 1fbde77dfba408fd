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

#include "lib/bounds.h"
#include "lib/text.h"
#include "proc/procs.h"

int procs_list(pid_t **pids, size_t *n)
{
	struct dirent *de;
	size_t cap = 0;
	pid_t *v = NULL, *nv;
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
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
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
	char fname[64], *line = NULL;
	size_t cap = 0, lcap = 0;
	struct proc_map *nv;
	uint64_t read = 0;
	ssize_t n;
	FILE *f;
	int err = 0;

	out->v = NULL;
	out->n = 0;
	snprintf(fname, sizeof(fname), "/proc/%d/maps", pid);
	f = fopen(fname, "re");
	if (!f)
		return -errno;
	while ((n = getline(&line, &lcap, f)) > 0) {
		/* a target chooses how many mappings it has and how long their paths are */
		read += (uint64_t)n;
		if (read > BOUND_MAPS_BYTES) {
			bounds_refuse(BOUND_MAPS, fname, 0, 0, "the list of mappings", read);
			err = -EFBIG;
			break;
		}
		if (out->n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(out->v, cap * sizeof(*nv));
			if (!nv) {
				err = -ENOMEM;
				break;
			}
			out->v = nv;
		}
		if (procs_parse_maps_line(line, &out->v[out->n]) == 0)
			out->n++;
	}
	free(line);
	fclose(f);
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

/*
 * Value of the status line "Key:\t..." into buf. Lines are read in pieces of the buffer's size
 * (a Groups line may be long): only a piece that starts a line can be the key's.
 */
static int status_field(pid_t pid, const char *key, char *buf, size_t len)
{
	char fname[64], line[512];
	bool at_start = true;
	FILE *f;
	int err = -ENOENT;

	snprintf(fname, sizeof(fname), "/proc/%d/status", pid);
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
	char buf[64];
	int err = status_field(pid, "PPid", buf, sizeof(buf));

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
	char buf[512];
	int err = status_field(pid, "NSpid", buf, sizeof(buf));

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

int procs_root_path(pid_t pid, const char *path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/proc/%d/root%s", pid, path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
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

int procs_open_in_root(const char *root, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int dfd, fd;

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
	char mf[128];
	int fd;

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
