// SPDX-License-Identifier: GPL-2.0-only
/* procs.c - /proc parsing. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "procs.h"

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
	FILE *f;
	int err = 0;

	out->v = NULL;
	out->n = 0;
	snprintf(fname, sizeof(fname), "/proc/%d/maps", pid);
	f = fopen(fname, "re");
	if (!f)
		return -errno;
	while (getline(&line, &lcap, f) > 0) {
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

/* Value of the status line "Key:\t..." into buf. */
static int status_field(pid_t pid, const char *key, char *buf, size_t len)
{
	char fname[64], line[512];
	size_t klen = strlen(key);
	FILE *f;
	int err = -ENOENT;

	snprintf(fname, sizeof(fname), "/proc/%d/status", pid);
	f = fopen(fname, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			snprintf(buf, len, "%s", line + klen + 1);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

int procs_ppid(pid_t pid, pid_t *ppid)
{
	char buf[64];
	int err = status_field(pid, "PPid", buf, sizeof(buf));

	if (err)
		return err;
	*ppid = (pid_t)strtol(buf, NULL, 10);
	return 0;
}

int procs_nspid(pid_t pid, pid_t *nspid)
{
	char buf[256], *p, *end;
	long v, last = -1;
	int err = status_field(pid, "NSpid", buf, sizeof(buf));

	if (err)
		return err;
	/* "NSpid:\t1234\t1": the pid in the namespace of this /proc (the daemon's, pidns.c)
	 * first, the process's innermost namespace last */
	for (p = buf;; p = end) {
		v = strtol(p, &end, 10);
		if (end == p)
			break;
		last = v;
	}
	if (last <= 0)
		return -EINVAL;
	*nspid = (pid_t)last;
	return 0;
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

int procs_thread_name(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char fname[64];
	FILE *f;
	int err = 0;

	snprintf(fname, sizeof(fname), "/proc/%d/task/%d/comm", pid, tid);
	f = fopen(fname, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		err = -EIO;
	else
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	return err;
}

int procs_root_path(pid_t pid, const char *path, char *buf, size_t len)
{
	int n = snprintf(buf, len, "/proc/%d/root%s", pid, path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
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
