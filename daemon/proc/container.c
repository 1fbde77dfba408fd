// SPDX-License-Identifier: GPL-2.0-only
/*
 * container.c - container ids from cgroup paths. Formats seen in the wild:
 *   docker (cgroupfs driver)      0::/docker/<64 hex>
 *   docker (systemd driver)       0::/system.slice/docker-<64 hex>.scope
 *   containerd / CRI (Kubernetes) 0::/kubepods/besteffort/pod<uid>/<64 hex>
 *                                 0::/kubepods.slice/kubepods-burstable.slice/
 *                                    kubepods-burstable-pod<uid>.slice/cri-containerd-<64 hex>.scope
 *   CRI-O                         .../crio-<64 hex>.scope
 *   podman / libpod               0::/machine.slice/libpod-<64 hex>.scope[/container]
 *                                 0::/user.slice/.../libpod-<64 hex>.scope
 *   systemd-nspawn / machined     0::/machine.slice/machine-<name>.scope  -> "<name>"
 * cgroup v1 files have one line per hierarchy ("12:pids:/docker/<id>"); any line will do.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proc/container.h"

#define HEX_ID_LEN 64

static int is_hex_id(const char *s, size_t len)
{
	size_t i;

	if (len != HEX_ID_LEN)
		return 0;
	for (i = 0; i < len; i++) {
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return 0;
	}
	return 1;
}

/* A 64-hex id in one path component, with an optional "<engine>-" prefix and ".scope" suffix. */
static int component_id(const char *c, size_t len, const char **id)
{
	const char *dash;

	if (len > 6 && strncmp(c + len - 6, ".scope", 6) == 0)
		len -= 6;
	if (is_hex_id(c, len)) {
		*id = c;
		return 1;
	}
	dash = memchr(c, '-', len);
	while (dash) {
		size_t rest = len - (size_t)(dash + 1 - c);

		if (is_hex_id(dash + 1, rest)) {
			*id = dash + 1;
			return 1;
		}
		dash = memchr(dash + 1, '-', rest);
	}
	return 0;
}

static int copy_id(char *buf, size_t size, const char *s, size_t len)
{
	if (len + 1 > size)
		return -ENOSPC;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return 0;
}

/* One line's path: the innermost component that names a container. */
static int path_id(const char *path, size_t plen, char *buf, size_t size)
{
	const char *end = path + plen, *c = path, *slash, *id, *best = NULL;
	const char *machine = NULL;
	size_t clen, mlen = 0;

	while (c < end) {
		slash = memchr(c, '/', (size_t)(end - c));
		clen = slash ? (size_t)(slash - c) : (size_t)(end - c);
		if (clen && component_id(c, clen, &id))
			best = id;
		else if (clen > 15 && strncmp(c, "machine-", 8) == 0 &&
			 strncmp(c + clen - 6, ".scope", 6) == 0) {
			machine = c + 8;
			mlen = clen - 14;
		}
		c += clen + 1;
	}
	if (best)
		return copy_id(buf, size, best, HEX_ID_LEN);
	if (machine && mlen)
		return copy_id(buf, size, machine, mlen);
	return -ENOENT;
}

bool container_cgroup_line(const char *line, size_t len, struct span *hierarchy,
			   struct span *controllers, struct span *path)
{
	const char *c1 = memchr(line, ':', len), *c2;

	c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
	if (!c2)
		return false;
	*hierarchy = (struct span){line, (size_t)(c1 - line)};
	*controllers = (struct span){c1 + 1, (size_t)(c2 - c1 - 1)};
	*path = (struct span){c2 + 1, len - (size_t)(c2 + 1 - line)};
	return true;
}

int container_id_parse(const char *text, char *buf, size_t size)
{
	struct span hierarchy, controllers, path;
	const char *line = text, *nl;
	size_t len;
	int err = -ENOENT, seen = 0;

	if (!text)
		return -EINVAL;
	while (*line) {
		nl = strchr(line, '\n');
		len = nl ? (size_t)(nl - line) : strlen(line);
		if (container_cgroup_line(line, len, &hierarchy, &controllers, &path)) {
			seen = 1;
			err = path_id(path.p, path.len, buf, size);
			if (err != -ENOENT)
				return err;
		} else if (len) {
			return -EINVAL;
		}
		line += len + (nl ? 1 : 0);
	}
	return seen ? -ENOENT : -EINVAL;
}

int container_id_of(pid_t pid, char *buf, size_t size)
{
	char fname[64], text[8192];
	size_t n;
	FILE *f;

	snprintf(fname, sizeof(fname), "/proc/%d/cgroup", pid);
	f = fopen(fname, "re");
	if (!f)
		return -errno;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return container_id_parse(text, buf, size);
}
