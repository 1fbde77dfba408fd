// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the readers of Ruby objects in another process's memory (daemon/ruby/rvalue.c, the
 * symbolizer of daemon/ruby/symbolizer.c) on a fake address space (tests/fuzz/fakemem.h, behind the
 * procmem_read seam): a profiled process controls every byte they read. The input picks a row of
 * daemon/ruby/offsets.c, holds the roots (a String, an Array, the symbol table, an iseq, a pc, an ep,
 * a method entry, an st_table) and the regions they point into; each root is also taken for an
 * rb_thread_t (daemon/ruby/rthreads.c). Every reader must return, within a bounded number of reads,
 * whatever the bytes: past FAKEMEM_MAX_READS the target aborts.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fakemem.h"
#include "fuzz_common.h"
#include "ruby/rthreads.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ruby_offsets *rows, *off;
	uint64_t roots[FAKEMEM_NROOTS], v, id = 0;
	unsigned int nrows, row, flags, i;
	struct symbolizer *sym;
	struct sym_iseq si;
	const char *name;
	char buf[RVALUE_STR_MAX + 1], small[8];
	struct rthread_stats rstats = {0};
	const struct rthread_label *lab;
	struct rthreads *rth;

	if (fakemem_load(data, size, &row, &flags, roots))
		return 0;
	fakemem.max_reads = FAKEMEM_MAX_READS;
	rows = offsets_all(&nrows);
	off = &rows[row % nrows];

	(void)rvalue_string(FAKEMEM_PID, off, roots[FAKEMEM_STR], buf, sizeof(buf));
	(void)rvalue_string(FAKEMEM_PID, off, roots[FAKEMEM_STR], small, sizeof(small));
	for (i = 0; i < 4; i++)
		(void)rvalue_array_entry(FAKEMEM_PID, roots[FAKEMEM_ARY], i, &v);
	(void)rvalue_array_entry(FAKEMEM_PID, roots[FAKEMEM_ARY], UINT64_MAX / 8, &v);
	fakemem_check_bounded("fuzz_mem", "rvalue_string/array_entry");
	(void)rvalue_check_symbols(FAKEMEM_PID, off, roots[FAKEMEM_SYMBOLS]);
	(void)rvalue_find_id(FAKEMEM_PID, off, roots[FAKEMEM_SYMBOLS], "__classpath__", 8192, &id);
	fakemem_check_bounded("fuzz_mem", "rvalue_find_id");
	(void)rvalue_id_name(FAKEMEM_PID, off, roots[FAKEMEM_SYMBOLS], id, buf, sizeof(buf));
	(void)rvalue_id_name(FAKEMEM_PID, off, roots[FAKEMEM_SYMBOLS], roots[FAKEMEM_PC], buf,
			     sizeof(buf));
	(void)rvalue_st_lookup(FAKEMEM_PID, roots[FAKEMEM_TABLE], id, &v);
	fakemem_check_bounded("fuzz_mem", "rvalue_id_name/st_lookup");

	/* every root as an rb_thread_t, read twice (cached) and in a second interval */
	rth = rthreads__new(FAKEMEM_PID, off, &rstats);
	if (!rth)
		return 0;
	for (i = 0; i < 2 * FAKEMEM_NROOTS; i++) {
		if (i == FAKEMEM_NROOTS)
			rthreads_new_epoch(rth);
		if (rthreads_get(rth, roots[i % FAKEMEM_NROOTS], &lab) == 0 &&
		    strlen(lab->name) >= sizeof(lab->name))
			abort();
	}
	rthreads__free(rth);
	fakemem_check_bounded("fuzz_mem", "rthreads_get");

	sym = symbolizer__new(FAKEMEM_PID, off, roots[FAKEMEM_SYMBOLS], &roots[FAKEMEM_SYMBOLS], 1);
	if (!sym)
		return 0;
	if (flags & FAKEMEM_F_SMALL)
		symbolizer_set_limits(sym, 1, 1, 1);
	/* twice: the second call takes the cached paths (or a reset with small bounds) */
	for (i = 0; i < 2; i++) {
		(void)symbolizer_iseq(sym, roots[FAKEMEM_ISEQ], roots[FAKEMEM_PC],
				      flags & FAKEMEM_F_JIT, roots[FAKEMEM_EP], &si);
		fakemem_check_bounded("fuzz_mem", "symbolizer_iseq");
		(void)symbolizer_cfunc(sym, roots[FAKEMEM_ME], &name);
		fakemem_check_bounded("fuzz_mem", "symbolizer_cfunc");
	}
	/* the other roots as iseqs and method entries: any pointer may be one */
	symbolizer_method_entry(sym, roots[FAKEMEM_ISEQ], roots[FAKEMEM_ME]);
	(void)symbolizer_iseq(sym, roots[FAKEMEM_ISEQ], roots[FAKEMEM_PC], 0, 0, &si);
	fakemem_check_bounded("fuzz_mem", "symbolizer_method_entry");
	(void)symbolizer_iseq(sym, roots[FAKEMEM_ME], roots[FAKEMEM_PC], 0, roots[FAKEMEM_EP], &si);
	(void)symbolizer_cfunc(sym, roots[FAKEMEM_ISEQ], &name);
	fakemem_check_bounded("fuzz_mem", "symbolizer_iseq/cfunc on other roots");
	symbolizer__free(sym);
	return 0;
}
