// SPDX-License-Identifier: GPL-2.0-only
/* The oneshot summary's tables: one row per function, whatever the places it is called from;
 * with clock = wall, each thread's time per state. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/aggregate.h"
#include "view/toptable.h"

static unsigned int count_rows(const char *text, const char *needle)
{
	unsigned int n = 0;
	const char *p;

	for (p = strstr(text, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/*
 * A C function has the path and line of its caller (as in Ruby's backtraces): called from two
 * files, it is still one function, one row (the README's example showed Kernel#require twice).
 * A Ruby method of the same name in two files is two functions.
 */
Test(toptable, a_c_function_called_from_two_files_is_one_row)
{
	static const int64_t one[1] = {1};
	struct aggregate_proc_info info = {.pid = 1, .nspid = 1, .service = "app"};
	struct aggregate *a = aggregate__new(1, 100);
	struct aggregate_proc *p;
	uint32_t f[2];
	char *text = NULL;
	size_t len = 0;
	FILE *out;

	cr_assert_not_null(a);
	p = aggregate_proc__new(a, &info);
	cr_assert_not_null(p);
	f[0] = aggregate_frame_id(p, AGG_FRAME_CFUNC, "Kernel#require", "/app/a.rb", 0, 3);
	f[1] = aggregate_frame_id(p, AGG_FRAME_RUBY, "<main>", "/app/a.rb", 1, 3);
	cr_assert_eq(aggregate_add(a, p, 1, "ruby", f, 2, one), 0);
	f[0] = aggregate_frame_id(p, AGG_FRAME_CFUNC, "Kernel#require", "/app/b.rb", 0, 7);
	f[1] = aggregate_frame_id(p, AGG_FRAME_RUBY, "<main>", "/app/b.rb", 1, 7);
	cr_assert_eq(aggregate_add(a, p, 1, "ruby", f, 2, one), 0);
	out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cr_assert_eq(toptable_write(out, a, 20), 0);
	fclose(out);
	cr_assert_eq(count_rows(text, "Kernel#require [c]"), 1, "%s", text);
	cr_assert_eq(count_rows(text, "<main>"), 2, "%s", text);
	cr_assert(strstr(text, "       2  Kernel#require [c]\n"), "both samples on one row: %s",
		  text);
	free(text);
	aggregate__free(a);
}

/* The oneshot summary: each Ruby thread's time and state shares, then each state's time and
 * its biggest leaf functions, from the aggregate's wall samples (cpu-clock samples left out). */
Test(toptable, wall_time_per_thread_and_state)
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
	toptable_wall(f, a);
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
