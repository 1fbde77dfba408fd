// SPDX-License-Identifier: GPL-2.0-only
/* symbolizer.c - iseq and method-entry symbolization with per-process caches. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/clock.h"
#include "lib/hmap.h"
#include "lib/text.h"
#include "proc/procmem.h"
#include "ruby/rvalue.h"
#include "ruby/symbolizer.h"

/* Default bounds of the per-process caches; past them the caches are dropped and refilled. */
#define MAX_ISEQS  65536
#define MAX_LINES  (1u << 18)
#define MAX_CFUNCS 16384

struct iseq_info {
	uint64_t iseq;
	char *label;  /* location.label */
	char *qlabel; /* the label as printed, once known (3.4+: with the owner) */
	char *path;
	enum iseq_type type;
	uint64_t parent, local;
	int64_t first_lineno;
	uint64_t iseq_encoded;
	uint32_t iseq_size;
	uint64_t insns_body;
	uint64_t insns_positions;
	uint32_t insns_size;
	uint64_t succ_table;
	uint64_t imm[SUCC_IMM_WORDS];
	int imm_loaded;
	/* What identifies this iseq's object, compared again once per epoch (GC frees, malloc reuses) */
	uint64_t body, label_val, pathobj_val;
	uint64_t epoch;
};

struct symbolizer {
	pid_t pid;
	const struct ruby_offsets *off;
	uint64_t symbols;
	uint64_t cand[8];
	unsigned int ncand;
	int64_t next_try_ns;
	char *scratch_label;	/* an uncached label, valid until the next call */
	uint64_t hidden_ids[2]; /* IDs of __classpath__ and __attached__ (before 3.3) */
	int hidden_ids_tried[2];
	uint64_t vm_ptr;     /* &ruby_current_vm_ptr (3.2: the shape tree hangs off the VM) */
	uint64_t shape_list; /* 3.2: vm->shape_list once read and checked, 0 before */
	struct hmap iseqs;   /* iseq -> struct iseq_info * */
	struct hmap lines;   /* (iseq, pc) -> line + 1 */
	struct hmap cfuncs;  /* me -> char * */
	/*
	 * (method iseq, method entry) -> char * "Foo::Bar#": one iseq runs under several owners
	 * (define_method(:x, instance_method(:y)), module_function, a module's method copied into
	 * classes). (method iseq, 0) -> the first owner's prefix, for frames whose entry is unknown.
	 */
	struct hmap owners;
	struct hmap
		multi; /* method iseq -> 1: seen under two owners (labels depend on the entry) */
	struct hmap classes; /* class -> char * "Foo::Bar#" or "Foo." or "" */
	size_t max_iseqs, max_lines, max_cfuncs;
	uint64_t generation;
	uint64_t epoch; /* symbolizer_new_epoch(): cached iseqs are checked again once in each */
	struct symbolizer_stats stats;
};

struct symbolizer *symbolizer__new(pid_t pid, const struct ruby_offsets *off, uint64_t symbols,
				   const uint64_t *cand, unsigned int ncand)
{
	struct symbolizer *sym = calloc(1, sizeof(*sym));

	if (!sym)
		return NULL;
	sym->pid = pid;
	sym->off = off;
	sym->symbols = symbols;
	if (ncand > sizeof(sym->cand) / sizeof(sym->cand[0]))
		ncand = sizeof(sym->cand) / sizeof(sym->cand[0]);
	if (ncand) /* cand may be NULL when there is none (memcpy's pointers may not be) */
		memcpy(sym->cand, cand, ncand * sizeof(*cand));
	sym->ncand = ncand;
	symbolizer_set_limits(sym, 0, 0, 0);
	return sym;
}

void symbolizer_set_limits(struct symbolizer *sym, size_t max_iseqs, size_t max_lines,
			   size_t max_cfuncs)
{
	sym->max_iseqs = max_iseqs ? max_iseqs : MAX_ISEQS;
	sym->max_lines = max_lines ? max_lines : MAX_LINES;
	sym->max_cfuncs = max_cfuncs ? max_cfuncs : MAX_CFUNCS;
}

/* Validates the symbol table candidates again, at most every 100 ms. */
static void retry_symbols(struct symbolizer *sym)
{
	int64_t now = clock_mono_ns();
	unsigned int i;

	if (now < sym->next_try_ns)
		return;
	sym->next_try_ns = now + 100000000LL;
	for (i = 0; i < sym->ncand; i++) {
		if (rvalue_check_symbols(sym->pid, sym->off, sym->cand[i]) == 0) {
			sym->symbols = sym->cand[i];
			return;
		}
	}
}

static void free_iseq(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct iseq_info *info = (struct iseq_info *)(uintptr_t)val;

	free(info->label);
	free(info->qlabel);
	free(info->path);
	free(info);
}

static void drop_caches(struct symbolizer *sym)
{
	hmap_foreach(&sym->iseqs, free_iseq, NULL);
	hmap_clear(&sym->iseqs);
	hmap_clear(&sym->lines);
	hmap_clear_free(&sym->cfuncs);
	hmap_clear_free(&sym->owners);
	hmap_clear(&sym->multi);
	hmap_clear_free(&sym->classes);
	sym->generation++;
}

/*
 * Drops the caches when one is past its bound. Called only at the entry points, before any
 * lookup: inside one, callers up the stack still hold struct iseq_info pointers from the cache
 * (a block's info while its method's is loaded), which a reset there would free under them. One
 * call may add a few entries past a bound (a block's parents); the next call drops them.
 * owners grow with the method iseqs and entries, classes with the method entries.
 */
static void evict_if_full(struct symbolizer *sym)
{
	if (sym->iseqs.len < sym->max_iseqs && sym->lines.len < sym->max_lines &&
	    sym->owners.len < sym->max_iseqs + sym->max_cfuncs &&
	    sym->cfuncs.len < sym->max_cfuncs && sym->classes.len < sym->max_cfuncs)
		return;
	drop_caches(sym);
	sym->stats.cache_resets++;
}

void symbolizer__free(struct symbolizer *sym)
{
	if (!sym)
		return;
	drop_caches(sym);
	free(sym->scratch_label);
	free(sym);
}

void symbolizer_new_epoch(struct symbolizer *sym)
{
	sym->epoch++;
}

void symbolizer_set_vm(struct symbolizer *sym, uint64_t vm_ptr)
{
	sym->vm_ptr = vm_ptr;
	sym->shape_list = 0;
}

uint64_t symbolizer_generation(const struct symbolizer *sym)
{
	return sym->generation;
}

void symbolizer_stats(const struct symbolizer *sym, struct symbolizer_stats *out)
{
	*out = sym->stats;
}

unsigned int symbolizer_succ_index_lookup(const uint64_t imm[SUCC_IMM_WORDS], const uint8_t *block,
					  unsigned int pos)
{
	uint32_t rank;
	uint64_t small_ranks, bits;
	unsigned int bit, small, small_rank;

	if (pos < SUCC_IMM_SIZE)
		return (imm[pos / 9] >> (7 * (pos % 9))) & 0x7f;
	/* struct succ_dict_block { unsigned rank; uint64_t small_block_ranks; uint64_t bits[8]; } */
	bit = (pos - SUCC_IMM_SIZE) % SUCC_BLOCK_BITS;
	small = bit / 64;
	memcpy(&rank, block, sizeof(rank));
	memcpy(&small_ranks, block + 8, sizeof(small_ranks));
	memcpy(&bits, block + 16 + (size_t)small * 8, sizeof(bits));
	small_rank = small == 0 ? 0 : (small_ranks >> ((small - 1) * 9)) & 0x1ff;
	return rank + small_rank + __builtin_popcountll(bits << (63 - bit % 64));
}

/*
 * A name read from the target: whatever its memory holds (a string overwritten, another
 * encoding) becomes valid UTF-8, each byte of an invalid sequence a '?'. The profile's strings
 * must be UTF-8 (proto3 `string`: strict decoders reject the whole profile otherwise).
 */
static char *read_string(struct symbolizer *sym, uint64_t str)
{
	char buf[RVALUE_STR_MAX + 4];

	memset(buf, 0, sizeof(buf));
	if (rvalue_string(sym->pid, sym->off, str, buf, RVALUE_STR_MAX + 1))
		return NULL;
	/* control characters too: a name is one line of the summary */
	text_clean(buf);
	return strdup(buf);
}

static struct iseq_info *load_iseq(struct symbolizer *sym, uint64_t iseq)
{
	const struct ruby_offsets *off = sym->off;
	struct iseq_info *info = NULL;
	uint64_t flags, body, hdr[2], loc[4], insns[4], path;
	int32_t lineno32;

	if (rvalue_flags(sym->pid, iseq, &flags) || (flags & RUBY_T_MASK) != RUBY_T_IMEMO ||
	    rvalue_imemo_type(flags) != RUBY_IMEMO_ISEQ)
		return NULL;
	if (procmem_u64(sym->pid, iseq + off->iseq_body, &body) ||
	    procmem_read(sym->pid, body + off->body_type, hdr, sizeof(hdr)) ||
	    procmem_read(sym->pid, body + off->body_location, loc, sizeof(loc)) ||
	    procmem_read(sym->pid, body + off->body_insns_info, insns, sizeof(insns)))
		return NULL;

	info = calloc(1, sizeof(*info));
	if (!info)
		return NULL;
	info->iseq = iseq;
	info->type = (enum iseq_type)(uint32_t)hdr[0];
	info->iseq_size = (uint32_t)(hdr[0] >> 32);
	if (procmem_u64(sym->pid, body + off->body_parent_iseq, &info->parent) ||
	    procmem_u64(sym->pid, body + off->body_local_iseq, &info->local)) {
		free(info);
		return NULL;
	}
	info->iseq_encoded = hdr[1];
	info->body = body;
	info->label_val = loc[(off->loc_label - off->loc_pathobj) / 8];
	info->pathobj_val = loc[0];
	info->epoch = sym->epoch;
	info->label = read_string(sym, info->label_val);
	/* pathobj: the path String, or [path, realpath] */
	path = loc[0];
	if (rvalue_flags(sym->pid, path, &flags) == 0 && (flags & RUBY_T_MASK) == RUBY_T_ARRAY &&
	    rvalue_array_entry(sym->pid, loc[0], 0, &path))
		path = 0;
	info->path = read_string(sym, path);
	if (off->first_lineno_is_fixnum) {
		info->first_lineno = (int64_t)loc[3] >> 1;
	} else {
		memcpy(&lineno32, &loc[3], sizeof(lineno32));
		info->first_lineno = lineno32;
	}
	info->insns_body = insns[0];
	info->insns_positions = insns[1];
	info->insns_size = (uint32_t)insns[2];
	info->succ_table = insns[3];
	if (!info->label || !info->path) {
		free_iseq(NULL, 0, 0, (uintptr_t)info);
		return NULL;
	}
	return info;
}

/* Index of the insn_info entry for instruction position pos, as get_insn_info() finds it. */
static int insn_info_index(struct symbolizer *sym, struct iseq_info *info, unsigned int pos,
			   uint32_t *index)
{
	uint8_t block[SUCC_BLOCK_SIZE] = {0};
	uint64_t addr;
	unsigned int rank;

	if (info->insns_size == 0)
		return -ENOENT;
	if (info->insns_size == 1) {
		*index = 0;
		return 0;
	}
	if (!info->succ_table)
		return -ENOENT;
	if (!info->imm_loaded) {
		if (procmem_read(sym->pid, info->succ_table, info->imm, sizeof(info->imm)))
			return -EFAULT;
		info->imm_loaded = 1;
	}
	if (pos >= SUCC_IMM_SIZE) {
		addr = info->succ_table + sizeof(info->imm) +
		       (uint64_t)((pos - SUCC_IMM_SIZE) / SUCC_BLOCK_BITS) * SUCC_BLOCK_SIZE;
		if (procmem_read(sym->pid, addr, block, sizeof(block)))
			return -EFAULT;
	}
	rank = symbolizer_succ_index_lookup(info->imm, block, pos);
	if (rank == 0 || rank > info->insns_size)
		return -ERANGE;
	*index = rank - 1;
	return 0;
}

/*
 * Line of pc, as calc_pos() computes it. 0 for a pc outside the iseq (Ruby's answer too); -1 when
 * the table could not be read (not cached: a later sample tries again).
 */
static int64_t compute_line(struct symbolizer *sym, struct iseq_info *info, uint64_t pc)
{
	uint64_t pos;
	uint32_t index, line;
	int err;

	if (pc < info->iseq_encoded || (pc - info->iseq_encoded) % 8)
		return 0;
	pos = (pc - info->iseq_encoded) / 8;
	if (pos > info->iseq_size)
		return 0;
	/* The pc points at the next instruction: Ruby looks up pos - 1 (vm_backtrace.c calc_pos). */
	if (pos)
		pos--;
	err = insn_info_index(sym, info, (unsigned int)pos, &index);
	if (err)
		return err == -EFAULT ? -1 : 0; /* no table (size 0) is Ruby's line 0 too */
	if (procmem_u32(sym->pid,
			info->insns_body + (uint64_t)index * sym->off->insn_info_entry_size, &line))
		return -1;
	return (int32_t)line;
}

/*
 * Whether the object at info->iseq is no longer the iseq that was cached: GC freed it and the
 * address now holds another iseq (or something else): its body, instruction array, type, size,
 * label and path objects and the label's text are compared. A read that fails keeps the entry:
 * the sample named this iseq, so it existed a moment ago.
 */
static bool iseq_replaced(struct symbolizer *sym, const struct iseq_info *info)
{
	const struct ruby_offsets *off = sym->off;
	uint64_t flags, body, hdr[2], loc[4];
	char label[RVALUE_STR_MAX + 1];

	if (rvalue_flags(sym->pid, info->iseq, &flags))
		return false;
	if ((flags & RUBY_T_MASK) != RUBY_T_IMEMO || rvalue_imemo_type(flags) != RUBY_IMEMO_ISEQ)
		return true;
	if (procmem_u64(sym->pid, info->iseq + off->iseq_body, &body))
		return false;
	if (body != info->body)
		return true;
	if (procmem_read(sym->pid, body + off->body_type, hdr, sizeof(hdr)) ||
	    procmem_read(sym->pid, body + off->body_location, loc, sizeof(loc)))
		return false;
	if ((enum iseq_type)(uint32_t)hdr[0] != info->type ||
	    (uint32_t)(hdr[0] >> 32) != info->iseq_size || hdr[1] != info->iseq_encoded ||
	    loc[0] != info->pathobj_val ||
	    loc[(off->loc_label - off->loc_pathobj) / 8] != info->label_val)
		return true;
	/*
	 * Same-sized mallocs and a freed String's slot come back at the same addresses often
	 * (methods defined in a loop): the label's text settles it.
	 */
	if (rvalue_string(sym->pid, off, info->label_val, label, sizeof(label)))
		return false;
	return strcmp(label, info->label) != 0;
}

static bool line_of_iseq(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	return k1 == *(const uint64_t *)ctx;
}

static bool owner_of_iseq(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	if (k1 != *(const uint64_t *)ctx)
		return false;
	free((char *)(uintptr_t)val);
	return true;
}

/* Forgets a replaced iseq: its entry, its lines and its method's owners. */
static void forget_iseq(struct symbolizer *sym, struct iseq_info *info)
{
	uint64_t iseq = info->iseq;

	hmap_del(&sym->iseqs, iseq, 0, NULL);
	hmap_filter(&sym->lines, line_of_iseq, &iseq);
	hmap_filter(&sym->owners, owner_of_iseq, &iseq);
	hmap_del(&sym->multi, iseq, 0, NULL);
	free_iseq(NULL, 0, 0, (uintptr_t)info);
	sym->stats.iseq_reused++;
}

/*
 * Cached iseq, loaded on first use and checked again once per epoch. NULL when it cannot be
 * read. A replaced entry is freed here, inside a lookup: safe because no caller holds the info
 * of another iseq than the one it is looking up (qualified_label and owner_in_label keep the
 * child's info while they look up a parent, never the parent's across a lookup).
 */
static struct iseq_info *get_iseq(struct symbolizer *sym, uint64_t iseq)
{
	struct iseq_info *info;
	uint64_t val;

	if (hmap_get(&sym->iseqs, iseq, 0, &val)) {
		info = (struct iseq_info *)(uintptr_t)val;
		if (info->epoch == sym->epoch)
			return info;
		if (!iseq_replaced(sym, info)) {
			info->epoch = sym->epoch;
			return info;
		}
		forget_iseq(sym, info);
	}
	info = load_iseq(sym, iseq);
	if (!info)
		return NULL;
	if (hmap_put(&sym->iseqs, iseq, 0, (uintptr_t)info)) {
		free_iseq(NULL, 0, 0, (uintptr_t)info);
		return NULL;
	}
	return info;
}

/* ---- owners and qualified labels (Ruby 3.4+, vm_backtrace.c calculate_iseq_label) ---------- */

#define VM_ENV_FLAG_LOCAL   0x2
#define RUBY_IMEMO_SVAR	    2
#define VM_METHOD_TYPE_ISEQ 0
#define MAX_ENV_DEPTH	    256
#define MAX_PARENTS	    256
/* Labels nest once per block's local iseq (twice through an eval); garbage may nest forever. */
#define MAX_LABEL_DEPTH	    8

/* A method entry (imemo ment) or 0, as check_method_entry() decides. */
static uint64_t check_me(struct symbolizer *sym, uint64_t v, int svar_allowed)
{
	uint64_t flags;

	if (rvalue_flags(sym->pid, v, &flags) || (flags & RUBY_T_MASK) != RUBY_T_IMEMO)
		return 0;
	switch (rvalue_imemo_type(flags)) {
	case RUBY_IMEMO_MENT:
		return v;
	case RUBY_IMEMO_SVAR:
		/* struct vm_svar: cref_or_me at +8 */
		if (svar_allowed && procmem_u64(sym->pid, v + 8, &v) == 0)
			return check_me(sym, v, 0);
		return 0;
	default:
		return 0;
	}
}

/* rb_vm_frame_method_entry(): the method entry along the frame's environment chain. */
static uint64_t frame_method_entry(struct symbolizer *sym, uint64_t ep)
{
	uint64_t env[3], me; /* ep[-2] me/cref, ep[-1] specval (previous ep), ep[0] flags */
	int depth;

	for (depth = 0; depth < MAX_ENV_DEPTH && ep; depth++) {
		if (procmem_read(sym->pid, ep - 16, env, sizeof(env)))
			return 0;
		if (env[2] & VM_ENV_FLAG_LOCAL)
			return check_me(sym, env[0], 1);
		me = check_me(sym, env[0], 0);
		if (me)
			return me;
		ep = env[1] & ~3ULL;
	}
	return 0;
}

/* IDs of the hidden ivars that hold names before 3.3, found once per process. */
static int hidden_id(struct symbolizer *sym, int which, uint64_t *id)
{
	static const char *const names[] = {"__classpath__", "__attached__"};

	if (!sym->hidden_ids_tried[which]) {
		sym->hidden_ids_tried[which] = 1;
		if (!sym->symbols && sym->ncand)
			retry_symbols(sym);
		if (rvalue_find_id(sym->pid, sym->off, sym->symbols, names[which], 8192,
				   &sym->hidden_ids[which]))
			sym->hidden_ids[which] = 0;
	}
	*id = sym->hidden_ids[which];
	return *id ? 0 : -ENOENT;
}

/* A hidden ivar of a class (2.6 - 3.1): classext -> iv_tbl (st_table) -> value. */
static int class_ivar(struct symbolizer *sym, uint64_t klass, int which, uint64_t *val)
{
	uint64_t ext, tbl, id;

	if (hidden_id(sym, which, &id) ||
	    procmem_u64(sym->pid, klass + sym->off->class_ext, &ext) || !ext ||
	    procmem_u64(sym->pid, ext + sym->off->ext_iv_tbl, &tbl) || !tbl)
		return -ENOENT;
	return rvalue_st_lookup(sym->pid, tbl, id, val);
}

/*
 * Ruby 3.2's rb_shape_t (shape.h): edges, edge_name +8, next_iv_index +16 (u32), capacity, type
 * +24 (u8), size_pool_index, parent_id +28 (u32); 32 bytes, in vm->shape_list by shape id.
 */
#define SHAPE_SIZE	 32
#define SHAPE_EDGE_NAME	 8
#define SHAPE_NEXT_INDEX 16
#define SHAPE_TYPE	 24
#define SHAPE_PARENT	 28
#define SHAPE_IVAR	 1
#define SHAPE_INVALID_ID 0xffffffffu
#define SHAPE_ID_SHIFT	 32
/* A class with more ivars than this is not searched further (counted in owner_unknown). */
#define MAX_SHAPE_DEPTH	 1024

/* vm->shape_list, checked: root_shape, the field after it, is the same shape 0. */
static uint64_t shape_list(struct symbolizer *sym)
{
	uint64_t vm, list[2];

	if (sym->shape_list || !sym->vm_ptr)
		return sym->shape_list;
	if (procmem_u64(sym->pid, sym->vm_ptr, &vm) || !vm ||
	    procmem_read(sym->pid, vm + sym->off->vm_shape_list, list, sizeof(list)) || !list[0] ||
	    list[0] != list[1])
		return 0;
	sym->shape_list = list[0];
	return list[0];
}

/*
 * A hidden ivar of a class (3.2): rb_shape_get_iv_index() walks from the class's shape (in its
 * flags) to the root; the shape that added the ivar holds its index in iv_ptr.
 */
static int class_ivar_shapes(struct symbolizer *sym, uint64_t klass, uint64_t flags, int which,
			     uint64_t *val)
{
	uint64_t list = shape_list(sym), id, ivs, edge;
	uint32_t shape_id = (uint32_t)(flags >> SHAPE_ID_SHIFT), parent, next;
	uint8_t hdr[SHAPE_SIZE], type;
	int depth;

	if (!list || hidden_id(sym, which, &id))
		return -ENOENT;
	for (depth = 0; depth < MAX_SHAPE_DEPTH && shape_id != SHAPE_INVALID_ID; depth++) {
		if (procmem_read(sym->pid, list + (uint64_t)shape_id * SHAPE_SIZE, hdr,
				 sizeof(hdr)))
			return -EFAULT;
		memcpy(&edge, hdr + SHAPE_EDGE_NAME, sizeof(edge));
		memcpy(&next, hdr + SHAPE_NEXT_INDEX, sizeof(next));
		memcpy(&parent, hdr + SHAPE_PARENT, sizeof(parent));
		type = hdr[SHAPE_TYPE];
		if (parent == SHAPE_INVALID_ID) /* the root: no ivar */
			return -ENOENT;
		if (edge == id) {
			if (type != SHAPE_IVAR || next == 0 ||
			    procmem_u64(sym->pid, klass + sym->off->class_iv_ptr, &ivs) || !ivs)
				return -ENOENT;
			return procmem_u64(sym->pid, ivs + (uint64_t)(next - 1) * 8, val);
		}
		shape_id = parent;
	}
	return -ELOOP;
}

/* The permanent class path of a class or module, or -ENOENT (anonymous, temporary). */
static int class_path(struct symbolizer *sym, uint64_t klass, uint64_t flags, char *buf, size_t len)
{
	uint8_t permanent;
	uint64_t path;

	if ((flags & RUBY_T_MASK) != RUBY_T_CLASS && (flags & RUBY_T_MASK) != RUBY_T_MODULE)
		return -ENOENT;
	switch (sym->off->class_names) {
	case CLASS_NAMES_FIELD:
		if (procmem_read(sym->pid, klass + sym->off->class_permanent, &permanent, 1) ||
		    !(permanent & 1) ||
		    procmem_u64(sym->pid, klass + sym->off->class_classpath, &path))
			return -ENOENT;
		break;
	case CLASS_NAMES_IVTBL:
		/* __classpath__ holds permanent names only (__tmp_classpath__ the others) */
		if (class_ivar(sym, klass, 0, &path))
			return -ENOENT;
		break;
	case CLASS_NAMES_SHAPES:
		if (class_ivar_shapes(sym, klass, flags, 0, &path))
			return -ENOENT;
		break;
	default:
		return -ENOENT;
	}
	return rvalue_string(sym->pid, sym->off, path, buf, len) || !buf[0] ? -ENOENT : 0;
}

/* The object a singleton class is attached to. */
static int attached_object(struct symbolizer *sym, uint64_t klass, uint64_t flags, uint64_t *obj)
{
	switch (sym->off->class_names) {
	case CLASS_NAMES_FIELD:
		return procmem_u64(sym->pid, klass + sym->off->class_attached, obj);
	case CLASS_NAMES_IVTBL:
		return class_ivar(sym, klass, 1, obj);
	case CLASS_NAMES_SHAPES:
		return class_ivar_shapes(sym, klass, flags, 1, obj);
	default:
		return -ENOENT;
	}
}

/* rb_gen_method_name()'s prefix for methods owned by klass: "Foo::Bar#", "Foo." or "". */
static const char *owner_prefix(struct symbolizer *sym, uint64_t klass)
{
	char path[RVALUE_STR_MAX + 2] = "";
	uint64_t val, flags, attached, aflags;
	size_t n;
	char *copy;

	if (hmap_get(&sym->classes, klass, 0, &val))
		return (const char *)(uintptr_t)val;
	if (rvalue_flags(sym->pid, klass, &flags))
		return "";
	if ((flags & RUBY_T_MASK) == RUBY_T_CLASS && (flags & sym->off->fl_singleton)) {
		/* a singleton class: "Attached." when the attached object is a named module */
		if (attached_object(sym, klass, flags, &attached) == 0 &&
		    rvalue_flags(sym->pid, attached, &aflags) == 0 &&
		    class_path(sym, attached, aflags, path, sizeof(path) - 1) == 0) {
			n = strlen(path);
			path[n] = '.';
			path[n + 1] = '\0';
		}
	} else if (class_path(sym, klass, flags, path, sizeof(path) - 1) == 0) {
		n = strlen(path);
		path[n] = '#';
		path[n + 1] = '\0';
	}
	copy = strdup(path);
	if (!copy || hmap_put(&sym->classes, klass, 0, (uintptr_t)copy)) {
		free(copy);
		return "";
	}
	return copy;
}

/* Where a frame's method entry comes from: given (a method frame's sampled entry), or found
 * through the frame's ep. varies is set when the owner read depends on the entry. */
struct owner_src {
	uint64_t ep, me;
	int varies;
};

static void unqualify_iseq(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct iseq_info *info = (struct iseq_info *)(uintptr_t)val;
	uint64_t method_iseq = *(const uint64_t *)ctx;

	if (info->iseq == method_iseq || info->local == method_iseq) {
		free(info->qlabel);
		info->qlabel = NULL;
	}
}

/*
 * A method iseq seen under a second owner: the labels of it and its blocks depend on the frame's
 * method entry from now on. Their cached labels go, and the generation tells callers that
 * results they cached may name the other owner.
 */
static void mark_multi(struct symbolizer *sym, uint64_t method_iseq)
{
	if (hmap_put(&sym->multi, method_iseq, 0, 1))
		return;
	hmap_foreach(&sym->iseqs, unqualify_iseq, &method_iseq);
	sym->generation++;
}

/* Remembers the first owner of method_iseq; a second, different one marks it as shared. */
static void note_owner(struct symbolizer *sym, uint64_t method_iseq, const char *prefix)
{
	uint64_t val;
	char *copy;

	if (hmap_get(&sym->owners, method_iseq, 0, &val)) {
		if (strcmp((const char *)(uintptr_t)val, prefix) != 0 &&
		    !hmap_get(&sym->multi, method_iseq, 0, &val))
			mark_multi(sym, method_iseq);
		return;
	}
	copy = strdup(prefix);
	if (copy && hmap_put(&sym->owners, method_iseq, 0, (uintptr_t)copy))
		free(copy);
}

/*
 * The owner prefix of method_iseq from a method entry said to be its, checked (the frame may be
 * gone by now: the entry's definition must be that iseq) and cached per (iseq, entry). NULL when
 * it cannot be confirmed.
 */
static const char *owner_from_me(struct symbolizer *sym, uint64_t method_iseq, uint64_t me)
{
	uint64_t def, body_iseq, owner, val;
	uint8_t type;
	const char *prefix;
	char *copy;

	if (!me)
		return NULL;
	if (hmap_get(&sym->owners, method_iseq, me, &val))
		return (const char *)(uintptr_t)val;
	if (procmem_u64(sym->pid, me + sym->off->me_def, &def) ||
	    procmem_read(sym->pid, def, &type, 1) || (type & 0x0f) != VM_METHOD_TYPE_ISEQ ||
	    procmem_u64(sym->pid, def + 8, &body_iseq) || body_iseq != method_iseq ||
	    procmem_u64(sym->pid, me + sym->off->me_owner, &owner))
		return NULL;
	prefix = owner_prefix(sym, owner);
	copy = strdup(prefix);
	if (!copy || hmap_put(&sym->owners, method_iseq, me, (uintptr_t)copy)) {
		free(copy);
		return NULL;
	}
	note_owner(sym, method_iseq, copy);
	return copy;
}

/*
 * Owner prefix of a method iseq for one frame. An iseq with one owner so far gets it without a
 * look at the frame; one seen under several needs the frame's own entry (src->varies is set).
 */
static const char *method_owner(struct symbolizer *sym, uint64_t method_iseq, struct owner_src *src)
{
	uint64_t val, me = src->me;
	bool multi = hmap_get(&sym->multi, method_iseq, 0, &val);
	const char *prefix;

	if (!me && !multi && hmap_get(&sym->owners, method_iseq, 0, &val))
		return (const char *)(uintptr_t)val;
	if (!me && src->ep)
		me = frame_method_entry(sym, src->ep);
	prefix = owner_from_me(sym, method_iseq, me);
	if (multi || hmap_get(&sym->multi, method_iseq, 0, &val))
		src->varies = 1;
	return prefix;
}

/*
 * The label Ruby 3.4 prints for a Ruby frame into buf. Returns 1 when it is final (cacheable),
 * 0 when the owner could not be confirmed and the bare method name stands in. depth counts the
 * nested calls; past MAX_LABEL_DEPTH they return -1, and the outermost gives the bare label.
 */
static int qualified_label(struct symbolizer *sym, struct iseq_info *info, struct owner_src *src,
			   char *buf, size_t len, int depth)
{
	struct iseq_info *cur = info, *orig;
	const char *prefix;
	char inner[RVALUE_STR_MAX + 64];
	int level = 0, hops, final = 1, n;

	for (hops = 0; hops < MAX_PARENTS; hops++) {
		switch (cur->type) {
		case ISEQ_TYPE_METHOD:
			prefix = method_owner(sym, cur->iseq, src);
			if (!prefix) {
				prefix = "";
				final = 0;
			}
			n = snprintf(buf, len, "%s%s", prefix, cur->label);
			return n >= 0 && (size_t)n < len ? final : 0;
		case ISEQ_TYPE_BLOCK:
		case ISEQ_TYPE_PLAIN:
			/* climb to the local iseq, counting the blocks on the way */
			orig = cur;
			if (orig->parent) {
				while (cur->iseq != orig->local && hops++ < MAX_PARENTS) {
					if (cur->type == ISEQ_TYPE_BLOCK)
						level++;
					cur = get_iseq(sym, cur->parent);
					if (!cur)
						goto bare;
				}
			}
			if (cur == orig)
				goto bare; /* a block without a local iseq: torn memory */
			/* blocks local to each other (torn memory): the whole label is bare */
			if (depth >= MAX_LABEL_DEPTH)
				return -1;
			final = qualified_label(sym, cur, src, inner, sizeof(inner), depth + 1);
			if (final < 0) {
				if (depth)
					return final;
				goto bare;
			}
			if (level <= 1)
				n = snprintf(buf, len, "block in %s", inner);
			else
				n = snprintf(buf, len, "block (%d levels) in %s", level, inner);
			return n >= 0 && (size_t)n < len ? final : 0;
		case ISEQ_TYPE_RESCUE:
		case ISEQ_TYPE_ENSURE:
		case ISEQ_TYPE_EVAL:
			/* printed as the code around them */
			cur = cur->parent ? get_iseq(sym, cur->parent) : NULL;
			if (!cur)
				goto bare;
			continue;
		default: /* TOP, CLASS, MAIN: <main>, <class:Foo>, <top (required)> */
			snprintf(buf, len, "%s", cur->label);
			return 1;
		}
	}
bare:
	snprintf(buf, len, "%s", info->label);
	return 0;
}

/*
 * Before 3.4 Ruby prints bare method names ("block in foo", "rescue in foo"); rubyprofd still
 * names the owner, inside Ruby's own label: "block in Foo#foo". Same return as qualified_label.
 */
static int owner_in_label(struct symbolizer *sym, struct iseq_info *info, struct owner_src *src,
			  char *buf, size_t len)
{
	struct iseq_info *local = info;
	const char *prefix;
	size_t ll, nl;
	int n;

	if (info->local && info->local != info->iseq)
		local = get_iseq(sym, info->local);
	snprintf(buf, len, "%s", info->label);
	if (!local || local->type != ISEQ_TYPE_METHOD)
		return 1;
	prefix = method_owner(sym, local->iseq, src);
	if (!prefix)
		return 0;
	ll = strlen(info->label);
	nl = strlen(local->label);
	/* Ruby's label ends with the method's name: put the owner in front of it */
	if (!*prefix || nl > ll || strcmp(info->label + ll - nl, local->label) != 0)
		return 1;
	n = snprintf(buf, len, "%.*s%s%s", (int)(ll - nl), info->label, prefix, local->label);
	return n >= 0 && (size_t)n < len;
}

void symbolizer_method_entry(struct symbolizer *sym, uint64_t method_iseq, uint64_t me_cref)
{
	if (sym->off->class_names == CLASS_NAMES_NONE)
		return;
	evict_if_full(sym);
	(void)owner_from_me(sym, method_iseq, check_me(sym, me_cref, 1));
}

/*
 * The label of an <internal:...> frame shown as a C method (4.0+): its method's (location_label:
 * the owner and the method entry's name), for a block of the method too. Without a method (the
 * prelude's top), its own label.
 */
static int internal_label(struct symbolizer *sym, struct iseq_info *info, struct owner_src *src,
			  char *buf, size_t len)
{
	struct iseq_info *local = info;

	if (info->type != ISEQ_TYPE_METHOD && info->local && info->local != info->iseq) {
		local = get_iseq(sym, info->local);
		if (!local || local->type != ISEQ_TYPE_METHOD)
			local = info;
	}
	return qualified_label(sym, local, src, buf, len, 0);
}

size_t symbolizer_collapse_internal(uint8_t *kinds, size_t n)
{
	size_t i, j, start = 0, dropped = 0;
	bool pending = false;

	for (i = 0; i < n; i++) {
		switch (kinds[i]) {
		case SYM_FRAME_RUBY:
			pending = false;
			start = i + 1;
			break;
		case SYM_FRAME_C:
			pending = true;
			break;
		case SYM_FRAME_INTERNAL:
			if (pending) {
				for (j = start; j < i; j++) {
					if (kinds[j] == SYM_FRAME_C ||
					    kinds[j] == SYM_FRAME_INTERNAL) {
						kinds[j] = SYM_FRAME_NONE;
						dropped++;
					}
				}
			}
			/* everything before i is dropped or not shown: only i waits now */
			start = i;
			pending = true;
			break;
		default:
			break;
		}
	}
	return dropped;
}

/* Keeps an uncached label until the next call. */
static const char *scratch(struct symbolizer *sym, const char *label, const char *fallback)
{
	free(sym->scratch_label);
	sym->scratch_label = strdup(label);
	return sym->scratch_label ? sym->scratch_label : fallback;
}

static int symbolizer_frame(struct symbolizer *sym, uint64_t iseq, uint64_t pc, int jit,
			    struct owner_src *src, struct sym_iseq *out)
{
	char buf[RVALUE_STR_MAX + 64];
	struct iseq_info *info;
	uint64_t val;
	int final;

	evict_if_full(sym);
	info = get_iseq(sym, iseq);
	if (!info) {
		sym->stats.iseq_failed++;
		return -EFAULT;
	}
	out->label = info->label;
	out->label_final = 1;
	out->owner_varies = 0;
	out->internal = sym->off->internal_as_c && strncmp(info->path, "<internal:", 10) == 0;
	/* a method's own entry: a new owner of a shared iseq is learned (dropping its labels) */
	if (src->me && info->type == ISEQ_TYPE_METHOD && sym->off->class_names != CLASS_NAMES_NONE)
		(void)owner_from_me(sym, iseq, src->me);
	if (info->qlabel) {
		out->label = info->qlabel;
	} else if (sym->off->class_names != CLASS_NAMES_NONE) {
		if (out->internal)
			final = internal_label(sym, info, src, buf, sizeof(buf));
		else if (sym->off->qualified_labels)
			final = qualified_label(sym, info, src, buf, sizeof(buf), 0);
		else
			final = owner_in_label(sym, info, src, buf, sizeof(buf));
		if (final && src->varies) {
			/* right for this frame's entry only: the caller caches it per entry */
			out->owner_varies = 1;
			out->label = scratch(sym, buf, info->label);
		} else if (final) {
			info->qlabel = strdup(buf);
			if (info->qlabel)
				out->label = info->qlabel;
		} else {
			/* not cached: the owner may be confirmed on a later sample */
			sym->stats.owner_unknown++;
			out->label_final = 0;
			out->label = scratch(sym, buf, info->label);
		}
	}
	out->path = info->path;
	out->first_lineno = info->first_lineno;
	out->type = info->type;
	if (jit) {
		/* The pc of a JIT frame is stale: report 0, as rb_profile_frames does. */
		out->line = 0;
		return 0;
	}
	if (hmap_get(&sym->lines, iseq, pc, &val)) {
		out->line = (int64_t)val - 1;
		return 0;
	}
	out->line = compute_line(sym, info, pc);
	/*
	 * The line table is read after the sample: GC may have freed the iseq meanwhile (a method
	 * removed and collected), and the table read is then garbage. The iseq, checked again after
	 * the read, says whether it can be trusted.
	 */
	if (out->line > 0 && iseq_replaced(sym, info))
		out->line = -1;
	if (out->line < 0) {
		out->line = 0;
		out->label_final = 0; /* keep the caller from caching this frame */
		sym->stats.line_failed++;
		return 0;
	}
	hmap_put(&sym->lines, iseq, pc, (uint64_t)(out->line + 1));
	return 0;
}

int symbolizer_iseq(struct symbolizer *sym, uint64_t iseq, uint64_t pc, int jit, uint64_t ep,
		    struct sym_iseq *out)
{
	struct owner_src src = {.ep = ep};

	return symbolizer_frame(sym, iseq, pc, jit, &src, out);
}

int symbolizer_method_frame(struct symbolizer *sym, uint64_t iseq, uint64_t pc, int jit,
			    uint64_t me_cref, struct sym_iseq *out)
{
	struct owner_src src = {0};

	if (sym->off->class_names != CLASS_NAMES_NONE)
		src.me = check_me(sym, me_cref, 1);
	return symbolizer_frame(sym, iseq, pc, jit, &src, out);
}

int symbolizer_cfunc(struct symbolizer *sym, uint64_t me, const char **name)
{
	char buf[RVALUE_STR_MAX + 1], full[2 * RVALUE_STR_MAX + 2];
	uint64_t val, flags, def, id, owner;
	const char *prefix = "";
	char *copy;
	int err;

	evict_if_full(sym);
	if (hmap_get(&sym->cfuncs, me, 0, &val)) {
		*name = (const char *)(uintptr_t)val;
		return 0;
	}
	if (!sym->symbols && sym->ncand)
		retry_symbols(sym);
	err = rvalue_flags(sym->pid, me, &flags);
	if (!err &&
	    ((flags & RUBY_T_MASK) != RUBY_T_IMEMO || rvalue_imemo_type(flags) != RUBY_IMEMO_MENT))
		err = -EINVAL;
	if (!err)
		err = procmem_u64(sym->pid, me + sym->off->me_def, &def);
	if (!err)
		err = procmem_u64(sym->pid, def + sym->off->def_original_id, &id);
	if (!err)
		err = rvalue_id_name(sym->pid, sym->off, sym->symbols, id, buf, sizeof(buf));
	if (!err && !buf[0])
		err = -ENOENT;
	if (!err && sym->off->class_names != CLASS_NAMES_NONE &&
	    procmem_u64(sym->pid, me + sym->off->me_owner, &owner) == 0)
		prefix = owner_prefix(sym, owner);
	if (err) {
		sym->stats.cfunc_failed++;
		return err;
	}
	if (snprintf(full, sizeof(full), "%s%s", prefix, buf) >= (int)sizeof(full))
		full[sizeof(full) - 1] = '\0';
	copy = strdup(full);
	if (!copy)
		return -ENOMEM;
	if (hmap_put(&sym->cfuncs, me, 0, (uintptr_t)copy)) {
		free(copy);
		return -ENOMEM;
	}
	*name = copy;
	return 0;
}
