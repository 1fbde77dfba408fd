/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rvalue.h - reads Ruby objects out of a live process (strings, arrays, IDs) with the layout of
 * its Ruby version. Every read is checked (object type in the flags, sizes bounded); nothing here
 * trusts the target's memory.
 */
#ifndef RP_RVALUE_H
#define RP_RVALUE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ruby/offsets.h"

#define RUBY_T_MASK   0x1f
#define RUBY_T_STRING 0x05
#define RUBY_T_ARRAY  0x07
#define RUBY_T_CLASS  0x02
#define RUBY_T_MODULE 0x03
#define RUBY_T_ICLASS 0x1c
#define RUBY_T_IMEMO  0x1a
#define RUBY_FL_USER1 (1ULL << 13)

/* imemo type: (flags >> 12) & 0x0f */
#define RUBY_IMEMO_MENT		 6
#define RUBY_IMEMO_ISEQ		 7
#define rvalue_imemo_type(flags) (((flags) >> 12) & 0x0f)

/* Longest string read from the target (labels, paths, method names). */
#define RVALUE_STR_MAX 4096

/* A special constant (nil, Fixnum, Symbol...) is not a heap object. */
static inline int rvalue_is_heap(uint64_t v)
{
	/* Special constants are tagged (low bits) or tiny (false, nil, true, undef). */
	return (v & 7) == 0 && v > 0x40;
}

/* The flags word of a heap object. 0 or -errno. */
int rvalue_flags(pid_t pid, uint64_t obj, uint64_t *flags);

/* Copies a T_STRING into buf (NUL-terminated, truncated at len-1). 0, -EINVAL (not a String), or
 * -errno. */
int rvalue_string(pid_t pid, const struct ruby_offsets *off, uint64_t str, char *buf, size_t len);

/* Element i of a T_ARRAY. 0, -EINVAL (not an Array), -ERANGE (out of bounds), or -errno. */
int rvalue_array_entry(pid_t pid, uint64_t ary, uint64_t i, uint64_t *out);

/* Name of an ID through the global symbol table at `symbols`. 0, -ENOENT or -errno. */
int rvalue_id_name(pid_t pid, const struct ruby_offsets *off, uint64_t symbols, uint64_t id,
		   char *buf, size_t len);

/*
 * The ID whose name is `name`, searched among the first max_serial IDs of the global symbol
 * table (names interned at boot, such as "__classpath__", come early). 0, -ENOENT or -errno.
 */
int rvalue_find_id(pid_t pid, const struct ruby_offsets *off, uint64_t symbols, const char *name,
		   uint64_t max_serial, uint64_t *id);

/* Value of `key` in a Ruby st_table (open addressing, 2.4+), scanning at most 256 entries.
 * 0, -ENOENT or -errno. */
int rvalue_st_lookup(pid_t pid, uint64_t table, uint64_t key, uint64_t *val);

/* Structural check of a global symbol table candidate. 0 when it looks right, else -EINVAL. */
int rvalue_check_symbols(pid_t pid, const struct ruby_offsets *off, uint64_t symbols);

#endif
