// SPDX-License-Identifier: GPL-2.0-only
/* /proc parsing: the start time that tells a process from a later one with the same pid. */
#include <criterion/criterion.h>
#include <errno.h>
#include <unistd.h>

#include "procs.h"

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
