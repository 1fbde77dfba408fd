/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fakemem.h - a fake process address space behind procmem_read (the link-time seam in
 * daemon/proc/procmem.h), for the unit tests and fuzz targets of the Ruby object readers. Include it
 * from exactly one .c file of a binary: it defines the strong procmem_read, which serves
 * FAKEMEM_PID from the fake regions and hands every other pid to the real procmem_vm_read.
 *
 * It also builds the Ruby objects the readers expect, laid out with a row of daemon/ruby/offsets.c
 * (a String, an Array, the global symbol table, a class, a method, its block, a C function's
 * method entry, a line table), and serializes them in the fuzz input format. Laid out from the
 * row the readers then read them with, the objects prove nothing about the row itself: on the
 * rows of versions that no end-to-end test runs on a real Ruby (2.6, 3.0, 3.2, 4.0) the unit tests
 * over them are self-consistency only (tests/unit/offsets_row.h):
 *
 *   byte 0     the offsets row (modulo the number of rows)
 *   byte 1     flags: FAKEMEM_F_*
 *   8 x u64    the roots (enum fakemem_root), little-endian
 *   then up to FAKEMEM_REGIONS times: u16 length, that many bytes, mapped at fakemem_base(i)
 */
#ifndef RP_FAKEMEM_H
#define RP_FAKEMEM_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/procmem.h"
#include "ruby/offsets.h"
#include "ruby/rvalue.h"
#include "ruby/symbolizer.h"

/* Above any pid_max (at most 2^22): never a real process. */
#define FAKEMEM_PID	    0x7ffffff0
#define FAKEMEM_REGIONS	    4
#define FAKEMEM_REGION_MAX  0xffff
/* Reads allowed per fuzz input: every reader is bounded well below (rvalue_find_id's 8192
 * serials are the most); past it a reader is looping on garbage and the target aborts. */
#define FAKEMEM_MAX_READS   200000
#define FAKEMEM_F_JIT	    0x01
#define FAKEMEM_F_SMALL	    0x02 /* cache bounds of 1: a reset at every call */
#define FAKEMEM_HEADER_SIZE (2 + 8 * 8)

enum fakemem_root {
	FAKEMEM_STR,
	FAKEMEM_ARY,
	FAKEMEM_SYMBOLS,
	FAKEMEM_ISEQ, /* a block of a method */
	FAKEMEM_PC,
	FAKEMEM_EP,
	FAKEMEM_ME, /* a C function's method entry */
	FAKEMEM_TABLE,
	FAKEMEM_NROOTS,
};

struct fakemem_region {
	uint64_t addr;
	const uint8_t *data;
	size_t len;
};

/*
 * The one fake address space of the binary: procmem_read has no context argument (that is the
 * point of a link-time seam), so the regions it serves are a file-scope variable of the test.
 */
static struct {
	struct fakemem_region r[FAKEMEM_REGIONS];
	unsigned int n;
	uint64_t reads;
	uint64_t max_reads; /* 0: unbounded */
	int over;	    /* max_reads was hit */
} fakemem;

/*
 * A fuzz target's check after each reader it runs: past max_reads the reader was looping on
 * garbage and the target aborts; else the count starts again for the next reader.
 */
static inline void fakemem_check_bounded(const char *target, const char *what)
{
	if (fakemem.over) {
		fprintf(stderr, "%s: %s read more than %d times: a loop on garbage\n", target, what,
			FAKEMEM_MAX_READS);
		abort();
	}
	fakemem.reads = 0;
}

static inline uint64_t fakemem_base(unsigned int i)
{
	return 0x10000 * (uint64_t)(i + 1);
}

static inline void fakemem_reset(void)
{
	memset(&fakemem, 0, sizeof(fakemem));
}

static inline void fakemem_map(uint64_t addr, const void *data, size_t len)
{
	if (fakemem.n < FAKEMEM_REGIONS)
		fakemem.r[fakemem.n++] = (struct fakemem_region){addr, data, len};
}

int procmem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	unsigned int i;

	if (pid != FAKEMEM_PID)
		return procmem_vm_read(pid, addr, buf, len);
	if (fakemem.max_reads && ++fakemem.reads > fakemem.max_reads) {
		fakemem.over = 1;
		return -EFAULT;
	}
	if (!addr)
		return -EFAULT;
	for (i = 0; i < fakemem.n; i++) {
		const struct fakemem_region *r = &fakemem.r[i];

		if (addr >= r->addr && addr - r->addr <= r->len &&
		    len <= r->len - (addr - r->addr)) {
			memcpy(buf, r->data + (addr - r->addr), len);
			return 0;
		}
	}
	return -EFAULT;
}

static inline uint64_t fakemem_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * Maps a fuzz input (format above): row, flags and roots out; the regions point into data.
 * 0, or -EINVAL when the input is shorter than its header.
 */
static inline int fakemem_load(const uint8_t *data, size_t size, unsigned int *row,
			       unsigned int *flags, uint64_t roots[FAKEMEM_NROOTS])
{
	size_t pos = FAKEMEM_HEADER_SIZE, len;
	unsigned int i;

	fakemem_reset();
	if (size < FAKEMEM_HEADER_SIZE)
		return -EINVAL;
	*row = data[0];
	*flags = data[1];
	for (i = 0; i < FAKEMEM_NROOTS; i++)
		roots[i] = fakemem_le64(data + 2 + 8 * i);
	for (i = 0; i < FAKEMEM_REGIONS && pos + 2 <= size; i++) {
		len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
		pos += 2;
		if (len > size - pos)
			len = size - pos;
		fakemem_map(fakemem_base(i), data + pos, len);
		pos += len;
	}
	return 0;
}

/* ---- building Ruby objects ------------------------------------------------------------------ */

#define FAKEMEM_BUILD_SIZE 4096

/* Regions of a built image: objects (40-byte slots and classes), structs (bodies, tables), bytes. */
enum { FM_OBJ, FM_STRUCT, FM_BYTES };

struct fakemem_image {
	const struct ruby_offsets *off;
	unsigned int row;
	uint8_t mem[3][FAKEMEM_BUILD_SIZE];
	size_t used[3];
	uint64_t roots[FAKEMEM_NROOTS];
	/* &ruby_current_vm_ptr for symbolizer_set_vm() (3.2: shapes; not a fuzz root), else 0 */
	uint64_t vm_ptr;
	int overflow; /* an allocation did not fit */
};

static inline uint64_t fm_alloc(struct fakemem_image *img, int region, size_t size)
{
	size_t at = (img->used[region] + 15) & ~(size_t)15;

	if (at == 0)
		at = 0x50; /* heap objects are above 0x40 past the base */
	if (at + size > FAKEMEM_BUILD_SIZE) {
		img->overflow = 1;
		return 0;
	}
	img->used[region] = at + size;
	return fakemem_base((unsigned int)region) + at;
}

static inline uint8_t *fm_ptr(struct fakemem_image *img, uint64_t addr, size_t len)
{
	int i;

	for (i = 0; i < 3; i++) {
		uint64_t b = fakemem_base((unsigned int)i);

		if (addr >= b && addr + len <= b + FAKEMEM_BUILD_SIZE)
			return img->mem[i] + (addr - b);
	}
	img->overflow = 1;
	return NULL;
}

static inline void fm_w64(struct fakemem_image *img, uint64_t addr, uint64_t v)
{
	uint8_t *p = fm_ptr(img, addr, 8);

	if (p)
		memcpy(p, &v, 8);
}

static inline void fm_w32(struct fakemem_image *img, uint64_t addr, uint32_t v)
{
	uint8_t *p = fm_ptr(img, addr, 4);

	if (p)
		memcpy(p, &v, 4);
}

static inline void fm_w8(struct fakemem_image *img, uint64_t addr, uint8_t v)
{
	uint8_t *p = fm_ptr(img, addr, 1);

	if (p)
		*p = v;
}

/* A String: embedded when it fits the 40-byte slot, else its bytes in FM_BYTES. */
static inline uint64_t fm_string(struct fakemem_image *img, const char *s)
{
	uint64_t o = fm_alloc(img, FM_OBJ, 40), bytes;
	size_t n = strlen(s);
	uint8_t *p;

	if (img->off->rstring == RSTRING_LEN_IN_FLAGS && n < 24) {
		fm_w64(img, o, RUBY_T_STRING | (uint64_t)n << 14);
		p = fm_ptr(img, o + 16, n);
	} else if (img->off->rstring == RSTRING_LEN_FIELD && n < 16) {
		fm_w64(img, o, RUBY_T_STRING);
		fm_w64(img, o + 16, n);
		p = fm_ptr(img, o + 24, n);
	} else {
		bytes = fm_alloc(img, FM_BYTES, n + 1);
		fm_w64(img, o, RUBY_T_STRING | RUBY_FL_USER1);
		fm_w64(img, o + 16, n);
		fm_w64(img, o + 24, bytes);
		p = fm_ptr(img, bytes, n);
	}
	if (p)
		memcpy(p, s, n);
	return o;
}

/* A heap (not embedded) Array of n elements, of which the first `have` are written; the rest
 * lie past the buffer (an ID table chunk is 1024 VALUEs long, a seed needs a few). */
static inline uint64_t fm_array(struct fakemem_image *img, uint64_t n, const uint64_t *elems,
				size_t have)
{
	uint64_t o = fm_alloc(img, FM_OBJ, 40), buf = fm_alloc(img, FM_STRUCT, 8 * (have + 1));
	size_t i;

	fm_w64(img, o, RUBY_T_ARRAY);
	fm_w64(img, o + 16, n);
	fm_w64(img, o + 32, buf);
	for (i = 0; i < have; i++)
		fm_w64(img, buf + 8 * i, elems[i]);
	return o;
}

#define FM_SERIAL_CLASSPATH 1
#define FM_SERIAL_ATTACHED  2
#define FM_SERIAL_OTHER	    3 /* an ivar set before a class's name (3.2: not index 0) */
#define FM_SERIAL_TIMES	    20
#define FM_SERIALS	    21

/* 3.2's shape tree (rb_shape_t, 32 bytes): 0 the root, 1 +OTHER, 2 +OTHER+__classpath__,
 * 3 +__attached__. */
#define FM_SHAPE_NAMED	  2
#define FM_SHAPE_ATTACHED 3

static inline void fm_shape(struct fakemem_image *img, uint64_t list, uint32_t id, uint64_t edge,
			    uint32_t next_index, uint8_t type, uint32_t parent)
{
	uint64_t sh = list + (uint64_t)id * 32;

	fm_w64(img, sh + 8, edge);
	fm_w32(img, sh + 16, next_index);
	fm_w8(img, sh + 24, type);
	fm_w32(img, sh + 28, parent);
}

/* The VM of a 3.2 row: vm->shape_list (and root_shape, the same) and &ruby_current_vm_ptr. */
static inline void fm_shapes(struct fakemem_image *img)
{
	const struct ruby_offsets *off = img->off;
	uint64_t list = fm_alloc(img, FM_BYTES, 4 * 32), vm, ptr;

	vm = fm_alloc(img, FM_BYTES, off->vm_shape_list + 16u);
	ptr = fm_alloc(img, FM_BYTES, 8);
	fm_shape(img, list, 0, 0, 0, 0, 0xffffffffu);
	fm_shape(img, list, 1, FM_SERIAL_OTHER, 1, 1, 0);
	fm_shape(img, list, FM_SHAPE_NAMED, FM_SERIAL_CLASSPATH, 2, 1, 1);
	fm_shape(img, list, FM_SHAPE_ATTACHED, FM_SERIAL_ATTACHED, 1, 1, 0);
	fm_w64(img, vm + off->vm_shape_list, list);
	fm_w64(img, vm + off->vm_shape_list + 8, list);
	fm_w64(img, ptr, vm);
	img->vm_ptr = ptr;
}

/* A class (or its singleton) named by this row's class_names scheme. */
static inline uint64_t fm_class(struct fakemem_image *img, uint64_t flags, uint64_t name_ivar,
				uint64_t id, uint64_t value)
{
	uint64_t k = fm_alloc(img, FM_OBJ, 192), ext, tbl, ent, ivs;
	const struct ruby_offsets *off = img->off;

	fm_w64(img, k, flags);
	if (off->class_names == CLASS_NAMES_FIELD) {
		if (name_ivar == FM_SERIAL_CLASSPATH) {
			fm_w8(img, k + off->class_permanent, 1);
			fm_w64(img, k + off->class_classpath, value);
		} else {
			fm_w64(img, k + off->class_attached, value);
		}
	} else if (off->class_names == CLASS_NAMES_IVTBL) {
		/* classext -> iv_tbl, an st_table {..., entries_start +32, bound +40, entries +48} */
		ext = fm_alloc(img, FM_STRUCT, 32);
		tbl = fm_alloc(img, FM_STRUCT, 56);
		ent = fm_alloc(img, FM_STRUCT, 24);
		fm_w64(img, k + off->class_ext, ext);
		fm_w64(img, ext + off->ext_iv_tbl, tbl);
		fm_w64(img, tbl + 32, 0);
		fm_w64(img, tbl + 40, 1);
		fm_w64(img, tbl + 48, ent);
		fm_w64(img, ent + 8, id);
		fm_w64(img, ent + 16, value);
	} else if (off->class_names == CLASS_NAMES_SHAPES) {
		/* the shape id in the flags' upper half; iv_ptr indexed by the shape's ivars */
		ivs = fm_alloc(img, FM_STRUCT, 16);
		fm_w64(img, k + off->class_iv_ptr, ivs);
		if (name_ivar == FM_SERIAL_CLASSPATH) {
			fm_w64(img, k, flags | (uint64_t)FM_SHAPE_NAMED << 32);
			fm_w64(img, ivs, fm_string(img, "NotAName"));
			fm_w64(img, ivs + 8, value);
		} else {
			fm_w64(img, k, flags | (uint64_t)FM_SHAPE_ATTACHED << 32);
			fm_w64(img, ivs, value);
		}
	}
	return k;
}

/* An iseq of `type` labelled `label` in /app/foo.rb from line 3; its line table maps
 * instruction positions 0, 2 and 5 to lines 4, 5 and 6 (iseq size 8). */
static inline uint64_t fm_iseq(struct fakemem_image *img, int type, const char *label,
			       uint64_t parent, uint64_t local, uint64_t *encoded)
{
	const struct ruby_offsets *off = img->off;
	uint64_t o = fm_alloc(img, FM_OBJ, 40), body = fm_alloc(img, FM_STRUCT, 192);
	uint64_t enc = fm_alloc(img, FM_STRUCT, 8 * 8);
	uint64_t lines = fm_alloc(img, FM_STRUCT, 3 * off->insn_info_entry_size);
	uint64_t succ = fm_alloc(img, FM_STRUCT, 6 * 8), imm = 0, loc = body + off->body_location;
	static const unsigned int pos[] = {0, 2, 5};
	unsigned int i, r = 0;

	fm_w64(img, o, RUBY_T_IMEMO | (uint64_t)RUBY_IMEMO_ISEQ << 12);
	fm_w64(img, o + off->iseq_body, body);
	fm_w32(img, body + off->body_type, (uint32_t)type);
	fm_w32(img, body + off->body_iseq_size, 8);
	fm_w64(img, body + off->body_iseq_encoded, enc);
	*encoded = enc;
	fm_w64(img, loc + off->loc_pathobj, fm_string(img, "/app/foo.rb"));
	fm_w64(img, loc + off->loc_label, fm_string(img, label));
	fm_w64(img, loc + off->loc_base_label, fm_string(img, label));
	if (off->first_lineno_is_fixnum)
		fm_w64(img, loc + off->loc_first_lineno, 3 << 1 | 1);
	else
		fm_w32(img, loc + off->loc_first_lineno, 3);
	fm_w64(img, body + off->body_insns_info, lines);
	fm_w32(img, body + off->body_insns_size, 3);
	fm_w64(img, body + off->body_insns_succ, succ);
	for (i = 0; i < 3; i++)
		fm_w32(img, lines + i * off->insn_info_entry_size, 4 + i);
	/* Ruby's immediate part: 7 bits of rank per position, 9 positions a word */
	for (i = 0; i < 9; i++) {
		if (r < 3 && pos[r] == i)
			r++;
		imm |= (uint64_t)r << (7 * i);
	}
	fm_w64(img, succ, imm);
	fm_w64(img, body + off->body_parent_iseq, parent);
	fm_w64(img, body + off->body_local_iseq, local ? local : o);
	return o;
}

/* A method entry (an imemo ment) owned by `owner`, *def its definition of `type` (VM_METHOD_TYPE_*). */
static inline uint64_t fm_method_entry(struct fakemem_image *img, uint64_t owner, uint8_t type,
				       uint64_t *def)
{
	const struct ruby_offsets *off = img->off;
	uint64_t me = fm_alloc(img, FM_OBJ, 40);

	*def = fm_alloc(img, FM_STRUCT, 40);
	fm_w64(img, me, RUBY_T_IMEMO | (uint64_t)RUBY_IMEMO_MENT << 12);
	fm_w64(img, me + off->me_def, *def);
	fm_w64(img, me + off->me_owner, owner);
	fm_w8(img, *def, type);
	return me;
}

/*
 * The objects of one Ruby version: a method Foo#foo and its block (the FAKEMEM_ISEQ root, a pc
 * on line 5, an ep whose method entry is foo's), a C function Foo.times (FAKEMEM_ME, owned by
 * Foo's singleton class), the symbol table that names it. 0, or -ENOSPC.
 */
static inline int fakemem_build(struct fakemem_image *img, unsigned int row)
{
	const struct ruby_offsets *off;
	uint64_t ids[FM_SERIALS * 2] = {0}, chunk, foo, single, method, me, def, cme, cdef, env,
				  sym;
	uint64_t enc;
	unsigned int nrows, s;
	const char *name;
	char other[16];

	off = offsets_all(&nrows);
	memset(img, 0, sizeof(*img));
	img->row = row % nrows;
	img->off = off = &off[img->row];

	/* the symbol table: last_id, ids at symbols_ids: an Array of chunks of [String, Symbol] */
	for (s = 1; s < FM_SERIALS; s++) {
		name = s == FM_SERIAL_CLASSPATH	 ? "__classpath__"
		       : s == FM_SERIAL_ATTACHED ? "__attached__"
		       : s == FM_SERIAL_TIMES	 ? "times"
					      : (snprintf(other, sizeof(other), "id%u", s), other);
		ids[2 * s] = fm_string(img, name);
		ids[2 * s + 1] = (uint64_t)s << 8 | 0x0c;
	}
	chunk = fm_array(img, 1024, ids, 2 * FM_SERIALS);
	sym = fm_alloc(img, FM_STRUCT, 32);
	fm_w32(img, sym, FM_SERIALS);
	fm_w64(img, sym + off->symbols_ids, fm_array(img, 1, &chunk, 1));
	img->roots[FAKEMEM_SYMBOLS] = sym;
	if (off->class_names == CLASS_NAMES_SHAPES)
		fm_shapes(img);

	foo = fm_class(img, RUBY_T_CLASS, FM_SERIAL_CLASSPATH, FM_SERIAL_CLASSPATH,
		       fm_string(img, "Foo"));
	single = fm_class(img, RUBY_T_CLASS | off->fl_singleton, FM_SERIAL_ATTACHED,
			  FM_SERIAL_ATTACHED, foo);

	method = fm_iseq(img, ISEQ_TYPE_METHOD, "foo", 0, 0, &enc);
	img->roots[FAKEMEM_ISEQ] =
		fm_iseq(img, ISEQ_TYPE_BLOCK, "block in foo", method, method, &enc);
	img->roots[FAKEMEM_PC] = enc + 4 * 8; /* after position 3: the line of position 2 */

	me = fm_method_entry(img, foo, 0 /* VM_METHOD_TYPE_ISEQ */, &def);
	fm_w64(img, def + 8, method);
	/* the frame's env: ep[-2] the method entry, ep[-1] no previous env, ep[0] VM_ENV_FLAG_LOCAL */
	env = fm_alloc(img, FM_STRUCT, 24);
	fm_w64(img, env, me);
	fm_w64(img, env + 16, 0x2);
	img->roots[FAKEMEM_EP] = env + 16;

	cme = fm_method_entry(img, single, 1 /* VM_METHOD_TYPE_CFUNC */, &cdef);
	fm_w64(img, cdef + off->def_original_id,
	       (uint64_t)FM_SERIAL_TIMES << 4 > off->last_op_id ? (uint64_t)FM_SERIAL_TIMES << 4
								: FM_SERIAL_TIMES);
	img->roots[FAKEMEM_ME] = cme;

	img->roots[FAKEMEM_STR] = fm_string(img, "a String longer than any embedded one");
	img->roots[FAKEMEM_ARY] = fm_array(img, 3, ids + 2, 3);
	/* Foo's iv_tbl (IVTBL rows), else any table-shaped struct */
	img->roots[FAKEMEM_TABLE] = off->class_names == CLASS_NAMES_IVTBL ? 0 : sym;
	if (off->class_names == CLASS_NAMES_IVTBL) {
		uint64_t ext = 0;
		uint8_t *p = fm_ptr(img, foo + off->class_ext, 8);

		if (p)
			memcpy(&ext, p, 8);
		p = ext ? fm_ptr(img, ext + off->ext_iv_tbl, 8) : NULL;
		if (p)
			memcpy(&img->roots[FAKEMEM_TABLE], p, 8);
	}
	return img->overflow ? -ENOSPC : 0;
}

static inline uint64_t fm_r64(struct fakemem_image *img, uint64_t addr)
{
	uint8_t *p = fm_ptr(img, addr, 8);
	uint64_t v = 0;

	if (p)
		memcpy(&v, p, 8);
	return v;
}

/*
 * Torn memory: the block (FAKEMEM_ISEQ) and its method made blocks, each the other's parent and
 * local iseq. Ruby 3.4's labels once recursed on it without end (a stack overflow).
 */
static inline void fakemem_blocks_local_to_each_other(struct fakemem_image *img)
{
	const struct ruby_offsets *off = img->off;
	uint64_t block = img->roots[FAKEMEM_ISEQ];
	uint64_t method = fm_r64(img, fm_r64(img, block + off->iseq_body) + off->body_local_iseq);
	uint64_t mb = fm_r64(img, method + off->iseq_body);

	fm_w32(img, mb + off->body_type, ISEQ_TYPE_BLOCK);
	fm_w64(img, mb + off->body_parent_iseq, block);
	fm_w64(img, mb + off->body_local_iseq, block);
}

/* Serializes a built image as a fuzz input into out (at least fakemem_size(img) bytes). */
static inline size_t fakemem_size(const struct fakemem_image *img)
{
	return FAKEMEM_HEADER_SIZE + 6 + img->used[0] + img->used[1] + img->used[2];
}

static inline size_t fakemem_serialize(const struct fakemem_image *img, unsigned int flags,
				       uint8_t *out)
{
	size_t pos = 0, n;
	unsigned int i;
	int b;

	out[pos++] = (uint8_t)img->row;
	out[pos++] = (uint8_t)flags;
	for (i = 0; i < FAKEMEM_NROOTS; i++)
		for (b = 0; b < 8; b++)
			out[pos++] = (uint8_t)(img->roots[i] >> (8 * b));
	for (i = 0; i < 3; i++) {
		n = img->used[i];
		out[pos++] = (uint8_t)n;
		out[pos++] = (uint8_t)(n >> 8);
		memcpy(out + pos, img->mem[i], n);
		pos += n;
	}
	return pos;
}

/* Maps a built image directly (for unit tests), without the serialization. */
static inline void fakemem_map_image(const struct fakemem_image *img)
{
	unsigned int i;

	fakemem_reset();
	for (i = 0; i < 3; i++)
		fakemem_map(fakemem_base(i), img->mem[i], img->used[i]);
}

#endif
