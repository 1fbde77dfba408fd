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

/* The oneshot summary: each Ruby thread's time and state shares, then each state's time and
 * its biggest leaf functions, from the aggregate's wall samples (cpu-clock samples left out). */
Test(wall, report)
{
	struct aggregate_proc_info info = {.pid = 42, .nspid = 42, .service = "app"};
	struct aggregate *a = aggregate__new(2, 100);
	struct aggregate_proc *p = aggregate_proc__new(a, &info);
	uint32_t sl, rd, run, top;
	struct aggregate_thread t1 = {.tid = 43,
				      .name = "w",
				      .ruby_thread = "0x10",
				      .ruby_thread_name = "worker",
				      .state = "sleeping"};
	struct aggregate_thread t1io = t1, t2 = {.tid = 44,
						 .name = "spin",
						 .ruby_thread = "0x20",
						 .ruby_thread_name = "",
						 .state = "running"};
	struct aggregate_thread cpu = {.tid = 44, .name = "spin", .ruby_thread = "0x20"};
	const int64_t tick[2] = {1, 250000000}, one[2] = {1, 10000000};
	uint32_t st_sleep[2], st_read[2], st_run[2];
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_not_null(p);
	sl = aggregate_frame_id(p, AGG_FRAME_CFUNC, "Kernel#sleep", "", 0, 0);
	rd = aggregate_frame_id(p, AGG_FRAME_CFUNC, "IO#read", "", 0, 0);
	run = aggregate_frame_id(p, AGG_FRAME_RUBY, "Object#spin", "/a.rb", 1, 2);
	top = aggregate_frame_id(p, AGG_FRAME_RUBY, "<main>", "/a.rb", 1, 9);
	st_sleep[0] = sl, st_sleep[1] = top;
	st_read[0] = rd, st_read[1] = top;
	st_run[0] = run, st_run[1] = top;
	t1io.state = "blocked_io";
	/* worker: 3 ticks sleeping, 1 blocked in read; spin: 4 ticks running */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(aggregate_add_thread(a, p, &t1, st_sleep, 2, tick), 0);
	cr_assert_eq(aggregate_add_thread(a, p, &t1io, st_read, 2, tick), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(aggregate_add_thread(a, p, &t2, st_run, 2, tick), 0);
	cr_assert_eq(aggregate_add_thread(a, p, &cpu, st_run, 2, one), 0);

	f = open_memstream(&out, &len);
	cr_assert_not_null(f);
	wall_report(f, a);
	fclose(f);
	cr_assert_str_eq(out, "wall time per thread and state:\n"
			      "  pid 42 thread 0x10 (worker): 1.000 s, sleeping 75.0%, "
			      "blocked_io 25.0%\n"
			      "  pid 42 thread 0x20 (spin): 1.000 s, running 100.0%\n"
			      "wall time per state, top leaf functions:\n"
			      "  running       1.000 s: 100.0% Object#spin\n"
			      "  sleeping      0.750 s: 100.0% Kernel#sleep\n"
			      "  blocked_io    0.250 s: 100.0% IO#read\n");
	free(out);
	aggregate__free(a);
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
