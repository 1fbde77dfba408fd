/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * container.h - the container a process runs in, from its cgroup path: docker, containerd/CRI
 * (Kubernetes pods), podman/libpod and systemd-nspawn/machine slices. Used as a pprof label.
 */
#ifndef RP_CONTAINER_H
#define RP_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/span.h"

/* Longest id written (64 hex digits + NUL, and room for a prefix). */
#define CONTAINER_ID_MAX 80

/*
 * Container id found in the text of a /proc/PID/cgroup file (all its lines, v1 and v2 formats).
 * 0 and the id in buf, -ENOENT when the process is in no container, -EINVAL on malformed input.
 */
int container_id_parse(const char *cgroup_text, char *buf, size_t len);

/*
 * One line of a /proc/PID/cgroup file, "hierarchy-id:controllers:path" (len bytes, without its
 * newline): its three parts. False for a line without its two colons. (The service naming reads
 * the same lines for its rules and units: appname.c.)
 */
bool container_cgroup_line(const char *line, size_t len, struct span *hierarchy,
			   struct span *controllers, struct span *path);

/* Reads /proc/PID/cgroup and parses it. 0, -ENOENT, or -errno. */
int container_id_of(pid_t pid, char *buf, size_t len);

#endif
