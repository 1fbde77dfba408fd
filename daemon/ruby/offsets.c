// SPDX-License-Identifier: GPL-2.0-only
/*
 * offsets.c - Ruby VM offsets for x86_64, one row per minor version.
 *
 * Sources: Ruby's own headers (vm_core.h, iseq.h, method.h, internal/string.h, id.def) at each
 * release, cross-checked with ../shared/reference/ruby-struct-offsets-x86_64.txt and, where noted
 * in docs/internals/ruby-internals.md, with Debian's binaries. Fields that are the
 * same in every release are in RP_COMMON; each row then states what differs. Rows are candidates:
 * the daemon validates them on the live process (discover.c) before any sample is taken.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ruby/offsets.h"

/* Fields at the same place from 2.6 to 4.0. */
#define RP_COMMON                                                                                  \
	.iseq_body = 16, .body_type = 0, .body_iseq_size = 4, .body_iseq_encoded = 8,              \
	.body_location = 64, .loc_pathobj = 0, .loc_base_label = 8, .loc_label = 16,               \
	.loc_first_lineno = 24, .me_def = 16, .me_owner = 32, .def_original_id = 32,               \
	.symbols_ids = 16, .th_self = 16

#define RP_VM(th_ptr, cfp_sz, jit, th_id, nt_id)                                                   \
	.vm = {                                                                                    \
		.ec_vm_stack = 0,                                                                  \
		.ec_vm_stack_size = 8,                                                             \
		.ec_cfp = 16,                                                                      \
		.ec_thread_ptr = (th_ptr),                                                         \
		.cfp_size = (cfp_sz),                                                              \
		.cfp_pc = 0,                                                                       \
		.cfp_iseq = 16,                                                                    \
		.cfp_ep = 32,                                                                      \
		.cfp_self = 24,                                                                    \
		.cfp_jit_return = (jit),                                                           \
		.th_thread_id = (th_id),                                                           \
		.nt_thread_id = (nt_id),                                                           \
	}

/* insns_info moved by 8 bytes in 3.2; local/parent iseq moved again in 4.0. */
#define RP_INSNS(base, entry_size, parent, local)                                                  \
	.body_insns_info = (base), .body_insns_size = (base) + 16, .body_insns_succ = (base) + 24, \
	.insn_info_entry_size = (entry_size), .body_parent_iseq = (parent),                        \
	.body_local_iseq = (local)

/* 2.6 - 3.1: a class's name is in its ivar table (classext + 24, iv_tbl + 8). */
#define RP_CLASS_IVTBL .class_names = CLASS_NAMES_IVTBL, .class_ext = 24, .ext_iv_tbl = 8

/* 3.3 on: the name is RClass's classpath field; 4.0 moved the attached object. */
#define RP_CLASS_FIELD(attached)                                                                   \
	.class_names = CLASS_NAMES_FIELD, .class_classpath = 152, .class_permanent = 149,          \
	.class_attached = (attached)

/* Until 3.1: the thread id in the thread, first_lineno a Fixnum, an embedded RString's length
 * in its flags. */
#define RP_UNTIL_3_1                                                                               \
	.thread_id_path = THREAD_ID_DIRECT, .first_lineno_is_fixnum = true,                        \
	.rstring = RSTRING_LEN_IN_FLAGS

/* 3.2 on: the thread id in the native thread (th->nt), RString's length a field. */
#define RP_SINCE_3_2 .thread_id_path = THREAD_ID_VIA_NT, .th_nt = 40, .rstring = RSTRING_LEN_FIELD

static const struct ruby_offsets rows[] = {
	{
		.first = "2.6.0",
		.last = "2.6.10",
		.ec_is_global = true,
		RP_CLASS_IVTBL,
		.fl_singleton = 0x1000,
		RP_COMMON,
		RP_VM(56, 56, 0, 72, 0),
		RP_INSNS(120, 8, 168, 176),
		RP_UNTIL_3_1,
		.last_op_id = 164,
	},
	{
		.first = "2.7.0",
		.last = "2.7.8",
		.ec_is_global = true,
		RP_CLASS_IVTBL,
		.fl_singleton = 0x1000,
		RP_COMMON,
		RP_VM(56, 56, 0, 72, 0),
		RP_INSNS(120, 8, 168, 176),
		.th_name = 360,
		RP_UNTIL_3_1,
		.last_op_id = 168,
	},
	{
		.first = "3.0.0",
		.last = "3.0.7",
		.ractor_running_ec = 520,
		RP_CLASS_IVTBL,
		.fl_singleton = 0x1000,
		RP_COMMON,
		RP_VM(56, 56, 0, 80, 0),
		RP_INSNS(120, 8, 168, 176),
		RP_UNTIL_3_1,
		.last_op_id = 168,
	},
	{
		.first = "3.1.0",
		.last = "3.1.7",
		.verified = true,
		.ractor_running_ec = 520,
		RP_CLASS_IVTBL,
		.fl_singleton = 0x1000,
		RP_COMMON,
		RP_VM(48, 64, 56, 80, 0),
		RP_INSNS(120, 12, 168, 176),
		.th_name = 352,
		RP_UNTIL_3_1,
		.last_op_id = 169,
	},
	{
		.first = "3.2.0",
		.last = "3.2.11",
		.ractor_running_ec = 520,
		/* v3_2_0 internal/class.h (sizeof(struct RClass) 32, iv_ptr first in the embedded
		 * classext) and vm_core.h (rb_vm_t: special_exceptions[5] end at 376) */
		.class_names = CLASS_NAMES_SHAPES,
		.class_iv_ptr = 32,
		.vm_shape_list = 376,
		.fl_singleton = 0x1000,
		RP_COMMON,
		RP_VM(48, 64, 56, 40, 8),
		RP_INSNS(112, 12, 160, 168),
		RP_SINCE_3_2,
		.last_op_id = 169,
	},
	{
		.first = "3.3.0",
		.last = "3.3.12",
		RP_CLASS_FIELD(128),
		.fl_singleton = 0x1000,
		.ractor_running_ec = 384,
		RP_COMMON,
		RP_VM(48, 56, 48, 40, 16),
		RP_INSNS(112, 12, 160, 168),
		.th_name = 432,
		RP_SINCE_3_2,
		.last_op_id = 169,
	},
	{
		.first = "3.4.0",
		.last = "3.4.11",
		.qualified_labels = true,
		RP_CLASS_FIELD(128),
		.fl_singleton = 0x2000,
		.ractor_running_ec = 384,
		RP_COMMON,
		RP_VM(48, 56, 48, 40, 16),
		RP_INSNS(112, 12, 160, 168),
		.th_name = 448,
		RP_SINCE_3_2,
		.last_op_id = 170,
	},
	{
		.first = "4.0.0",
		.last = "4.0.1",
		.qualified_labels = true,
		.internal_as_c = true,
		RP_CLASS_FIELD(136),
		.fl_singleton = 0x2000,
		/* v4.0.0 and v4.0.1 ractor_core.h (unchanged on the branch to 2026-03) */
		.ractor_running_ec = 312,
		RP_COMMON,
		RP_VM(48, 56, 48, 40, 16),
		RP_INSNS(112, 12, 168, 176),
		RP_SINCE_3_2,
		.last_op_id = 171,
	},
	{
		.first = "4.0.6",
		.last = "4.0.6",
		.qualified_labels = true,
		.internal_as_c = true,
		RP_CLASS_FIELD(136),
		.fl_singleton = 0x2000,
		/* the reference table's 4.0.6: a field before threads grew by 8 (4.0.2 - 4.0.5
		 * unknown: they get the nearest earlier row, flagged inexact) */
		.ractor_running_ec = 320,
		RP_COMMON,
		RP_VM(48, 56, 48, 40, 16),
		RP_INSNS(112, 12, 168, 176),
		RP_SINCE_3_2,
		.last_op_id = 171,
	},
};

int offsets_parse_version(const char *s, int *major, int *minor, int *teeny)
{
	char tail;

	if (!s || sscanf(s, "%d.%d.%d%c", major, minor, teeny, &tail) != 3)
		return -EINVAL;
	if (*major < 0 || *minor < 0 || *teeny < 0)
		return -EINVAL;
	return 0;
}

static int version_cmp(int a1, int b1, int c1, int a2, int b2, int c2)
{
	if (a1 != a2)
		return a1 < a2 ? -1 : 1;
	if (b1 != b2)
		return b1 < b2 ? -1 : 1;
	if (c1 != c2)
		return c1 < c2 ? -1 : 1;
	return 0;
}

/*
 * A minor version can have several rows (a field moved in a patch release: 4.0's running_ec).
 * The row whose range holds the version is exact; otherwise the last row of that minor starting
 * at or before it (its nearest known neighbour), or the minor's first row, flagged inexact.
 */
const struct ruby_offsets *offsets_find(const char *version, bool *exact)
{
	int ma, mi, te, fa, fi, ft, la, li, lt;
	const struct ruby_offsets *near = NULL;
	size_t i;

	*exact = false;
	if (offsets_parse_version(version, &ma, &mi, &te))
		return NULL;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (offsets_parse_version(rows[i].first, &fa, &fi, &ft) ||
		    offsets_parse_version(rows[i].last, &la, &li, &lt))
			continue;
		if (ma != fa || mi != fi)
			continue;
		if (version_cmp(ma, mi, te, fa, fi, ft) >= 0 &&
		    version_cmp(ma, mi, te, la, li, lt) <= 0) {
			*exact = true;
			return &rows[i];
		}
		if (!near || version_cmp(ma, mi, te, fa, fi, ft) >= 0)
			near = &rows[i];
	}
	return near;
}

const struct ruby_offsets *offsets_all(unsigned int *n)
{
	*n = sizeof(rows) / sizeof(rows[0]);
	return rows;
}
