/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * offsets.h - Ruby VM structure offsets (x86_64), as data keyed by version range.
 *
 * A row is only a candidate: the daemon validates it on the live process before use. `verified`
 * marks the rows tested against a live Ruby on this project's CI.
 */
#ifndef RP_OFFSETS_H
#define RP_OFFSETS_H

#include <stdbool.h>
#include <stdint.h>

#include "rubyprof.h"

/* How the length of an embedded RString is stored. */
enum rstring_layout {
	RSTRING_LEN_IN_FLAGS = 1, /* <= 3.1: (flags >> 14) & 0x1f, bytes at +16 */
	RSTRING_LEN_FIELD = 2,	  /* >= 3.2: len at +16 (embedded or not), embedded bytes at +24 */
};

enum class_names {
	CLASS_NAMES_NONE = 0,
	CLASS_NAMES_IVTBL,  /* __classpath__ / __attached__ in an st_table */
	CLASS_NAMES_FIELD,  /* classpath, permanent_classpath, attached_object fields */
	CLASS_NAMES_SHAPES, /* __classpath__ / __attached__ in iv_ptr, indexed by the shape tree */
};

/* How a thread's pthread id is reached from rb_thread_t. */
enum thread_id_path {
	THREAD_ID_DIRECT = 1, /* th->thread_id (<= 3.1) */
	THREAD_ID_VIA_NT = 2, /* th->nt->thread_id (>= 3.2) */
};

struct ruby_offsets {
	const char *first; /* first version of the range, "3.1.0" */
	const char *last;  /* last known version of the range, "3.1.7" */
	bool verified;	   /* tested on a live Ruby by this project's CI */
	bool ec_is_global; /* < 3.0: ruby_current_execution_context_ptr */

	struct rp_vm_offsets vm; /* what the BPF walk reads */

	enum thread_id_path thread_id_path;
	uint16_t th_nt; /* rb_thread_t -> nt (3.2+) */
	/* rb_thread_t -> self (the Thread object, a T_DATA whose data is the rb_thread_t) */
	uint16_t th_self;
	/* rb_thread_t -> name (Thread#name: a String or nil); 0: not known for this version */
	uint16_t th_name;

	/* iseq and its constant body */
	uint16_t iseq_body;
	uint16_t body_type;
	uint16_t body_iseq_size;
	uint16_t body_iseq_encoded;
	uint16_t body_location;
	uint16_t loc_pathobj;
	uint16_t loc_base_label;
	uint16_t loc_label;
	uint16_t loc_first_lineno;
	bool first_lineno_is_fixnum; /* a tagged VALUE before 3.2, an int after */
	uint16_t body_insns_info;    /* insns_info.body */
	uint16_t body_insns_size;    /* insns_info.size */
	uint16_t body_insns_succ;    /* insns_info.succ_index_table */
	uint16_t insn_info_entry_size;
	uint16_t body_local_iseq;
	uint16_t body_parent_iseq;

	/* method entries */
	uint16_t me_def;
	uint16_t me_owner;
	uint16_t def_original_id;

	/* Ruby 3.4+ prints labels with their owner (Foo::Bar#baz, Foo.bar, Integer#times) and hides
	 * the method frame that owns a rescue/ensure clause. */
	bool qualified_labels;
	/* Ruby 4.0+ shows a frame of <internal:...> code as a C method (its method's name at its
	 * caller's location), one per run of such frames (vm_backtrace.c, "Exclude internal frames
	 * from backtrace", 2025-06). */
	bool internal_as_c;
	/* Where class names are: hidden ivars in the classext's iv_tbl (2.6 - 3.1), shape-indexed
	 * ivars (3.2), a classpath field (3.3+). */
	enum class_names class_names;
	uint16_t class_ext;  /* IVTBL: RClass -> rb_classext_t * */
	uint16_t ext_iv_tbl; /* IVTBL: rb_classext_t -> st_table *iv_tbl */
	/* SHAPES: the classext is embedded (RVARGC): RClass -> VALUE *iv_ptr; rb_vm_t ->
	 * rb_shape_t *shape_list (root_shape follows it; the shape id is flags >> 32) */
	uint16_t class_iv_ptr;
	uint16_t vm_shape_list;
	/* FIELD: */
	uint16_t class_classpath; /* String VALUE, 0: none */
	uint16_t class_permanent; /* byte, bit 0: the classpath is permanent */
	uint16_t class_attached;  /* singleton class -> attached object */
	uint64_t fl_singleton;	  /* FL_SINGLETON flag bit of a T_CLASS */

	/* rb_ractor_t threads.running_ec, from vm->ractor.main_ractor (vm + 32); 0 before 3.0 */
	uint16_t ractor_running_ec;

	enum rstring_layout rstring;
	uint32_t last_op_id;  /* tLAST_OP_ID: IDs above it carry a 4-bit scope */
	uint16_t symbols_ids; /* offset of `ids` in ruby_global_symbols */
};

/* Parses "3.1.2" into major/minor/teeny. 0 or -EINVAL. */
int offsets_parse_version(const char *s, int *major, int *minor, int *teeny);

/*
 * The row for a Ruby version. Exact ranges first; an unknown patch release of a known minor
 * version gets that minor's row with *exact = false. NULL when the minor version is unknown.
 */
const struct ruby_offsets *offsets_find(const char *version, bool *exact);

/* Every row, for the support table and tests. */
const struct ruby_offsets *offsets_all(unsigned int *n);

#endif
