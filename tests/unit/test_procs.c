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
