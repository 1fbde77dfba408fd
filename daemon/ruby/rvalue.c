// SPDX-License-Identifier: GPL-2.0-only
/* rvalue.c - Ruby object readers for a live process. */
#include <errno.h>
#include <string.h>

#include "proc/procmem.h"
#include "ruby/rvalue.h"

#define RSTRING_NOEMBED	  RUBY_FL_USER1
#define RARRAY_EMBED_FLAG RUBY_FL_USER1
/* The ID table: chunks of ID_ENTRY_UNIT ids, ID_ENTRY_SIZE VALUEs ([String, Symbol]) per id. */
#define ID_ENTRY_UNIT	  512
#define ID_ENTRY_SIZE	  2
#define ID_SCOPE_SHIFT	  4

int rvalue_flags(pid_t pid, uint64_t obj, uint64_t *flags)
{
	if (!rvalue_is_heap(obj))
		return -EINVAL;
	return procmem_u64(pid, obj, flags);
}

/* A heap object of type's first five words (flags, klass, then its own): 0, -EINVAL (not a
 * heap object, or of another type), or procmem's -errno. */
static int read_object(pid_t pid, uint64_t obj, uint64_t type, uint64_t hdr[5])
{
	int err;

	if (!rvalue_is_heap(obj))
		return -EINVAL;
	err = procmem_read(pid, obj, hdr, 5 * sizeof(hdr[0]));
	if (err)
		return err;
	return (hdr[0] & RUBY_T_MASK) == type ? 0 : -EINVAL;
}

int rvalue_string(pid_t pid, const struct ruby_offsets *off, uint64_t str, char *buf, size_t len)
{
	uint64_t hdr[5]; /* flags, klass, then len/ptr or embedded bytes */
	uint64_t n, ptr;
	int err;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	err = read_object(pid, str, RUBY_T_STRING, hdr);
	if (err)
		return err;

	if (hdr[0] & RSTRING_NOEMBED) {
		n = hdr[2];
		ptr = hdr[3];
	} else if (off->rstring == RSTRING_LEN_IN_FLAGS) {
		n = (hdr[0] >> 14) & 0x1f;
		ptr = str + 16;
	} else {
		n = hdr[2];
		ptr = str + 24;
	}
	if (n > RVALUE_STR_MAX)
		n = RVALUE_STR_MAX;
	if (n >= len)
		n = len - 1;
	if (n) {
		err = procmem_read(pid, ptr, buf, n);
		if (err)
			return err;
	}
	buf[n] = '\0';
	return 0;
}

int rvalue_array_entry(pid_t pid, uint64_t ary, uint64_t i, uint64_t *out)
{
	uint64_t hdr[5]; /* flags, klass, len | embedded[0..], aux, ptr */
	int err;

	err = read_object(pid, ary, RUBY_T_ARRAY, hdr);
	if (err)
		return err;
	if (hdr[0] & RARRAY_EMBED_FLAG) {
		/* Embedded length bits moved between versions; a small index is all we need here. */
		if (i >= 8)
			return -ERANGE;
		return procmem_u64(pid, ary + 16 + i * 8, out);
	}
	if (i >= hdr[2])
		return -ERANGE;
	return procmem_u64(pid, hdr[4] + i * 8, out);
}

int rvalue_id_name(pid_t pid, const struct ruby_offsets *off, uint64_t symbols, uint64_t id,
		   char *buf, size_t len)
{
	uint64_t serial, ids, chunk, str;
	int err;

	buf[0] = '\0';
	if (!symbols || !id)
		return -ENOENT;
	serial = id > off->last_op_id ? id >> ID_SCOPE_SHIFT : id;
	err = procmem_u64(pid, symbols + off->symbols_ids, &ids);
	if (err)
		return err;
	err = rvalue_array_entry(pid, ids, serial / ID_ENTRY_UNIT, &chunk);
	if (err)
		return err == -ERANGE ? -ENOENT : err;
	err = rvalue_array_entry(pid, chunk, (serial % ID_ENTRY_UNIT) * ID_ENTRY_SIZE, &str);
	if (err)
		return err == -ERANGE ? -ENOENT : err;
	return rvalue_string(pid, off, str, buf, len);
}

int rvalue_check_symbols(pid_t pid, const struct ruby_offsets *off, uint64_t symbols)
{
	uint32_t last_id;
	uint64_t ids, chunk, flags;

	if (procmem_u32(pid, symbols, &last_id) || last_id == 0 || last_id > (1u << 26))
		return -EINVAL;
	if (procmem_u64(pid, symbols + off->symbols_ids, &ids) || rvalue_flags(pid, ids, &flags))
		return -EINVAL;
	if ((flags & RUBY_T_MASK) != RUBY_T_ARRAY)
		return -EINVAL;
	if (rvalue_array_entry(pid, ids, 0, &chunk) || rvalue_flags(pid, chunk, &flags))
		return -EINVAL;
	return (flags & RUBY_T_MASK) == RUBY_T_ARRAY ? 0 : -EINVAL;
}

/* A static Symbol immediate: (ID << RUBY_SPECIAL_SHIFT) | SYMBOL_FLAG */
#define SYMBOL_FLAG   0x0c
#define SPECIAL_SHIFT 8

int rvalue_find_id(pid_t pid, const struct ruby_offsets *off, uint64_t symbols, const char *name,
		   uint64_t max_serial, uint64_t *id)
{
	uint64_t ids, chunk, hdr[5], pair[2], serial, entries = 0;
	char buf[64];
	size_t want = strlen(name);
	int err;

	if (!symbols || want >= sizeof(buf))
		return -ENOENT;
	err = procmem_u64(pid, symbols + off->symbols_ids, &ids);
	if (err)
		return err;
	for (serial = 1; serial < max_serial; serial++) {
		if (serial % ID_ENTRY_UNIT == 0 || serial == 1) {
			/* a chunk is a heap RArray: its elements are at hdr[4] */
			err = rvalue_array_entry(pid, ids, serial / ID_ENTRY_UNIT, &chunk);
			if (err)
				return err == -ERANGE ? -ENOENT : err;
			err = read_object(pid, chunk, RUBY_T_ARRAY, hdr);
			if (err)
				return err == -EINVAL ? -ENOENT : err;
			if (hdr[0] & RARRAY_EMBED_FLAG)
				return -ENOENT;
			entries = hdr[4];
		}
		if (procmem_read(pid, entries + (serial % ID_ENTRY_UNIT) * ID_ENTRY_SIZE * 8, pair,
				 sizeof(pair)))
			continue;
		if (rvalue_string(pid, off, pair[0], buf, sizeof(buf)) || strcmp(buf, name) != 0)
			continue;
		if ((pair[1] & 0xff) != SYMBOL_FLAG)
			return -ENOENT; /* a dynamic symbol: not one of the VM's own names */
		*id = pair[1] >> SPECIAL_SHIFT;
		return 0;
	}
	return -ENOENT;
}

int rvalue_st_lookup(pid_t pid, uint64_t table, uint64_t key, uint64_t *val)
{
	/* st_table: ..., entries_start +32, entries_bound +40, entries +48 */
	uint64_t hdr[7], e[3];
	uint64_t i;
	int err;

	err = procmem_read(pid, table, hdr, sizeof(hdr));
	if (err)
		return err;
	if (hdr[5] < hdr[4] || hdr[5] - hdr[4] > 256)
		return -ENOENT;
	for (i = hdr[4]; i < hdr[5]; i++) {
		/* st_table_entry { hash, key, record } */
		if (procmem_read(pid, hdr[6] + i * sizeof(e), e, sizeof(e)))
			return -EFAULT;
		if (e[1] == key) {
			*val = e[2];
			return 0;
		}
	}
	return -ENOENT;
}
