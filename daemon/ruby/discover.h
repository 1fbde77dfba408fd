/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * discover.h - decides whether a process runs Ruby and, if so, finds and validates on the live
 * process everything the sampler needs: version and offsets, how to reach each thread's execution
 * context, the global symbol table and rb_vm_exec. Nothing is stopped: files are read through
 * /proc/PID/root, memory with process_vm_readv, thread pointers with a BPF task iterator.
 */
#ifndef RP_DISCOVER_H
#define RP_DISCOVER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/container.h"
#include "proc/procctx.h"
#include "proc/procs.h"
#include "ruby/offsets.h"
#include "rubyprof.h"

enum discover_status {
	DISCOVER_READY = 0, /* validated: sample it */
	DISCOVER_NOT_RUBY,  /* no Ruby in this process */
	DISCOVER_RETRY,	    /* Ruby, but not initialized yet: ask again later */
	DISCOVER_REFUSED,   /* Ruby that cannot be profiled; `why` says why */
	DISCOVER_GONE,	    /* the process exited */
	DISCOVER_NO_ACCESS, /* its maps cannot be read (another user namespace, no privilege) */
	DISCOVER_LOADING,   /* no Ruby yet, but its loader has mapped no library yet: ask again */
};

#define DISCOVER_MAX_CANDIDATES 8

struct ruby_target {
	pid_t pid;
	pid_t nspid;			     /* pid inside its own pid namespace */
	char container_id[CONTAINER_ID_MAX]; /* "" outside containers */
	char version[32];
	const struct ruby_offsets *off;
	bool exact;	       /* the version is inside a known row's range */
	char object[PATH_MAX]; /* libruby or the ruby executable, as the process sees it */
	uint64_t bias;	       /* load bias of `object` */
	struct rp_proc bpf;    /* what the BPF program gets */
	uint64_t symbols;      /* ruby_global_symbols, 0 when not found (yet) */
	/* Candidates for ruby_global_symbols that did not validate yet (a Ruby still booting has
	 * an empty table): the symbolizer tries them again later. */
	uint64_t symbols_cand[DISCOVER_MAX_CANDIDATES];
	unsigned int nsymbols_cand;
	uint64_t vm_exec; /* rb_vm_exec, 0 when not found */
	uint64_t vm_ptr;  /* &ruby_current_vm_ptr, 0 when not found (3.2's class names need it) */
	/* Which path found what, for the log; room for a debug file's path. */
	char how_ec[512];
	char how_symbols[512];
	char how_vm_exec[512];
	char how_gc[128];
	/* `object` was read through /proc/PID/map_files: its path leads nowhere from the
	 * process's root (a deleted root, a removed file), or names another file than the one
	 * mapped (`object_replaced`: an upgrade renamed a new build over it). */
	bool object_from_map_files;
	bool object_replaced;
	/* OTEL_CTX mappings in its maps at discovery (procctx.h), read by the caller */
	uint64_t otel_ctx[PROCCTX_MAPPINGS_MAX];
	unsigned int notel_ctx;
};

/* Thread pointers of every thread of pid (the sampler's task iterator). */
typedef int (*discover_threads_fn)(void *ctx, pid_t pid, struct rp_thread_tp *out, size_t max,
				   size_t *n);

/* Whether the maps show a Ruby: a libruby mapping, or an executable named like ruby. Sets *index
 * to the first mapping of the Ruby object. */
bool discover_find_object(pid_t pid, const struct proc_maps *maps, size_t *index);

/* Whether the process is still before its dynamic loader's work: its only files are its program
 * and the loader (it exec'd a moment ago and has not run since on a busy host, or a debugger
 * stopped it at the exec). Until then, that no Ruby is mapped says nothing. A static program
 * maps no loader: never. */
bool discover_loader_pending(const struct proc_maps *maps);

enum discover_status discover_ruby(pid_t pid, discover_threads_fn threads, void *threads_ctx,
				   struct ruby_target *out, char *why, size_t whylen);

/*
 * Where pid's threads keep the OpenTelemetry thread context (OTEP 4947): the first loaded object
 * that exports otel_thread_ctx_v1 (a TLS symbol in .dynsym), and how its TLS is reached (the
 * loader's TLSDESC, initial-exec or module-id slot, read from the process): out's tctx_* fields
 * (the rest untouched). how says what was found, or why not. 0; -ENOENT (no object exports it);
 * -EAGAIN (not relocated yet: try again later); -EINVAL (not understood, or not readable).
 */
int discover_thread_ctx(pid_t pid, discover_threads_fn threads, void *threads_ctx,
			struct rp_proc *out, char *how, size_t howlen);

/*
 * x86-64 code recognition, exposed for tests. Targets of RIP-relative `lea`/`mov` (REX.W) in
 * code (at vaddr), in order; returns how many were found (<= max).
 */
size_t discover_rip_targets(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *out,
			    size_t max);
/* vaddr of the tls_index of the first general-dynamic TLS access (data16 lea X(%rip),%rdi). */
int discover_gd_tls_index(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t *tls_index);

#define DISCOVER_TLS_LOCAL_EXEC	  1
#define DISCOVER_TLS_INITIAL_EXEC 2
/*
 * The first load relative to the thread pointer in code (at vaddr), as an executable's code reads
 * its own TLS (a static Ruby): local-exec "mov %fs:DISP,%reg" (or "mov %fs:0,%reg" and a
 * negative displacement on that register) sets *tp_off and returns DISCOVER_TLS_LOCAL_EXEC;
 * initial-exec "mov X(%rip),%reg ... mov %fs:(%reg),%reg" sets *got_slot, the vaddr of the GOT
 * slot the loader fills with the thread-pointer offset, and returns DISCOVER_TLS_INITIAL_EXEC.
 * -ENOENT when there is none.
 */
int discover_static_tls(const uint8_t *code, size_t len, uint64_t vaddr, int64_t *tp_off,
			uint64_t *got_slot);

#endif
