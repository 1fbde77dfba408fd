// SPDX-License-Identifier: GPL-2.0-only
/*
 * wall.c's pure parts: the kernel version gate of --clock wall (6.1) and the state labels the
 * profiles carry (RP_TSTATE_* of include/rubyprof.h).
 */
#include <criterion/criterion.h>

#include "profile/wall.h"
#include "rubyprof.h"

Test(wall, kernel_gate)
{
	cr_assert(wall_kernel_at_least("6.1.0", 6, 1));
	cr_assert(wall_kernel_at_least("6.18.44-fc-v782", 6, 1));
	cr_assert(wall_kernel_at_least("7.0", 6, 1));
	cr_assert_not(wall_kernel_at_least("6.0.19", 6, 1));
	cr_assert_not(wall_kernel_at_least("5.19.17-generic", 6, 1));
	cr_assert_not(wall_kernel_at_least("garbage", 6, 1));
	cr_assert_not(wall_kernel_at_least("", 6, 1));
}

Test(wall, state_names)
{
	cr_assert_null(wall_state_name(RP_TSTATE_NONE));
	/* a cpu-clock sample has no thread_state label */
	cr_assert_null(wall_state_name(RP_TSTATE_ON_CPU));
	cr_assert_str_eq(wall_state_name(RP_TSTATE_RUNNING), "running");
	cr_assert_str_eq(wall_state_name(RP_TSTATE_GVL_WAIT), "gvl_wait");
	cr_assert_str_eq(wall_state_name(RP_TSTATE_SLEEPING), "sleeping");
	cr_assert_str_eq(wall_state_name(RP_TSTATE_BLOCKED_IO), "blocked_io");
	cr_assert_str_eq(wall_state_name(RP_TSTATE_STOPPED), "stopped");
	cr_assert_str_eq(wall_state_name(RP_TSTATE_UNKNOWN), "unknown");
	cr_assert_null(wall_state_name(RP_TSTATE_UNKNOWN + 1));
	cr_assert_null(wall_state_name(255));
}

Test(wall, syscall_names)
{
	cr_assert_null(wall_syscall_name(0));
	cr_assert_str_eq(wall_syscall_name(0 + 1), "read");
	cr_assert_str_eq(wall_syscall_name(7 + 1), "poll");
	cr_assert_str_eq(wall_syscall_name(202 + 1), "futex");
	cr_assert_str_eq(wall_syscall_name(271 + 1), "ppoll");
	cr_assert_str_eq(wall_syscall_name(100000), "other");
}
