// SPDX-License-Identifier: GPL-2.0-only
/* /proc parsing: the start time that tells a process from a later one with the same pid. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/bounds.h"
#include "proc/procs.h"

Test(procs, start_ticks_from_stat_text)
{
	/* a command with spaces and ')' in it: the fields are counted from the last ')' */
	const char *stat = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 "
			   "0 987654 10000 200 18446744073709551615";
	uint64_t t = 0;

	cr_assert_eq(procs_parse_start_ticks(stat, &t), 0);
	cr_assert_eq(t, 987654);
	cr_assert_eq(procs_parse_start_ticks("4242 (a) S 1 2", &t), -EINVAL);
	cr_assert_eq(procs_parse_start_ticks("no parenthesis", &t), -EINVAL);
	/* ends at its comm: nothing after it (was read past the NUL; found by fuzz_proc) */
	cr_assert_eq(procs_parse_start_ticks("4242 (a)", &t), -EINVAL);
}

Test(procs, start_ticks_of_a_live_process)
{
	uint64_t a = 0, b = 0;

	cr_assert_eq(procs_start_ticks(getpid(), &a), 0);
	cr_assert_eq(procs_start_ticks(getpid(), &b), 0);
	cr_assert_eq(a, b);
	cr_assert_gt(a, 0);
	/* pid 1 started before us */
	cr_assert_eq(procs_start_ticks(1, &b), 0);
	cr_assert_leq(b, a);
	cr_assert_eq(procs_start_ticks(-5, &b), -ENOENT);
}

/* NSpid and PPid of /proc/PID/status: the innermost pid, digits only, within a pid's range. */
Test(procs, status_values)
{
	char value[64];
	pid_t pid = -1;

	cr_assert_eq(
		procs_parse_status_line("NSpid:\t4321\t17\t1\n", "NSpid", value, sizeof(value)), 0);
	cr_assert_eq(procs_parse_nspid(value, &pid), 0);
	cr_assert_eq(pid, 1);
	cr_assert_eq(procs_parse_status_line("NSpgid:\t4321\n", "NSpid", value, sizeof(value)),
		     -ENOENT);
	cr_assert_eq(procs_parse_nspid("\t88\n", &pid), 0);
	cr_assert_eq(pid, 88);
	/* a number past a pid's range was cut to an int: 4294967297 read as 1 */
	cr_assert_eq(procs_parse_nspid("\t12\t4294967297\n", &pid), -EINVAL);
	cr_assert_eq(procs_parse_nspid("\t12\t13x\n", &pid), -EINVAL);
	cr_assert_eq(procs_parse_nspid("\t0\n", &pid), -EINVAL);
	cr_assert_eq(procs_parse_nspid("\n", &pid), -EINVAL);
	cr_assert_eq(procs_parse_ppid("\t1\n", &pid), 0);
	cr_assert_eq(pid, 1);
	cr_assert_eq(procs_parse_ppid("\t-5\n", &pid), -EINVAL);
	cr_assert_eq(procs_parse_ppid("\t1 2\n", &pid), -EINVAL);
}

Test(procs, nspid_of_this_process)
{
	pid_t pid = -1;

	cr_assert_eq(procs_nspid(getpid(), &pid), 0);
	cr_assert_eq(pid, getpid()); /* getpid() is the pid in its own namespace: NSpid's last */
}

/*
 * A process chooses how many mappings it has and how long their paths are: its maps past
 * BOUND_MAPS_BYTES are not read on (64,000 mappings of a 3.8 KB path are 250 MB of text, 2 s of
 * the main loop), refused with -EFBIG and counted.
 */
Test(procs, maps_past_the_bound_are_refused, .timeout = 60)
{
	char dir[PATH_MAX] = "/tmp/rp-maps-XXXXXX", path[PATH_MAX];
	struct bounds_stats before, after;
	struct proc_maps m = {0};
	size_t i, n;
	void *p;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	/* a path of ~3 KB, mapped page by page at offsets 0 and 8192 in turn (never merged) */
	snprintf(path, sizeof(path), "%s/", dir);
	for (i = 0; i < 12; i++) {
		n = strlen(path);
		memset(path + n, 'd', 250);
		path[n + 250] = '\0';
		cr_assert(mkdir(path, 0700) == 0, "mkdir: %s", strerror(errno));
		strcat(path, "/");
	}
	strcat(path, "f");
	fd = open(path, O_RDWR | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 16384), 0);
	n = (BOUND_MAPS_BYTES / strlen(path)) + 100;
	for (i = 0; i < n; i++) {
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, (off_t)(i % 2) * 8192);
		cr_assert_neq(p, MAP_FAILED);
	}
	bounds_stats(&before);
	cr_expect_eq(procs_read_maps(getpid(), &m), -EFBIG);
	cr_expect_eq(m.n, 0);
	bounds_stats(&after);
	cr_expect_eq(after.refused[BOUND_MAPS] - before.refused[BOUND_MAPS], 1);
	close(fd);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	cr_expect_eq(system(path), 0);
}

/*
 * openat2 refused with ENOSYS (a seccomp filter, as a container runtime's may be): the file is not
 * opened (no fallback that would follow links out of the root), counted each time, logged once.
 */
Test(procs, openat2_unavailable_is_counted_and_refused)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
	struct bounds_stats before, after;
	int fd;

	/* before the filter: the file opens */
	fd = procs_open_in_root("/", "/etc/passwd");
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	close(fd);
	cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	cr_assert_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0, "%s", strerror(errno));
	bounds_stats(&before);
	cr_assert_eq(procs_open_in_root("/", "/etc/passwd"), -ENOSYS);
	cr_assert_eq(procs_open_in_root("/", "/etc/hostname"), -ENOSYS);
	bounds_stats(&after);
	cr_assert_eq(after.openat2_unavailable - before.openat2_unavailable, 2);
	/* only openat2 is filtered: other opens still work */
	fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	close(fd);
}

/* A fake /proc/PID directory holding only a mountinfo with the lines given. */
static void fake_mountinfo(char *dir, size_t len, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(dir, len, "/tmp/rp-mountinfo.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/mountinfo", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void unfake_mountinfo(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/mountinfo", dir);
	unlink(path);
	rmdir(dir);
}

/* Lines as the kernel writes them (a host with a FUSE mount of a tenant's, from this VM). */
static const char MOUNTS[] =
	"22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
	"25 22 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw,size=12279120k\n"
	"30 22 0:26 / /tmp rw,nosuid,nodev shared:9 - tmpfs tmpfs rw\n"
	"88 30 0:51 / /tmp/t\\040dir/mnt rw,nosuid,nodev,relatime shared:40 - fuse.stallfs stallfs "
	"rw,user_id=0,group_id=0\n"
	"90 30 0:53 / /tmp/over rw shared:41 - fuse sshfs rw\n"
	"91 30 0:54 / /tmp/over rw shared:42 - tmpfs tmpfs rw\n";

Test(procs, served_fs_by_device_and_by_path)
{
	char dir[64], type[64];
	uint64_t mdev;

	fake_mountinfo(dir, sizeof(dir), MOUNTS);
	/* by device: the FUSE mount's, a tmpfs's, and a block device's (never looked up) */
	cr_assert_eq(procs_served_fs(dir, NULL, makedev(0, 51), type, sizeof(type), &mdev), 1);
	cr_assert_str_eq(type, "fuse.stallfs");
	cr_assert_eq(procs_served_fs(dir, NULL, makedev(0, 26), type, sizeof(type), &mdev), 0);
	cr_assert_str_eq(type, "tmpfs");
	cr_assert_eq(procs_served_fs(dir, NULL, makedev(8, 1), type, sizeof(type), &mdev), 0);
	cr_assert_str_eq(type, "");
	/* by path: the longest mount point at a whole component, its escapes undone */
	cr_assert_eq(
		procs_served_fs(dir, "/tmp/t dir/mnt/libruby.so.3.1", 0, type, sizeof(type), &mdev),
		1);
	cr_assert_eq(procs_served_fs(dir, "/tmp/t dir/mnt", 0, type, sizeof(type), &mdev), 1);
	cr_assert_eq(mdev, makedev(0, 51));
	cr_assert_eq(procs_served_fs(dir, "/tmp/t dir/mnt2/x", 0, type, sizeof(type), &mdev), 0);
	cr_assert_str_eq(type, "tmpfs");
	cr_assert_eq(procs_served_fs(dir, "/usr/lib/x.so", 0, type, sizeof(type), &mdev), 0);
	cr_assert_str_eq(type, "ext4");
	/* a mount over another at the same point: the last one is what a lookup reaches */
	cr_assert_eq(procs_served_fs(dir, "/tmp/over/x", 0, type, sizeof(type), &mdev), 0);
	cr_assert_str_eq(type, "tmpfs");
	unfake_mountinfo(dir);
	/* gone: the open is not tried */
	cr_assert_eq(procs_served_fs("/proc/999999999", "/x", 0, type, sizeof(type), &mdev),
		     -ENOENT);
}

Test(procs, served_fs_mount_table_past_its_bound)
{
	size_t line = 120, n = BOUND_MOUNTS_BYTES / line + 2, i;
	char dir[64], type[64], *text = malloc(n * line + 1), *p = text;
	struct bounds_stats before, after;
	uint64_t mdev;

	cr_assert_not_null(text);
	for (i = 0; i < n; i++)
		p += snprintf(p, line + 1, "%-*s\n", (int)line - 1,
			      "40 30 0:60 / /tmp/m rw - tmpfs tmpfs rw");
	fake_mountinfo(dir, sizeof(dir), text);
	free(text);
	bounds_stats(&before);
	cr_assert_eq(procs_served_fs(dir, "/tmp/m/x", 0, type, sizeof(type), &mdev), -EFBIG);
	bounds_stats(&after);
	cr_assert_eq(after.refused[BOUND_MOUNTS] - before.refused[BOUND_MOUNTS], 1);
	unfake_mountinfo(dir);
}

Test(procs, open_in_root_follows_no_link)
{
	char dir[64], link[PATH_MAX], path[PATH_MAX];
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/rp-nolink.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s/passwd", dir);
	cr_assert_eq(symlink("/etc/passwd", link), 0);
	/* a link could lead onto a FUSE mount that the mount table check never saw */
	cr_assert_eq(procs_open_in_root("/", link), -ELOOP);
	snprintf(path, sizeof(path), "%s", "/etc/passwd");
	fd = procs_open_in_root("/", path);
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	close(fd);
	unlink(link);
	rmdir(dir);
}
