// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CFI unwinder on a real stack: this test process captures its own registers and a copy of
 * its stack three calls deep, then unwinds the copy with the module and finds its own functions
 * by name, as the daemon does with a sample's copy.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "lib/bounds.h"
#include "lib/clock.h"
#include "native/checksum.h"
#include "native/elf.h"
#include "native/unwinder.h"
#include "proc/procs.h"
#include "../stackcopy.h"

#define COPY_MAX 16384

struct capture {
	uint64_t ip, sp, bp;
	size_t len;
	uint8_t stack[COPY_MAX];
};

static struct capture cap;

/* Bytes from sp to the end of the mapping that holds it (the stack's top), at most max. */
static size_t stack_room(uint64_t sp, size_t max)
{
	struct proc_maps m = {0};
	size_t i, room = 0;

	cr_assert_eq(procs_read_maps(getpid(), &m), 0);
	for (i = 0; i < m.n; i++) {
		if (sp >= m.v[i].start && sp < m.v[i].end)
			room = m.v[i].end - sp;
	}
	procs_maps_free(&m);
	cr_assert_gt(room, 0, "sp is in no mapping");
	return room < max ? room : max;
}

/* The registers at one instruction of this function, and the stack as it is there. */
static __attribute__((noinline)) int unwind_test_capture(size_t len)
{
	uint64_t ip, sp, bp;

	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	cap.ip = ip;
	cap.sp = sp;
	cap.bp = bp;
	cap.len = stack_room(sp, len);
	/* the calls made from here use the stack below sp: the copy is the stack at `ip` */
	stackcopy(cap.stack, (uintptr_t)sp, cap.len);
	return 1;
}

static __attribute__((noinline)) int unwind_test_level2(size_t len)
{
	int r = unwind_test_capture(len);

	__asm__ volatile("" ::: "memory"); /* no tail call: level2 keeps its frame */
	return r + 1;
}

static __attribute__((noinline)) int unwind_test_level1(size_t len)
{
	int r = unwind_test_level2(len);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static struct unwind_input input_of(uint64_t func)
{
	return (struct unwind_input){
		.pid = getpid(),
		.tid = gettid(),
		.ip = cap.ip,
		.sp = cap.sp,
		.bp = cap.bp,
		.stack = cap.stack,
		.stack_len = cap.len,
		.func = func,
	};
}

/* Index of the first frame named `name` (return addresses looked up at their call), or -1. */
static int find_frame(struct unwinder *u, const uint64_t *pcs, size_t n, const char *name)
{
	struct unwind_sym sym;
	size_t i;

	for (i = 0; i < n; i++) {
		cr_assert_eq(unwinder_symbolize(u, getpid(), i ? pcs[i] - 1 : pcs[i], &sym), 0);
		if (sym.name && strcmp(sym.name, name) == 0)
			return (int)i;
	}
	return -1;
}

Test(unwind, own_stack_by_name)
{
	struct unwinder *u = unwinder__new(0);
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	struct unwind_sym sym;
	int c, l2, l1;

	cr_assert_not_null(u);
	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	struct unwind_input in = input_of(0);

	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_geq(res.n, 4, "only %zu frames", res.n);
	c = find_frame(u, pcs, res.n, "unwind_test_capture");
	l2 = find_frame(u, pcs, res.n, "unwind_test_level2");
	l1 = find_frame(u, pcs, res.n, "unwind_test_level1");
	cr_assert_eq(c, 0, "the leaf is the capturing function");
	cr_assert_eq(l2, 1);
	cr_assert_eq(l1, 2);
	/* and on to the test runner's frames, then the thread's first frame */
	cr_assert_eq(find_frame(u, pcs, res.n, "unwind_own_stack_by_name_impl"), 3);
	cr_assert_eq(res.end, UNWIND_END_OUTERMOST, "ended %d after %zu frames", res.end, res.n);

	/* the module of a frame is this test binary, with its build id */
	cr_assert_eq(unwinder_symbolize(u, getpid(), pcs[1] - 1, &sym), 0);
	cr_assert_not_null(sym.module);
	cr_assert_not_null(strstr(sym.module, "test_unwinder"), "module %s", sym.module);
	cr_assert_eq(strlen(sym.build_id), 40, "build id '%s'", sym.build_id);
	unwinder__free(u);
}

Test(unwind, stops_before_the_stop_function)
{
	struct unwinder *u = unwinder__new(0);
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];

	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	/* as rb_vm_exec: frames up to, not including, the first one inside it */
	struct unwind_input in = input_of((uint64_t)(uintptr_t)unwind_test_level1);

	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_eq(res.end, UNWIND_END_STOP_FUNC);
	cr_assert_eq(res.n, 2);
	cr_assert_eq(find_frame(u, pcs, res.n, "unwind_test_level2"), 1);
	/* a full caller array ends the walk too */
	cr_assert_eq(unwinder_unwind(u, &in, pcs, 1, &res), 0);
	cr_assert_eq(res.end, UNWIND_END_MAX);
	cr_assert_eq(res.n, 1);
	unwinder__free(u);
}

Test(unwind, short_copy_reads_the_rest_from_the_process)
{
	struct unwinder *u = unwinder__new(0);
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];

	/* 16 bytes: the caller's return address is above it, read from this (live) process,
	 * where the capturing frames are gone by now: what is found there is not asserted, only
	 * that the leaf stays and the read above the copy is reported */
	cr_assert_eq(unwind_test_level1(16), 3);
	struct unwind_input in = input_of(0);

	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert(res.past_copy);
	cr_assert_geq(res.n, 1);
	cr_assert_eq(find_frame(u, pcs, res.n, "unwind_test_capture"), 0);
	unwinder__free(u);
}

Test(unwind, gone_process_and_forget)
{
	struct unwinder *u = unwinder__new(2);
	struct unwind_result res;
	struct unwinder_stats st;
	struct unwind_sym sym;
	uint64_t pcs[8];
	pid_t child;

	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	struct unwind_input in = input_of(0);

	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	in.pid = child;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, 8, &res), -ESRCH);
	unwinder_stats(u, &st);
	cr_assert_eq(st.no_dwfl, 1);

	in.pid = getpid();
	cr_assert_eq(unwinder_unwind(u, &in, pcs, 8, &res), 0);
	cr_assert_eq(unwinder_symbolize(u, getpid(), pcs[0], &sym), 0);
	cr_assert_str_eq(sym.name, "unwind_test_capture");
	unwinder_forget(u, getpid());
	cr_assert_eq(unwinder_symbolize(u, getpid(), pcs[0], &sym), -ENOENT);
	unwinder__free(u);
}

Test(unwind, marks_the_frames_inside_a_function)
{
	struct unwinder *u = unwinder__new(0);
	uint8_t marks[UNWIND_MAX_FRAMES];
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	size_t i, marked = 0;

	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	/* as rb_vm_exec in a mixed stack: the walk goes on, its frames are marked */
	struct unwind_input in = input_of((uint64_t)(uintptr_t)unwind_test_level2);

	in.marks = marks;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_eq(res.end, UNWIND_END_OUTERMOST);
	cr_assert_geq(res.n, 4);
	for (i = 0; i < res.n; i++)
		marked += marks[i];
	cr_assert_eq(marked, 1);
	cr_assert_eq(marks[1], 1, "level2 is frame 1");
	cr_assert_eq(find_frame(u, pcs, res.n, "unwind_test_level1"), 2);
	unwinder__free(u);
}

/* Called from the unlikely branch of unwind_test_split: a cold function, so GCC moves the call
 * into unwind_test_split's cold part (unwind_test_split.cold, .text.unlikely). */
static __attribute__((noinline, cold)) int unwind_test_rare(size_t len)
{
	int r = unwind_test_capture(len);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

/* A call first, so that the frame is set up at the branch: the cold part carries it on. */
static __attribute__((noinline)) int unwind_test_split(size_t len, const volatile int *rare)
{
	int r = unwind_test_level2(0);

	if (__builtin_expect(*rare, 0))
		r += unwind_test_rare(len);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

Test(unwind, marks_the_cold_part_of_a_function)
{
	struct unwinder *u = unwinder__new(0);
	uint8_t marks[UNWIND_MAX_FRAMES];
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	struct unwind_sym sym;
	static const volatile int rare = 1;
	size_t i, marked = 0;

	cr_assert_gt(unwind_test_split(COPY_MAX, &rare), 2);
	/* as rb_vm_exec.cold: a frame in the function's cold part is inside the function */
	struct unwind_input in = input_of((uint64_t)(uintptr_t)unwind_test_split);

	in.marks = marks;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_eq(res.end, UNWIND_END_OUTERMOST);
	cr_assert_geq(res.n, 4);
	cr_assert_eq(find_frame(u, pcs, res.n, "unwind_test_rare"), 1);
	cr_assert_eq(unwinder_symbolize(u, getpid(), pcs[2] - 1, &sym), 0);
	if (!sym.name || strcmp(sym.name, "unwind_test_split.cold") != 0)
		cr_skip_test("the compiler made no cold part of unwind_test_split (frame 2 is %s)",
			     sym.name ? sym.name : "unnamed");
	for (i = 0; i < res.n; i++)
		marked += marks[i];
	cr_assert_eq(marks[2], 1,
		     "frame 2, in unwind_test_split.cold, is inside unwind_test_split");
	cr_assert_eq(marked, 1);
	unwinder__free(u);
}

/* A child forked from this process, stopped in pause() until killed: its mappings are ours. */
static pid_t paused_child(void)
{
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0) {
		pause();
		_exit(0);
	}
	return child;
}

static void reap(pid_t child)
{
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

Test(unwind, forked_processes_share_their_objects)
{
	struct unwinder *u = unwinder__new(0);
	pid_t a = paused_child(), b = paused_child();
	struct unwinder_stats st, st1;
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	struct unwind_sym sym;

	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	struct unwind_input in = input_of(0);

	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	unwinder_stats(u, &st1);
	cr_assert_geq(st1.elf.misses, 1, "this test binary at least was parsed");
	cr_assert_eq(st1.elf.hits, 0);
	cr_assert_eq(st1.elf.objects, st1.elf.misses);
	cr_assert_gt(st1.elf.bytes, 0);
	/* the children map the same files: nothing more is parsed, each object is shared */
	in.pid = in.tid = a;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	in.pid = in.tid = b;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_eq(unwinder_symbolize(u, b, pcs[1] - 1, &sym), 0);
	cr_assert_str_eq(sym.name, "unwind_test_level2");
	unwinder_stats(u, &st);
	cr_assert_eq(st.elf.misses, st1.elf.misses, "%lu files parsed again",
		     (unsigned long)(st.elf.misses - st1.elf.misses));
	cr_assert_eq(st.elf.hits, 2 * st1.elf.misses);
	/* freed with the last process that uses them, not before */
	unwinder_forget(u, getpid());
	unwinder_forget(u, a);
	unwinder_stats(u, &st);
	cr_assert_eq(st.elf.freed, 0);
	cr_assert_eq(st.elf.objects, st1.elf.misses);
	unwinder_forget(u, b);
	unwinder_stats(u, &st);
	cr_assert_eq(st.elf.freed, st1.elf.misses);
	cr_assert_eq(st.elf.objects, 0);
	cr_assert_eq(st.elf.bytes, 0);
	reap(a);
	reap(b);
	unwinder__free(u);
}

/*
 * The ELF cache at its byte bound: a process that needs a new object (libz, where its leaf is)
 * makes the least recently used other process lose its unwinding state, whose objects only it
 * held are freed; the object is read and the unwind goes on.
 */
Test(unwind, a_full_elf_cache_evicts_the_least_recently_used_process)
{
	struct unwinder *u = unwinder__new(0);
	pid_t a = paused_child(), b = paused_child();
	struct unwinder_stats st1, st;
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	struct unwind_sym sym;

	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	struct unwind_input in = input_of(0);

	in.pid = in.tid = a;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	unwinder_stats(u, &st1);
	cr_assert_gt(st1.elf.bytes, 0);
	/* room for what a holds, and not a byte more */
	unwinder_set_elf_bytes(u, st1.elf.bytes);
	/* b's leaf in libz, an object a never needed */
	in.pid = in.tid = b;
	in.ip = (uint64_t)(uintptr_t)zlibVersion;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_eq(unwinder_symbolize(u, b, in.ip, &sym), 0);
	cr_assert_str_eq(sym.name, "zlibVersion");
	unwinder_stats(u, &st);
	cr_assert_eq(st.evicted, 1, "a's state went");
	cr_assert_gt(st.elf.freed, 0, "the objects only a held were freed");
	cr_assert_leq(st.elf.bytes, st1.elf.bytes);
	cr_assert_eq(st.elf.full_bytes, 1, "one refusal, before the eviction");
	/* with room again, a process is made as before (this one: find_frame names its frames) */
	unwinder_set_elf_bytes(u, 0);
	in.pid = getpid();
	in.tid = gettid();
	in.ip = cap.ip;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_eq(find_frame(u, pcs, res.n, "unwind_test_level1"), 2);
	reap(a);
	reap(b);
	unwinder__free(u);
}

/* A process forgotten while others are kept: the others' unwinding state does not move under
 * their Dwfl (whose callbacks hold it). */
Test(unwind, forget_keeps_the_others)
{
	struct unwinder *u = unwinder__new(0);
	pid_t a = paused_child(), b = paused_child();
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	pid_t order[3] = {getpid(), a, b};
	size_t i;

	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	struct unwind_input in = input_of(0);

	for (i = 0; i < 3; i++) {
		in.pid = in.tid = order[i];
		cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	}
	unwinder_forget(u, getpid());
	/* b's state took the forgotten one's place; a new process takes b's old one */
	in.pid = in.tid = getpid();
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	in.pid = in.tid = b;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_eq(res.end, UNWIND_END_OUTERMOST, "b's unwind ended %d after %zu frames", res.end,
		     res.n);
	cr_assert_eq(find_frame(u, pcs, res.n, "unwind_test_level1"), 2);
	reap(a);
	reap(b);
	unwinder__free(u);
}

/* A frame's symbol says where its function starts and where its object is mapped (what a pprof
 * Location and Mapping carry for a server to symbolize). */
Test(unwind, function_entry_and_object_range)
{
	struct unwinder *u = unwinder__new(0);
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];
	uint64_t entry = (uint64_t)(uintptr_t)unwind_test_level2;
	struct unwind_sym sym;

	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	struct unwind_input in = input_of(0);

	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_eq(unwinder_symbolize(u, getpid(), pcs[1] - 1, &sym), 0);
	cr_assert_str_eq(sym.name, "unwind_test_level2");
	cr_assert_eq(sym.func_addr, entry, "entry %#lx, want %#lx", (unsigned long)sym.func_addr,
		     (unsigned long)entry);
	cr_assert_neq(pcs[1] - 1, entry, "a call site inside the function, not its entry");
	cr_assert(sym.mod_start <= entry && entry < sym.mod_end);
	/* a PIE's first segment is its headers, at file offset 0 */
	cr_assert_eq(sym.mod_offset, 0);
	unwinder__free(u);
}

/* A child that maps a copy of libz (this binary links it) at dir/libcopy.so, and only it. */
struct copy_child {
	char dir[64], lib[96], old[112];
	pid_t pid;
	uint64_t base;	      /* where the child mapped the copy (its first mapping, offset 0) */
	uint64_t zlibversion; /* zlibVersion in the child's copy */
};

/* A child that maps lib (dlopen) and waits, killed with the test; returns once lib is mapped. */
static pid_t hold_library(const char *lib)
{
	int p[2];
	pid_t pid;
	char c;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* gone with the test, even when a blocked open made it time out */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!dlopen(lib, RTLD_NOW))
			_exit(1);
		c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	cr_assert_eq(read(p[0], &c, 1), 1, "the child did not map %s", lib);
	close(p[0]);
	close(p[1]);
	return pid;
}

static void copy_child_start(struct copy_child *cc)
{
	char buf[65536];
	struct proc_maps m = {0};
	Dl_info info;
	int in, out;
	ssize_t n;
	size_t i;

	cr_assert(dladdr((void *)zlibVersion, &info) && info.dli_fname);
	snprintf(cc->dir, sizeof(cc->dir), "/tmp/rp-unwind-fifo-XXXXXX");
	cr_assert_not_null(mkdtemp(cc->dir));
	snprintf(cc->lib, sizeof(cc->lib), "%s/libcopy.so", cc->dir);
	snprintf(cc->old, sizeof(cc->old), "%s.old", cc->lib);
	in = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
	out = open(cc->lib, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	cr_assert(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	cc->pid = hold_library(cc->lib);
	cr_assert_eq(procs_read_maps(cc->pid, &m), 0);
	for (i = 0; i < m.n && !cc->base; i++) {
		if (m.v[i].path && !strcmp(m.v[i].path, cc->lib) && m.v[i].offset == 0)
			cc->base = m.v[i].start;
	}
	procs_maps_free(&m);
	cr_assert_neq(cc->base, 0, "the child maps the copy");
	cc->zlibversion = cc->base + ((uint64_t)(uintptr_t)zlibVersion - (uintptr_t)info.dli_fbase);
}

static void copy_child_end(struct copy_child *cc, const char *also)
{
	reap(cc->pid);
	unlink(cc->lib);
	unlink(cc->old);
	if (also)
		unlink(also);
	rmdir(cc->dir);
}

/* The child's modules reported: an unwind of our own stack in its name (its mappings are ours). */
static void report_modules(struct unwinder *u, pid_t pid)
{
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];

	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	struct unwind_input in = input_of(0);

	in.pid = in.tid = pid;
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
}

/*
 * A library that a process mapped, whose path the process's owner then replaces by a FIFO: the
 * unwinder's open of that path (to read the object) must neither block (a plain open() of a FIFO
 * waits for a writer forever) nor read the FIFO. Criterion's timeout fails the test if it does.
 */
Test(unwind, fifo_at_a_mapped_library_path_does_not_block, .timeout = 20)
{
	struct unwinder *u = unwinder__new(0);
	struct copy_child cc = {0};
	struct bounds_stats bs;
	struct unwind_sym sym;
	int64_t t0, ms;

	copy_child_start(&cc);
	t0 = clock_mono_ns();
	/* the modules are reported (by the path maps shows now), their files opened when needed */
	report_modules(u, cc.pid);
	/* then the owner renames the library away and puts a FIFO at its path */
	cr_assert_eq(rename(cc.lib, cc.old), 0);
	cr_assert_eq(mkfifo(cc.lib, 0644), 0);
	/* the copy's module is opened now, by the path it was reported with: the FIFO's */
	cr_assert_eq(unwinder_symbolize(u, cc.pid, cc.zlibversion, &sym), 0);
	ms = (clock_mono_ns() - t0) / 1000000;
	cr_assert_str_eq(sym.module, cc.lib);
	cr_assert_null(sym.name, "no object was read for it: %s", sym.name);
	bounds_stats(&bs);
	cr_assert_eq(bs.refused[BOUND_REGULAR], 1, "the FIFO counted once");
	cr_assert_lt(ms, 2000, "took %lld ms", (long long)ms);
	copy_child_end(&cc, NULL);
	unwinder__free(u);
}

/*
 * The library's .gnu_debuglink names a FIFO beside it (Debian's libz has a debuglink; no debug
 * file is installed): the debug-file lookup, which runs when the object has no .symtab, passes
 * over it without blocking (libdwfl's own lookup opened it with a plain open()), and the name
 * comes from .dynsym.
 */
Test(unwind, fifo_as_the_debug_file_does_not_block, .timeout = 20)
{
	struct unwinder *u = unwinder__new(0);
	struct copy_child cc = {0};
	struct bounds_stats bs;
	struct elf_file *ef;
	struct unwind_sym sym;
	char link[256], fifo[400];
	int64_t t0, ms;
	uint32_t crc;

	copy_child_start(&cc);
	ef = elf_file__open(cc.lib);
	cr_assert_not_null(ef);
	if (elf_debuglink(ef, link, sizeof(link), &crc) || elf_has_symtab(ef)) {
		elf_file__free(ef);
		copy_child_end(&cc, NULL);
		cr_skip_test("this libz has no .gnu_debuglink, or a .symtab");
	}
	elf_file__free(ef);
	snprintf(fifo, sizeof(fifo), "%s/%s", cc.dir, link);
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	t0 = clock_mono_ns();
	report_modules(u, cc.pid);
	cr_assert_eq(unwinder_symbolize(u, cc.pid, cc.zlibversion, &sym), 0);
	ms = (clock_mono_ns() - t0) / 1000000;
	cr_assert_str_eq(sym.module, cc.lib);
	cr_assert_str_eq(sym.name, "zlibVersion");
	bounds_stats(&bs);
	cr_assert_geq(bs.refused[BOUND_REGULAR], 1, "the FIFO counted");
	cr_assert_lt(ms, 2000, "took %lld ms", (long long)ms);
	copy_child_end(&cc, fifo);
	unwinder__free(u);
}

/* Runs a shell command line; asserts it succeeded. */
static void run(const char *cmd)
{
	int st = system(cmd);

	cr_assert(st == 0, "'%s': %d", cmd, st);
}

/*
 * A stripped library whose static function is named only in its separate debug file, beside
 * it by .gnu_debuglink: the daemon's own lookup finds the file (CRC checked), and libdwfl names
 * the function from the private copy it is handed. The copy counts against the ELF cache's bytes
 * until the process's Dwfl goes.
 */
Test(unwind, debug_file_beside_a_stripped_library_names_its_functions)
{
	char dir[] = "/tmp/rp-unwind-dbg-XXXXXX", cmd[1024], lib[96], dbg[96];
	struct unwinder *u = unwinder__new(0);
	struct unwinder_stats st0, st;
	struct proc_maps m = {0};
	struct unwind_sym sym;
	struct elf_sym es;
	struct elf_file *ef;
	struct stat dst;
	uint64_t base = 0;
	pid_t child;
	size_t i;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "%s/libdbg.so", dir);
	snprintf(dbg, sizeof(dbg), "%s/libdbg.so.debug", dir);
	snprintf(cmd, sizeof(cmd), "%s/dbg.c", dir);
	f = fopen(cmd, "w");
	cr_assert_not_null(f);
	fputs("static __attribute__((noinline)) int rp_hidden_fn(int x) { return x * 3 + 1; }\n"
	      "int rp_visible_fn(int x) { return rp_hidden_fn(x) + 2; }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && gcc -O1 -g -shared -fPIC -o libdbg.so dbg.c && "
		 "objcopy --only-keep-debug libdbg.so libdbg.so.debug && "
		 "objcopy --strip-all --add-gnu-debuglink=libdbg.so.debug libdbg.so",
		 dir);
	run(cmd);
	ef = elf_file__open(lib);
	cr_assert_not_null(ef);
	cr_assert(!elf_has_symtab(ef), "stripped");
	elf_file__free(ef);
	ef = elf_file__open(dbg);
	cr_assert_not_null(ef);
	cr_assert_eq(elf_find_symbol_in(ef, ELF_SYM_SYMTAB, "rp_hidden_fn", &es), 0);
	elf_file__free(ef);
	cr_assert_eq(stat(dbg, &dst), 0);

	child = hold_library(lib);
	cr_assert_eq(procs_read_maps(child, &m), 0);
	for (i = 0; i < m.n && !base; i++) {
		if (m.v[i].path && !strcmp(m.v[i].path, lib) && m.v[i].offset == 0)
			base = m.v[i].start;
	}
	procs_maps_free(&m);
	cr_assert_neq(base, 0);
	report_modules(u, child);
	unwinder_stats(u, &st0);
	cr_assert_eq(unwinder_symbolize(u, child, base + es.value, &sym), 0);
	/* found by .gnu_debuglink: its CRC32 is read off the main loop (checksum.h), and the
	 * process's Dwfl is made again once it is known */
	if (!sym.name) {
		cr_assert(checksum_wait(10000));
		cr_assert_eq(unwinder_symbolize(u, child, base + es.value, &sym), 0);
	}
	cr_assert_str_eq(sym.module, lib);
	cr_assert_str_eq(sym.name, "rp_hidden_fn");
	unwinder_stats(u, &st);
	cr_assert_geq(st.elf.bytes - st0.elf.bytes, (uint64_t)dst.st_size,
		      "the copy of %lld bytes is counted", (long long)dst.st_size);
	unwinder_forget(u, child);
	unwinder_stats(u, &st);
	cr_assert_lt(st.elf.bytes, st0.elf.bytes, "released with the process");
	reap(child);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	run(cmd);
	unwinder__free(u);
}

/*
 * One process's unwinding has a budget of the main loop's time per second: past it, its stacks
 * are refused (-EBUSY, counted) until the second is over, then unwound again.
 */
Test(unwind, a_process_past_its_time_budget_waits_for_the_next_second)
{
	struct unwinder *u = unwinder__new(0);
	struct unwinder_stats st;
	struct unwind_result res;
	uint64_t pcs[UNWIND_MAX_FRAMES];

	cr_assert_not_null(u);
	cr_assert_eq(unwind_test_level1(COPY_MAX), 3);
	struct unwind_input in = input_of(0);

	unwinder_set_budget(u, 1); /* 1 ns: the first unwind uses it all */
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_geq(res.n, 4);
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), -EBUSY);
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), -EBUSY);
	unwinder_stats(u, &st);
	cr_expect_eq(st.over_budget, 2);
	cr_expect_eq(st.unwinds, 1);
	usleep(1100000); /* the next second */
	cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	cr_assert_geq(res.n, 4);
	unwinder_stats(u, &st);
	cr_expect_eq(st.unwinds, 2);
	/* at the real budget, a normal process is never refused */
	unwinder_set_budget(u, UNWIND_BUDGET_NS);
	usleep(1100000);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(unwinder_unwind(u, &in, pcs, UNWIND_MAX_FRAMES, &res), 0);
	unwinder__free(u);
}
