// SPDX-License-Identifier: GPL-2.0-only
/*
 * The Ruby object readers (daemon/ruby/rvalue.c, daemon/ruby/symbolizer.c) on a fake address space served
 * through the procmem_read seam (tests/fuzz/fakemem.h): for every row of daemon/ruby/offsets.c, the
 * objects laid out with that row are read back and named as Ruby names them; then shapes of
 * garbage that made a reader crash or loop. The fake is laid out from the row it is read with:
 * on the rows of versions that no end-to-end test runs on a real Ruby (2.6, 3.0, 3.2, 4.0) the
 * tests are self-consistency only, and say so in their names and messages (offsets_row.h).
 */
#include <criterion/criterion.h>
#include <unistd.h>

#include "../../fuzz/fakemem.h"
#include "../offsets_row.h"

static struct fakemem_image img;

static void build(unsigned int row)
{
	cr_assert_eq(fakemem_build(&img, row), 0, "row %u does not fit", row);
	fakemem_map_image(&img);
}

Test(fakemem, real_pids_still_read_real_memory)
{
	uint64_t word = 0x1122334455667788ULL, got = 0;

	fakemem_reset();
	cr_assert_eq(procmem_u64(getpid(), (uint64_t)(uintptr_t)&word, &got), 0);
	cr_assert_eq(got, word);
	cr_assert_eq(procmem_u64(FAKEMEM_PID, (uint64_t)(uintptr_t)&word, &got), -EFAULT);
}

static void strings_arrays_and_ids(bool tested)
{
	const struct ruby_offsets *o;
	unsigned int row, n = 0;
	char buf[128], small[6];
	uint64_t v, id;

	for (row = 0; (o = offsets_row_next(tested, &row)); row++) {
		n++;
		build(row);
		cr_assert_eq(rvalue_string(FAKEMEM_PID, img.off, img.roots[FAKEMEM_STR], buf,
					   sizeof(buf)),
			     0, "%s", offsets_row_what(o));
		cr_assert_str_eq(buf, "a String longer than any embedded one");
		cr_assert_eq(rvalue_string(FAKEMEM_PID, img.off, img.roots[FAKEMEM_STR], small,
					   sizeof(small)),
			     0);
		cr_assert_str_eq(small, "a Str");
		cr_assert_eq(rvalue_array_entry(FAKEMEM_PID, img.roots[FAKEMEM_ARY], 2, &v), 0);
		cr_assert_eq(rvalue_array_entry(FAKEMEM_PID, img.roots[FAKEMEM_ARY], 3, &v),
			     -ERANGE);
		cr_assert_eq(rvalue_check_symbols(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS]),
			     0, "%s", offsets_row_what(o));
		cr_assert_eq(rvalue_find_id(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS],
					    "__attached__", 8192, &id),
			     0, "%s", offsets_row_what(o));
		cr_assert_eq(id, FM_SERIAL_ATTACHED);
		cr_assert_eq(rvalue_id_name(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS],
					    FM_SERIAL_TIMES << 4, buf, sizeof(buf)),
			     0);
		cr_assert_str_eq(buf, "times", "%s: \"%s\"", offsets_row_what(o), buf);
	}
	cr_assert_gt(n, 0);
}

Test(fakemem, strings_arrays_and_ids_of_the_tested_versions)
{
	strings_arrays_and_ids(true);
}

/* 2.6, 3.0, 3.2, 4.0: the fake is laid out from the row it is read with (offsets_row.h) */
Test(fakemem, strings_arrays_and_ids_of_the_others_self_consistency_only)
{
	strings_arrays_and_ids(false);
}

static void frames_named_with_owner_and_line(bool tested)
{
	const struct ruby_offsets *o;
	unsigned int row, n = 0;
	struct symbolizer *sym;
	struct sym_iseq si;
	const char *name;
	int named;

	for (row = 0; (o = offsets_row_next(tested, &row)); row++) {
		n++;
		build(row);
		named = o->class_names != CLASS_NAMES_NONE;
		sym = symbolizer__new(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS], NULL, 0);
		cr_assert_not_null(sym);
		symbolizer_set_vm(sym, img.vm_ptr);
		cr_assert_eq(symbolizer_iseq(sym, img.roots[FAKEMEM_ISEQ], img.roots[FAKEMEM_PC], 0,
					     img.roots[FAKEMEM_EP], &si),
			     0, "%s", offsets_row_what(o));
		cr_assert_str_eq(si.label, named ? "block in Foo#foo" : "block in foo", "%s: %s",
				 offsets_row_what(o), si.label);
		cr_assert_str_eq(si.path, "/app/foo.rb");
		cr_assert_eq(si.first_lineno, 3);
		cr_assert_eq(si.line, 5, "%s: line %lld", offsets_row_what(o), (long long)si.line);
		cr_assert_eq(si.type, ISEQ_TYPE_BLOCK);
		cr_assert(si.label_final);
		cr_assert_eq(symbolizer_cfunc(sym, img.roots[FAKEMEM_ME], &name), 0, "%s",
			     offsets_row_what(o));
		cr_assert_str_eq(name, named ? "Foo.times" : "times", "%s: %s", offsets_row_what(o),
				 name);
		symbolizer__free(sym);
	}
	cr_assert_gt(n, 0);
}

Test(fakemem, frames_named_with_owner_and_line_in_the_tested_versions)
{
	frames_named_with_owner_and_line(true);
}

/* 2.6, 3.0, 3.2, 4.0: the fake is laid out from the row it is read with (offsets_row.h) */
Test(fakemem, frames_named_with_owner_and_line_in_the_others_self_consistency_only)
{
	frames_named_with_owner_and_line(false);
}

/* The body of an iseq of the built image. */
static uint64_t body_of(uint64_t iseq)
{
	uint64_t body = 0;

	cr_assert_eq(procmem_u64(FAKEMEM_PID, iseq + img.off->iseq_body, &body), 0);
	return body;
}

/*
 * Two blocks, each the other's parent and local iseq (torn memory, or a hostile process): Ruby
 * 3.4's label climbs from a block to its local iseq and, when that is a block again, labels it
 * the same way. That recursion had no bound: a stack overflow.
 */
Test(fakemem, blocks_local_to_each_other_end)
{
	uint64_t block;
	struct symbolizer *sym;
	struct sym_iseq si;

	build(offsets_row("3.4.0"));
	block = img.roots[FAKEMEM_ISEQ];
	fakemem_blocks_local_to_each_other(&img);
	fakemem.max_reads = FAKEMEM_MAX_READS;

	sym = symbolizer__new(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS], NULL, 0);
	cr_assert_not_null(sym);
	cr_assert_eq(
		symbolizer_iseq(sym, block, img.roots[FAKEMEM_PC], 0, img.roots[FAKEMEM_EP], &si),
		0);
	cr_assert_not(fakemem.over, "more than %d reads", FAKEMEM_MAX_READS);
	cr_assert_str_eq(si.label, "block in foo", "%s", si.label);
	cr_assert_not(si.label_final, "a label from torn memory was cached");
	symbolizer__free(sym);
}

/* Garbage shapes that must end within a bound of reads, named bare and left uncached. */
static void symbolize_bounded(uint64_t iseq, uint64_t ep, const char *label)
{
	struct symbolizer *sym;
	struct sym_iseq si;

	fakemem.reads = 0;
	fakemem.max_reads = FAKEMEM_MAX_READS;
	sym = symbolizer__new(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS], NULL, 0);
	cr_assert_not_null(sym);
	cr_assert_eq(symbolizer_iseq(sym, iseq, img.roots[FAKEMEM_PC], 0, ep, &si), 0);
	cr_assert_not(fakemem.over, "more than %d reads", FAKEMEM_MAX_READS);
	cr_assert_str_eq(si.label, label, "%s", si.label);
	cr_assert_not(si.label_final, "a label from torn memory was cached");
	symbolizer__free(sym);
}

/* A rescue clause that is its own parent (3.4 climbs parents to the code around it). */
Test(fakemem, rescue_its_own_parent_ends)
{
	uint64_t block = 0, rb;

	build(offsets_row("3.4.0"));
	block = img.roots[FAKEMEM_ISEQ];
	rb = body_of(block);
	fm_w32(&img, rb + img.off->body_type, ISEQ_TYPE_RESCUE);
	fm_w64(&img, rb + img.off->body_parent_iseq, block);
	symbolize_bounded(block, img.roots[FAKEMEM_EP], "block in foo");
}

/* An environment whose previous ep is itself, without the local flag: the method entry search
 * stops at its depth bound, and the owner stays unknown. */
Test(fakemem, cyclic_environment_ends)
{
	uint64_t ep;

	build(offsets_row("3.3.0"));
	ep = img.roots[FAKEMEM_EP];
	fm_w64(&img, ep - 16, 0); /* no method entry */
	fm_w64(&img, ep - 8, ep); /* specval: the previous ep, itself */
	fm_w64(&img, ep, 0);	  /* not local */
	symbolize_bounded(img.roots[FAKEMEM_ISEQ], ep, "block in foo");
}

/* A heap String claiming 2^63 bytes: cut at the buffer, never allocated or read in full. */
Test(fakemem, huge_string_length_is_cut)
{
	uint64_t str;
	char buf[16];

	build(offsets_row("3.3.0"));
	str = img.roots[FAKEMEM_STR];
	fm_w64(&img, str + 16, 1ULL << 63);
	cr_assert_eq(rvalue_string(FAKEMEM_PID, img.off, str, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "a String longer");
}

/*
 * A method frame's ep[-2] as the BPF program read it at the sample (RP_FRAME_FLAG_ME): with the
 * frame gone (no ep to read), its block is named bare and not final; once the method entry is
 * given, with its owner, on every version that names owners.
 */
static void owner_from_the_sampled_method_entry(bool tested)
{
	const struct ruby_offsets *o;
	unsigned int row, n = 0;
	uint64_t me = 0, def = 0, method = 0;
	struct symbolizer *sym;
	struct sym_iseq si;

	for (row = 0; (o = offsets_row_next(tested, &row)); row++) {
		n++;
		if (o->class_names == CLASS_NAMES_NONE)
			continue;
		build(row);
		cr_assert_eq(procmem_u64(FAKEMEM_PID, img.roots[FAKEMEM_EP] - 16, &me), 0);
		cr_assert_eq(procmem_u64(FAKEMEM_PID, me + img.off->me_def, &def), 0);
		cr_assert_eq(procmem_u64(FAKEMEM_PID, def + 8, &method), 0);
		sym = symbolizer__new(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS], NULL, 0);
		cr_assert_not_null(sym);
		symbolizer_set_vm(sym, img.vm_ptr);
		cr_assert_eq(symbolizer_iseq(sym, img.roots[FAKEMEM_ISEQ], img.roots[FAKEMEM_PC], 0,
					     0, &si),
			     0);
		cr_assert_str_eq(si.label, "block in foo", "%s: %s", offsets_row_what(o), si.label);
		cr_assert(!si.label_final, "%s: a bare label cached", offsets_row_what(o));
		/* another method's entry is not taken for foo's */
		symbolizer_method_entry(sym, img.roots[FAKEMEM_ISEQ], me);
		symbolizer_method_entry(sym, method, me);
		cr_assert_eq(symbolizer_iseq(sym, img.roots[FAKEMEM_ISEQ], img.roots[FAKEMEM_PC], 0,
					     0, &si),
			     0);
		cr_assert_str_eq(si.label, "block in Foo#foo", "%s: %s", offsets_row_what(o),
				 si.label);
		cr_assert(si.label_final);
		symbolizer__free(sym);
	}
	cr_assert_gt(n, 0);
}

Test(fakemem, owner_from_the_sampled_method_entry_in_the_tested_versions)
{
	owner_from_the_sampled_method_entry(true);
}

/* 2.6, 3.0, 3.2, 4.0: the fake is laid out from the row it is read with (offsets_row.h) */
Test(fakemem, owner_from_the_sampled_method_entry_in_the_others_self_consistency_only)
{
	owner_from_the_sampled_method_entry(false);
}

/* Renames the block's path (an embedded String of 3.2+) to <internal:kern>. */
static void make_block_internal(void)
{
	const struct ruby_offsets *off = img.off;
	uint64_t body = body_of(img.roots[FAKEMEM_ISEQ]), path = 0;
	static const char name[] = "<internal:kern>";

	cr_assert_eq(procmem_u64(FAKEMEM_PID, body + off->body_location + off->loc_pathobj, &path),
		     0);
	fm_w64(&img, path + 16, sizeof(name) - 1);
	memcpy(fm_ptr(&img, path + 24, sizeof(name) - 1), name, sizeof(name) - 1);
}

/*
 * Ruby 4.0 shows a frame of <internal:...> code as its method, a C method (a block in it too:
 * location_label takes the frame's method entry); 3.4 shows such a block as a block. On 4.0 the
 * fake is laid out from the 4.0 rows: self-consistency only.
 */
Test(fakemem, internal_frames_named_as_their_method_on_4_0_self_consistency_only)
{
	static const char *const versions[] = {"3.4.0", "4.0.0", "4.0.6"};
	struct symbolizer *sym;
	struct sym_iseq si;
	size_t i;
	int as_c;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		build(offsets_row(versions[i]));
		make_block_internal();
		as_c = img.off->internal_as_c;
		sym = symbolizer__new(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS], NULL, 0);
		cr_assert_not_null(sym);
		cr_assert_eq(symbolizer_iseq(sym, img.roots[FAKEMEM_ISEQ], img.roots[FAKEMEM_PC], 0,
					     img.roots[FAKEMEM_EP], &si),
			     0);
		cr_assert_str_eq(si.path, "<internal:kern>");
		cr_assert_eq(si.internal, as_c, "%s", offsets_row_what(img.off));
		cr_assert_str_eq(si.label, as_c ? "Foo#foo" : "block in Foo#foo", "%s: %s",
				 offsets_row_what(img.off), si.label);
		symbolizer__free(sym);
	}
}

/*
 * One method iseq under two owners (define_method with another's UnboundMethod, module_function):
 * each method frame is named with its own entry's owner, and the block's label, cached with the
 * first owner, is dropped (the generation tells callers) once the second owner shows up.
 */
Test(fakemem, one_iseq_two_owners)
{
	uint64_t me = 0, def = 0, method = 0, bar, me2, pc, gen;
	struct symbolizer *sym;
	struct sym_iseq si;

	build(offsets_row("3.4.0"));
	cr_assert_eq(procmem_u64(FAKEMEM_PID, img.roots[FAKEMEM_EP] - 16, &me), 0);
	cr_assert_eq(procmem_u64(FAKEMEM_PID, me + img.off->me_def, &def), 0);
	cr_assert_eq(procmem_u64(FAKEMEM_PID, def + 8, &method), 0);
	pc = fm_r64(&img, body_of(method) + img.off->body_iseq_encoded) + 4 * 8;
	/* Bar, and a second method entry: same definition, owner Bar */
	bar = fm_class(&img, RUBY_T_CLASS, FM_SERIAL_CLASSPATH, FM_SERIAL_CLASSPATH,
		       fm_string(&img, "Bar"));
	me2 = fm_alloc(&img, FM_OBJ, 40);
	fm_w64(&img, me2, RUBY_T_IMEMO | (uint64_t)RUBY_IMEMO_MENT << 12);
	fm_w64(&img, me2 + img.off->me_def, def);
	fm_w64(&img, me2 + img.off->me_owner, bar);
	cr_assert_not(img.overflow);
	fakemem_map_image(&img);

	sym = symbolizer__new(FAKEMEM_PID, img.off, img.roots[FAKEMEM_SYMBOLS], NULL, 0);
	cr_assert_not_null(sym);
	cr_assert_eq(symbolizer_method_frame(sym, method, pc, 0, me, &si), 0);
	cr_assert_str_eq(si.label, "Foo#foo");
	cr_assert_not(si.owner_varies);
	cr_assert_eq(symbolizer_iseq(sym, img.roots[FAKEMEM_ISEQ], img.roots[FAKEMEM_PC], 0,
				     img.roots[FAKEMEM_EP], &si),
		     0);
	cr_assert_str_eq(si.label, "block in Foo#foo");
	gen = symbolizer_generation(sym);
	cr_assert_eq(symbolizer_method_frame(sym, method, pc, 0, me2, &si), 0);
	cr_assert_str_eq(si.label, "Bar#foo");
	cr_assert(si.owner_varies && si.label_final);
	cr_assert_neq(symbolizer_generation(sym), gen, "cached labels may name Foo");
	cr_assert_eq(symbolizer_method_frame(sym, method, pc, 0, me, &si), 0);
	cr_assert_str_eq(si.label, "Foo#foo");
	/* the block, through its frame's entry (Foo's), not the last owner seen */
	cr_assert_eq(symbolizer_iseq(sym, img.roots[FAKEMEM_ISEQ], img.roots[FAKEMEM_PC], 0,
				     img.roots[FAKEMEM_EP], &si),
		     0);
	cr_assert_str_eq(si.label, "block in Foo#foo");
	cr_assert(si.owner_varies);
	/* its frame gone: not named with a guess */
	cr_assert_eq(
		symbolizer_iseq(sym, img.roots[FAKEMEM_ISEQ], img.roots[FAKEMEM_PC], 0, 0, &si), 0);
	cr_assert_not(si.label_final);
	symbolizer__free(sym);
}
