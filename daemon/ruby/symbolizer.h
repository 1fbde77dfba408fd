/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * symbolizer.h - turns raw frames (iseq + pc, method entry) of one process into labels, paths and
 * line numbers computed exactly as Ruby computes them, with a per-process cache.
 *
 * Strings returned stay valid until symbolizer__free or the next cache reset (see
 * symbolizer_generation); callers copy what they keep.
 */
#ifndef RP_SYMBOLIZER_H
#define RP_SYMBOLIZER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ruby/offsets.h"

struct symbolizer;

/* rb_iseq_type */
enum iseq_type {
	ISEQ_TYPE_TOP = 0,
	ISEQ_TYPE_METHOD,
	ISEQ_TYPE_BLOCK,
	ISEQ_TYPE_CLASS,
	ISEQ_TYPE_RESCUE,
	ISEQ_TYPE_ENSURE,
	ISEQ_TYPE_EVAL,
	ISEQ_TYPE_MAIN,
	ISEQ_TYPE_PLAIN,
};

struct sym_iseq {
	/* As this Ruby's backtraces print it: "foo", "block in foo", "<main>" before 3.4;
	 * "Foo::Bar#foo", "block in Foo.bar" from 3.4 on. */
	const char *label;
	const char *path; /* Location#path */
	int64_t first_lineno;
	int64_t line; /* 0 when the pc cannot be trusted (JIT frames) or is out of range */
	enum iseq_type type;
	int label_final; /* 0: owner or line not confirmed yet: do not cache this frame */
	/* 1: the method's iseq runs under several owners (define_method copies, module_function,
	 * aliases across classes): the label is right for this frame's method entry only. */
	int owner_varies;
	/* 1: <internal:...> code on a Ruby that shows it as a C method (4.0+): the label is its
	 * method's, the caller gives path and line, and symbolizer_collapse_internal() applies. */
	int internal;
};

struct symbolizer_stats {
	uint64_t iseq_failed;	/* iseqs that could not be read */
	uint64_t cfunc_failed;	/* method entries that could not be named */
	uint64_t cache_resets;	/* caches dropped for exceeding their bound */
	uint64_t owner_unknown; /* 3.4+ labels printed without their owner (frame gone) */
	uint64_t line_failed;	/* line tables that could not be read (line 0 given) */
	uint64_t iseq_reused;	/* cached iseqs found replaced by another object (GC) */
};

/*
 * symbols: address of ruby_global_symbols, 0 when unknown. cand: addresses that may be the
 * table but did not validate yet (a booting Ruby); they are validated again, at most every
 * 100 ms, while C functions need names. Without either, C functions stay unnamed.
 */
struct symbolizer *symbolizer__new(pid_t pid, const struct ruby_offsets *off, uint64_t symbols,
				   const uint64_t *cand, unsigned int ncand);
void symbolizer__free(struct symbolizer *sym);
/*
 * vm_ptr: the address of ruby_current_vm_ptr (the variable holding the rb_vm_t *), 0 when
 * unknown. Ruby 3.2 keeps class names in shape-indexed ivars, found through vm->shape_list:
 * without it, 3.2's labels carry no owner.
 */
void symbolizer_set_vm(struct symbolizer *sym, uint64_t vm_ptr);
/*
 * Bounds of the caches (iseqs, (iseq, pc) lines, method entries); 0 keeps the default. The
 * caches are dropped (counted in cache_resets) when a call starts with one at its bound.
 */
void symbolizer_set_limits(struct symbolizer *sym, size_t max_iseqs, size_t max_lines,
			   size_t max_cfuncs);

/*
 * A Ruby frame: iseq and pc from the control frame, ep its environment (used on 3.4+ to find the
 * method's owner, once per method). 0, or -errno when the iseq cannot be read (the process is
 * gone, or it is not an iseq).
 */
int symbolizer_iseq(struct symbolizer *sym, uint64_t iseq, uint64_t pc, int jit, uint64_t ep,
		    struct sym_iseq *out);
/*
 * A method's own frame (RP_FRAME_FLAG_ME): me_cref is its ep[-2] as read at the sample (the method
 * entry, or the svar holding it), which names the owner of this call: one iseq can run under
 * several owners. Otherwise as symbolizer_iseq().
 */
int symbolizer_method_frame(struct symbolizer *sym, uint64_t iseq, uint64_t pc, int jit,
			    uint64_t me_cref, struct sym_iseq *out);
/*
 * A method frame's ep[-2] as read at the sample (RP_FRAME_FLAG_ME): the method entry, or the svar
 * holding it. Learns the owner of method_iseq from it (checked: the entry's definition must be
 * that iseq), so that the method and its blocks are named with their owner even when the frame is
 * gone by now. Call it before symbolizer_iseq() for the frames of a stack.
 */
void symbolizer_method_entry(struct symbolizer *sym, uint64_t method_iseq, uint64_t me_cref);
/* Label of a C function frame's method entry: "times" before 3.4, "Integer#times" after.
 * 0 or -errno. */
int symbolizer_cfunc(struct symbolizer *sym, uint64_t me, const char **name);

/* Frame kinds of one stack for symbolizer_collapse_internal(). */
enum sym_frame_kind {
	SYM_FRAME_NONE = 0, /* not shown (a hidden frame): ignored */
	SYM_FRAME_RUBY,
	SYM_FRAME_C,
	SYM_FRAME_INTERNAL, /* sym_iseq.internal */
};
/*
 * Ruby 4.0's rule for <internal:...> frames (vm_backtrace.c rb_ec_partial_backtrace_object), on
 * one stack's n frames, leaf first: an internal frame behaves as a C method, and when one is met
 * while C or internal frames wait for their caller's location (those since the last Ruby frame),
 * those are dropped: one frame stands for the internal code and what it called. The dropped
 * frames' kinds become SYM_FRAME_NONE. Returns how many are dropped.
 */
size_t symbolizer_collapse_internal(uint8_t *kinds, size_t n);

/*
 * Bumped each time the caches are dropped, and when a method iseq is found under a second owner
 * (labels cached for it may name the other); callers caching our results compare it.
 */
uint64_t symbolizer_generation(const struct symbolizer *sym);
void symbolizer_stats(const struct symbolizer *sym, struct symbolizer_stats *out);
/*
 * Starts an epoch: each cached iseq is checked once more, on its next use, against the object now
 * at its address (GC frees iseqs; the address can then hold another), and reloaded if replaced.
 * The stacks module (profile/stacks.c) calls this once per interval, when its own frame cache starts over.
 */
void symbolizer_new_epoch(struct symbolizer *sym);

/*
 * Ruby's succinct index lookup (iseq.c succ_index_lookup), on a table already copied out of the
 * process: imm is the 6-word immediate part; block, when pos >= 54, the 80-byte dictionary block
 * of pos. Returns the rank (the number of set bits up to pos, inclusive).
 */
#define SUCC_IMM_SIZE	54
#define SUCC_IMM_WORDS	6
#define SUCC_BLOCK_BITS 512
#define SUCC_BLOCK_SIZE 80
unsigned int symbolizer_succ_index_lookup(const uint64_t imm[SUCC_IMM_WORDS], const uint8_t *block,
					  unsigned int pos);

#endif
