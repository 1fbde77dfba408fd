/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * unwinder.h - native stacks from a copy of the user stack and three registers, unwound with CFI
 * (.eh_frame / .debug_frame) by elfutils' libdwfl, frame pointers where a function has no CFI.
 *
 * Nothing is stopped and nothing is fetched from the network: ELF files are opened through
 * /proc/PID/root, the thread is never ptrace-attached (our own thread callbacks serve the
 * registers and the copied stack; memory outside the copy is read with procmem), and
 * DEBUGINFOD_URLS is removed from the environment when the first unwinder is made.
 *
 * One Dwfl per process, kept in a bounded cache (least recently used goes first, counted) and
 * dropped when the process exits (unwinder_forget) or its mappings changed under it. The ELF
 * objects its modules use are shared by every process (elfcache.h): a forked worker's libruby
 * is parsed once, by whichever process needed it first, and freed when the last process using
 * it goes.
 */
#ifndef RP_UNWINDER_H
#define RP_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "native/demangle.h"
#include "native/elfcache.h"

/* Processes whose Dwfl is kept at once, by default. */
#define UNWIND_MAX_PROCS_DEFAULT 64
/* Frames one unwind returns at most (the caller's array may be smaller). */
#define UNWIND_MAX_FRAMES	 256

struct unwinder;

/* The sampled thread at the sample: its registers and the copy of its stack from sp upward. */
struct unwind_input {
	pid_t pid, tid;
	uint64_t ip, sp, bp;
	const void *stack; /* bytes at [sp, sp + stack_len) */
	size_t stack_len;
	/*
	 * A function of interest (rb_vm_exec), by its start address; 0: none. Without `marks`, the
	 * walk stops before the first frame inside it; with `marks` (an array of the caller's
	 * `max` entries), it goes on and marks[i] says whether frame i is inside it.
	 */
	uint64_t func;
	uint8_t *marks;
};

enum unwind_end {
	UNWIND_END_OUTERMOST = 0, /* unwound to the thread's first frame */
	UNWIND_END_STOP_FUNC = 1, /* reached `func` (not included; without marks) */
	UNWIND_END_MAX = 2,	  /* the caller's array was full */
	UNWIND_END_STOPPED = 3,	  /* no CFI, an unreadable stack word or a bad return address */
};

struct unwind_result {
	size_t n;	     /* frames in pcs, leaf first */
	enum unwind_end end; /* why it ended */
	bool past_copy;	     /* a word above the copied stack was read from the live process */
};

struct unwind_sym {
	const char *name; /* symbol (C++ demangled), or NULL when no symbol covers the address */
	/* from the symbol's start; without a symbol, of the address (or, func_from_cfi, of the
	 * start of its function as its CFI entry says) from the module's start */
	uint64_t offset;
	bool func_from_cfi;
	const char *module; /* the object's path as mapped, or NULL (no module covers it) */
	char build_id[41];  /* hex GNU build id of the object, "" when unknown (first 20 bytes) */
	/* the process address of the function's entry (of the address itself without symbol or
	 * CFI), and the object's range [mod_start, mod_end) with the file offset at mod_start */
	uint64_t func_addr;
	uint64_t mod_start, mod_end, mod_offset;
	char demangled[DEMANGLE_MAX]; /* where name points when it was demangled */
};

struct unwinder_stats {
	uint64_t unwinds;     /* stacks unwound */
	uint64_t stopped;     /* unwinds that ended at UNWIND_END_STOPPED (truncated) */
	uint64_t past_copy;   /* unwinds that read above the copied stack */
	uint64_t no_dwfl;     /* unwinds refused: the process's modules could not be reported */
	uint64_t evicted;     /* Dwfl dropped: at the bound of processes, or for room in the ELF
			       * cache (its byte or object bound) */
	uint64_t refreshed;   /* Dwfl rebuilt: the leaf address was in no module (a new mapping;
			     * at most once a second per process) */
	uint64_t over_budget; /* unwinds refused: the process used UNWIND_BUDGET_NS this second */
	struct elfcache_stats elf; /* the objects shared by the processes (elfcache.h) */
};

/* The main loop's CPU time (its thread's, not the clock's) that one process's unwinding and
 * symbolization may take per second; past it, unwinder_unwind refuses its stacks (-EBUSY) until
 * the second is over. */
#define UNWIND_BUDGET_NS 100000000LL

/* max_procs: processes kept at once (0: UNWIND_MAX_PROCS_DEFAULT); their ELF objects are shared
 * (ELFCACHE_MAX_DEFAULT at once). NULL with errno set. */
struct unwinder *unwinder__new(size_t max_procs);
void unwinder__free(struct unwinder *u);
/* Another budget than UNWIND_BUDGET_NS (tests). */
void unwinder_set_budget(struct unwinder *u, int64_t ns);
/* The shared ELF cache's byte bound (0: ELFCACHE_BYTES_DEFAULT), for tests. */
void unwinder_set_elf_bytes(struct unwinder *u, uint64_t bytes);
/* The process exited (or exec'd): its Dwfl goes now. */
void unwinder_forget(struct unwinder *u, pid_t pid);

/*
 * Unwinds in->stack into pcs (at most max, leaf first): pcs[0] is ip, each next one a return
 * address (call site + 1; symbolize pcs[i] - 1 for i > 0). 0 (then see res->end), or -errno:
 * -ESRCH (the process is gone), -ENOENT (its modules could not be reported), -ENOMEM, -EBUSY
 * (the process's unwinding used its budget of this second).
 */
int unwinder_unwind(struct unwinder *u, const struct unwind_input *in, uint64_t *pcs, size_t max,
		    struct unwind_result *res);

/* Symbol of an address of pid (a frame's pc, minus 1 for a return address). The strings live
 * until the process's Dwfl goes (unwinder_forget, eviction), or as long as *out for a demangled
 * name. 0, -ENOENT (no Dwfl for pid). */
int unwinder_symbolize(struct unwinder *u, pid_t pid, uint64_t addr, struct unwind_sym *out);

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *out);

#endif
