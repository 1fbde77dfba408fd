// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ruby's line-number table: the succinct index lookup against tables built in Ruby's format
 * (iseq.c succ_index_table_create) from known instruction positions. The rank of a position is
 * the number of table positions at or before it, which is what get_insn_info uses (rank - 1 is
 * the insn_info entry).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../fuzz/succbuild.h"
#include "ruby/symbolizer.h"

/* Builds a table the way Ruby does, for sorted positions data[0..size). */
static void build(struct succ_table *t, const int *data, int size)
{
	unsigned int nbits = (unsigned int)data[size - 1] + 1;
	uint8_t *bitmap = calloc(nbits / 8 + 1, 1);
	int i;

	cr_assert_not_null(bitmap);
	for (i = 0; i < size; i++)
		bitmap[data[i] / 8] |= 1u << (data[i] % 8);
	cr_assert_eq(succ_build(t, bitmap, nbits), 0);
	free(bitmap);
}

static unsigned int expected_rank(const int *data, int size, int pos)
{
	unsigned int n = 0;
	int i;

	for (i = 0; i < size; i++)
		n += data[i] <= pos;
	return n;
}

static void check_all(const int *data, int size)
{
	struct succ_table t;
	int pos;

	build(&t, data, size);
	for (pos = 0; pos <= data[size - 1]; pos++)
		cr_assert_eq(symbolizer_succ_index_lookup(t.imm, succ_block(&t, (unsigned int)pos),
							  (unsigned int)pos),
			     expected_rank(data, size, pos), "pos %d", pos);
	free(t.blocks);
}

Test(succ_index, small_table_in_immediate_part)
{
	static const int data[] = {0, 3, 4, 10, 17, 30, 52};

	check_all(data, sizeof(data) / sizeof(data[0]));
}

Test(succ_index, boundary_of_immediate_part)
{
	static const int data[] = {0, 53, 54, 55};

	check_all(data, sizeof(data) / sizeof(data[0]));
}

Test(succ_index, several_dictionary_blocks)
{
	int data[700], n = 0, pos;

	/* an uneven spread over 3 blocks, dense and sparse parts */
	for (pos = 0; pos < 2000 && n < 700; pos += (pos % 7 == 0) ? 1 : 5)
		data[n++] = pos;
	check_all(data, n);
}

Test(succ_index, every_position)
{
	int data[1200], i;

	for (i = 0; i < 1200; i++)
		data[i] = i;
	check_all(data, 1200);
}

/*
 * The symbolizer against Ruby objects laid out in this process's own memory (procmem reads
 * /proc/self through process_vm_readv): a block whose method is not cached yet, with the iseq
 * cache at its bound. The reset must wait for the next call: the block's entry is still in use
 * while its method is loaded (run under SANITIZE=address to see the use-after-free it was).
 */
#include <unistd.h>

#include "ruby/rvalue.h"

#define OBJ_WORDS 16

static _Alignas(64) uint64_t heap[16][OBJ_WORDS];
static unsigned int heap_used;

static uint64_t *obj(void)
{
	cr_assert_lt(heap_used, sizeof(heap) / sizeof(heap[0]));
	return heap[heap_used++];
}

static uint64_t addr(const uint64_t *o)
{
	return (uint64_t)(uintptr_t)o;
}

/* An embedded String as Ruby <= 3.1 lays it out: length in the flags, bytes at +16. */
static uint64_t rstring(const char *s)
{
	uint64_t *o = obj();
	size_t n = strlen(s);

	cr_assert_lt(n, 32);
	o[0] = RUBY_T_STRING | (uint64_t)n << 14;
	memcpy(&o[2], s, n);
	return addr(o);
}

static const struct ruby_offsets fake_off = {
	.iseq_body = 8,
	.body_type = 0,
	.body_location = 16,
	.loc_pathobj = 0,
	.loc_label = 16,
	.first_lineno_is_fixnum = true,
	.body_insns_info = 48,
	.body_parent_iseq = 80,
	.body_local_iseq = 88,
	.me_def = 16,
	.me_owner = 24,
	.class_names = CLASS_NAMES_FIELD,
	.class_classpath = 40,
	.class_permanent = 32,
	.fl_singleton = 1ULL << 12,
	.rstring = RSTRING_LEN_IN_FLAGS,
};

static uint64_t iseq(enum iseq_type type, const char *label, uint64_t parent, uint64_t local)
{
	uint64_t *o = obj(), *body = obj();

	o[0] = RUBY_T_IMEMO | (uint64_t)RUBY_IMEMO_ISEQ << 12;
	o[1] = addr(body);
	body[0] = type;			  /* type, iseq_size 0 */
	body[2] = rstring("/app/foo.rb"); /* location: pathobj, base_label, label, first_lineno */
	body[4] = rstring(label);
	body[5] = 3 << 1 | 1;
	body[10] = parent;
	body[11] = local ? local : addr(o);
	return addr(o);
}

Test(symbolizer, cache_reset_waits_for_the_next_call)
{
	uint64_t *klass = obj(), *me = obj(), *def = obj(), *env = obj();
	uint64_t method, block;
	struct symbolizer_stats stats;
	struct symbolizer *sym;
	struct sym_iseq si;

	heap_used = 4;
	method = iseq(ISEQ_TYPE_METHOD, "foo", 0, 0);
	block = iseq(ISEQ_TYPE_BLOCK, "block in foo", method, method);
	klass[0] = RUBY_T_CLASS;
	klass[4] = 1; /* permanent */
	klass[5] = rstring("Foo");
	me[0] = RUBY_T_IMEMO | (uint64_t)RUBY_IMEMO_MENT << 12;
	me[2] = addr(def);
	me[3] = addr(klass);
	def[0] = 0; /* VM_METHOD_TYPE_ISEQ */
	def[1] = method;
	env[0] = addr(me); /* ep[-2]: the method entry, ep[0]: VM_ENV_FLAG_LOCAL */
	env[2] = 0x2;

	sym = symbolizer__new(getpid(), &fake_off, 0, NULL, 0);
	cr_assert_not_null(sym);
	symbolizer_set_limits(sym, 1, 0, 0);

	cr_assert_eq(symbolizer_iseq(sym, block, 0, 0, addr(&env[2]), &si), 0);
	cr_assert_str_eq(si.label, "block in Foo#foo");
	cr_assert_str_eq(si.path, "/app/foo.rb");
	cr_assert_eq(si.first_lineno, 3);
	cr_assert(si.label_final);
	symbolizer_stats(sym, &stats);
	cr_assert_eq(stats.cache_resets, 0, "the caches were dropped inside a lookup");
	cr_assert_eq(symbolizer_generation(sym), 0);

	/* two iseqs cached, the bound is 1: this call starts with a reset, then names it again */
	cr_assert_eq(symbolizer_iseq(sym, block, 0, 0, addr(&env[2]), &si), 0);
	cr_assert_str_eq(si.label, "block in Foo#foo");
	symbolizer_stats(sym, &stats);
	cr_assert_eq(stats.cache_resets, 1);
	cr_assert_eq(symbolizer_generation(sym), 1);
	symbolizer__free(sym);
}

/* Ruby 4.0's <internal:...> rule on one stack (leaf first); "R" Ruby, "C" C, "I" internal, "-"
 * hidden. Returns the kinds left, dropped frames as "-". */
static void collapse(const char *in, char *out)
{
	uint8_t kinds[32];
	size_t i, n = strlen(in);

	for (i = 0; i < n; i++)
		kinds[i] = in[i] == 'R'	  ? SYM_FRAME_RUBY
			   : in[i] == 'C' ? SYM_FRAME_C
			   : in[i] == 'I' ? SYM_FRAME_INTERNAL
					  : SYM_FRAME_NONE;
	symbolizer_collapse_internal(kinds, n);
	for (i = 0; i < n; i++)
		out[i] = "-RCI"[kinds[i]];
	out[n] = '\0';
}

Test(symbolizer, internal_frames_collapse_as_ruby_4_0_does)
{
	static const char *const cases[][2] = {
		/* 3.times { spin }: block, Integer#times (internal), <main>: all shown */
		{"RIR", "RIR"},
		/* a C function the internal code called, under a block: dropped */
		{"RCIR", "R-IR"},
		/* a block of the internal method, and the method: one frame stands for both */
		{"CIIR", "--IR"},
		/* hidden frames do not end the run */
		{"C-IR", "--IR"},
		/* C functions with a Ruby frame between them and the internal frame stay */
		{"CRIR", "CRIR"},
		/* a lone internal leaf, C functions below a Ruby frame */
		{"IRCR", "IRCR"},
		{"ICCIR", "---IR"},
	};
	char got[32];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		collapse(cases[i][0], got);
		cr_assert_str_eq(got, cases[i][1], "%s: %s, want %s", cases[i][0], got,
				 cases[i][1]);
	}
}
