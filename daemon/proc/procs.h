/* SPDX-License-Identifier: GPL-2.0-only */
/* procs.h - what /proc tells about processes: the list, memory maps, parents, names, pid namespaces. */
#ifndef RP_PROCS_H
#define RP_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_map {
	uint64_t start, end, offset;
	char perms[5];
	uint64_t dev;	/* the mapped file's device (makedev of maps' "MAJOR:MINOR"), 0 if none */
	uint64_t inode; /* and its inode: what a path must still name to be that file */
	char *path;	/* NULL for anonymous mappings; " (deleted)" stripped, see `deleted` */
	bool deleted;
	/* an OpenTelemetry process context (procctx.h): "/memfd:OTEL_CTX..." (path kept) or
	 * "[anon_shmem:OTEL_CTX]..." (no path) */
	bool otel_ctx;
};

struct proc_maps {
	struct proc_map *v;
	size_t n;
};

/* Every pid in /proc. *pids is malloc'd. 0 or -errno. */
int procs_list(pid_t **pids, size_t *n);

/* Parses /proc/PID/maps. 0 or -errno (-ENOENT/-ESRCH: the process is gone; -EFBIG: past
 * BOUND_MAPS_BYTES of text, refused, counted and logged once: bounds.h). */
int procs_read_maps(pid_t pid, struct proc_maps *out);
void procs_maps_free(struct proc_maps *m);
/* Parses one maps line into m (path strdup'd). 0 or -EINVAL. Exposed for tests. */
int procs_parse_maps_line(const char *line, struct proc_map *m);

/* Start time of the process (field 22 of /proc/PID/stat, clock ticks after boot): with the pid,
 * what tells a process from a later one with the same pid. 0 or -errno. */
int procs_start_ticks(pid_t pid, uint64_t *ticks);
/* Parses the text of a /proc/PID/stat file (the command may contain spaces and ')'). */
int procs_parse_start_ticks(const char *stat, uint64_t *ticks);

/* PPid from /proc/PID/status. 0 or -errno. */
int procs_ppid(pid_t pid, pid_t *ppid);
/*
 * The value of the line "key:\tVALUE" of a status file (fname: "/proc/PID/status",
 * "/proc/self/status"), its newline kept, into buf (cut at len). 0, -ENOENT without the key's
 * line, or fopen's -errno.
 */
int procs_status_field(const char *fname, const char *key, char *buf, size_t len);
/* pid in the process's own (innermost) pid namespace, from the NSpid line. 0 or -errno. */
int procs_nspid(pid_t pid, pid_t *nspid);
/*
 * The pure parts of the two, for tests: the value of line when it is "key:VALUE" (copied into
 * buf, cut at len; -ENOENT otherwise); PPid's value (one pid) and NSpid's (pids separated by
 * tabs: the last one, > 0). A pid is decimal digits within [0, INT_MAX]. 0 or -EINVAL.
 */
int procs_parse_status_line(const char *line, const char *key, char *buf, size_t len);
int procs_parse_ppid(const char *value, pid_t *ppid);
int procs_parse_nspid(const char *value, pid_t *nspid);
/* Whether pid is `ancestor` or one of its descendants. */
bool procs_is_descendant(pid_t pid, pid_t ancestor);

/*
 * Whether a file of the process whose /proc directory is procdir ("/proc/PID", "/proc/self")
 * is on a filesystem that a process serves (FUSE: "fuse", "fuse.NAME"): the mount of device dev
 * (dev != 0; a device with a block device of its own is never: 0 at once), else the mount
 * that holds path as the process sees it (the longest mount point; the last of equal ones). Its
 * type in type (empty if none found), its device in *mount_dev. 1: served; 0: not; -EFBIG: the mount table is past
 * BOUND_MOUNTS_BYTES (refused, counted); or fopen's -errno. Any local user can mount FUSE in a
 * user namespace of its own, and its server can leave an open or a read waiting for ever: no
 * timeout of ours would end a read in the kernel, so such a file is never opened.
 */
int procs_served_fs(const char *procdir, const char *path, uint64_t dev, char *type, size_t len,
		    uint64_t *mount_dev);

/*
 * The one way a file that a profiled process controls is opened (its objects, their debug
 * files): path resolved as a process whose root is `root` ("/proc/PID/root", or "/") sees it,
 * ".." kept inside that root (openat2 RESOLVE_IN_ROOT) and no link followed (-ELOOP: a link
 * could lead onto FUSE); non-blocking (a FIFO planted at the path must not hang us); only a
 * regular file (not a FIFO, a device, a directory); never on FUSE (procs_served_fs; -EPERM, counted and
 * logged once). Read-only. An fd, or -errno (-EINVAL: not a regular file).
 */
int procs_open_in_root(const char *root, const char *path);
/* The file that mapping m of pid maps, through /proc/PID/map_files (a deleted or replaced
 * file; CAP_CHECKPOINT_RESTORE), with the same rules. An fd, or -errno. */
int procs_open_mapped(pid_t pid, const struct proc_map *m);
/* Whether fd is the file that m maps: its inode, and its device unless any_dev (overlayfs:
 * maps may show the layer's device, fstat the overlay's). */
bool procs_is_mapped_file(int fd, const struct proc_map *m, bool any_dev);

#endif
