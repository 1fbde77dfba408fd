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

#include "symbolize.h"

struct table {
	uint64_t imm[SUCC_IMM_WORDS];
	uint8_t *blocks; /* SUCC_BLOCK_SIZE each */
	int nblocks;
};

/* Builds a table the way Ruby does, for sorted positions data[0..size). */
static void build(struct table *t, const int *data, int size)
{
	int max_pos = data[size - 1], imm_size, i, j, k, r = 0;

	memset(t, 0, sizeof(*t));
	imm_size = (max_pos < SUCC_IMM_SIZE ? max_pos + 8 : SUCC_IMM_SIZE) / 9;
	t->nblocks = max_pos < SUCC_IMM_SIZE ? 0 : (max_pos - SUCC_IMM_SIZE) / 512 + 1;
	t->blocks = calloc(t->nblocks ? t->nblocks : 1, SUCC_BLOCK_SIZE);
	cr_assert_not_null(t->blocks);
	for (j = 0; j < imm_size; j++) {
		for (i = 0; i < 9; i++) {
			if (r < size && data[r] == j * 9 + i)
				r++;
			t->imm[j] |= (uint64_t)r << (7 * i);
		}
	}
	for (k = 0; k < t->nblocks; k++) {
		uint8_t *b = t->blocks + k * SUCC_BLOCK_SIZE;
		uint32_t rank = (uint32_t)r;
		uint64_t small_ranks = 0, bits;
		int small_rank = 0;

		memcpy(b, &rank, sizeof(rank));
		for (j = 0; j < 8; j++) {
			bits = 0;
			if (j)
				small_ranks |= (uint64_t)small_rank << (9 * (j - 1));
			for (i = 0; i < 64; i++) {
				if (r < size && data[r] == k * 512 + j * 64 + i + SUCC_IMM_SIZE) {
					bits |= 1ULL << i;
					r++;
				}
			}
			memcpy(b + 16 + j * 8, &bits, sizeof(bits));
			small_rank += __builtin_popcountll(bits);
		}
		memcpy(b + 8, &small_ranks, sizeof(small_ranks));
	}
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
	struct table t;
	int pos;
	const uint8_t *block;

	build(&t, data, size);
	for (pos = 0; pos <= data[size - 1]; pos++) {
		block = pos >= SUCC_IMM_SIZE
				? t.blocks + ((pos - SUCC_IMM_SIZE) / SUCC_BLOCK_BITS) *
						     SUCC_BLOCK_SIZE
				: NULL;
		cr_assert_eq(succ_index_lookup(t.imm, block, (unsigned int)pos),
			     expected_rank(data, size, pos), "pos %d", pos);
	}
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
