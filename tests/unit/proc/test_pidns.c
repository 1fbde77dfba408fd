// SPDX-License-Identifier: GPL-2.0-only
/* The daemon's pid namespace, and the refusal of a /proc that is not that namespace's. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/pidns.h"

Test(pidns, nspid_of_this_namespace)
{
	char why[512] = "";

	cr_assert_eq(pidns_check_nspid("\t4242\n", 4242, why, sizeof(why)), 0);
	cr_assert_eq(pidns_check_nspid(" 1", 1, why, sizeof(why)), 0);
	cr_assert_eq(pidns_check_nspid("", 1, why, sizeof(why)), -EINVAL);
	cr_assert_eq(pidns_check_nspid("\tx\n", 1, why, sizeof(why)), -EINVAL);
}

Test(pidns, nspid_of_a_proc_above)
{
	char why[512] = "";

	/* the host's /proc read from a namespace two levels down: host pid first */
	cr_assert_eq(pidns_check_nspid("\t31337\t12\t1\n", 1, why, sizeof(why)), -EXDEV);
	cr_assert(strstr(why, "2 level(s) above"), "%s", why);
	cr_assert(strstr(why, "pid 31337"), "%s", why);
	cr_assert(strstr(why, "--mount-proc"), "%s", why);
	/* one pid, not ours: another namespace's /proc */
	cr_assert_eq(pidns_check_nspid("\t7\n", 8, why, sizeof(why)), -EXDEV);
	cr_assert(strstr(why, "not mounted for"), "%s", why);
}

/* The exit status of pid, or -1. */
static int status_of(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * Runs fn in a grandchild: a child unshares (flags) and forks it, as pid 1 of the new namespace.
 * The test's process never unshares: past its namespace's pid 1, no process can fork into it,
 * and LeakSanitizer forks its tracer at the test's exit (the sanitizer suite).
 */
static int in_child(int flags, int (*fn)(void))
{
	pid_t pid = fork(), grandchild;
	int st;

	if (pid == 0) {
		if (unshare(flags))
			_exit(100);
		grandchild = fork();
		if (grandchild == 0)
			_exit(fn());
		st = status_of(grandchild);
		_exit(st < 0 ? 101 : st);
	}
	return status_of(pid);
}

/* pid 1 of a new namespace, with the parent's /proc: refused (exit 0 when so). */
static int refuses_parents_proc(void)
{
	char why[512];
	uint32_t ino = 1;

	if (getpid() != 1)
		return 2;
	if (pidns_self(&ino, why, sizeof(why)) != -EXDEV || ino != 0)
		return 3;
	return strstr(why, "level(s) above") ? 0 : 4;
}

/* pid 1 of a new namespace, with a /proc of its own mounted: its namespace's inode. */
static int takes_own_proc(void)
{
	char why[512];
	struct stat st;
	uint32_t ino = 0;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return 2;
	if (pidns_self(&ino, why, sizeof(why)) || stat("/proc/self/ns/pid", &st))
		return 3;
	return ino == (uint32_t)st.st_ino && ino != PIDNS_INIT_INO ? 0 : 4;
}

/* Root, in the initial namespace: else the test is skipped, and says why. */
static void need_initial_namespace(void)
{
	struct stat st;

	if (geteuid() != 0)
		cr_skip_test("needs root (a new pid namespace)");
	cr_assert_eq(stat("/proc/self/ns/pid", &st), 0);
	if (st.st_ino != PIDNS_INIT_INO)
		cr_skip_test("the tests run in a pid namespace already");
}

Test(pidns, the_initial_namespace)
{
	char why[512];
	uint32_t ino = 1;

	need_initial_namespace();
	cr_assert_eq(pidns_self(&ino, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(ino, 0);
}

/* Each test is a process of its own (Criterion): the unshare is the test's, not the runner's. */
Test(pidns, a_new_namespace_with_the_parents_proc)
{
	need_initial_namespace();
	cr_assert_eq(in_child(CLONE_NEWPID, refuses_parents_proc), 0);
}

Test(pidns, a_new_namespace_with_its_own_proc)
{
	need_initial_namespace();
	cr_assert_eq(in_child(CLONE_NEWPID | CLONE_NEWNS, takes_own_proc), 0);
}
