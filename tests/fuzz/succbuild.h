/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * succbuild.h - Ruby's succinct line table (iseq.c succ_index_table_create) built from a set of
 * instruction positions, for checking symbolizer_succ_index_lookup against a plain count: test_symbolizer
 * (known positions) and fuzz_succ (positions from the input).
 */
#ifndef RP_SUCCBUILD_H
#define RP_SUCCBUILD_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ruby/symbolizer.h"

struct succ_table {
	uint64_t imm[SUCC_IMM_WORDS];
	uint8_t *blocks; /* nblocks of SUCC_BLOCK_SIZE bytes (one at least is allocated) */
	unsigned int nblocks, max_pos;
};

static inline bool succ_bit(const uint8_t *bitmap, unsigned int nbits, unsigned int pos)
{
	return pos < nbits && (bitmap[pos / 8] & (1u << (pos % 8)));
}

/*
 * The table of the positions p < nbits whose bit is set in bitmap (bitmap[p / 8] >> p % 8),
 * laid out as Ruby lays it out. 0, -ENOENT (no bit set) or -ENOMEM; free t->blocks after.
 */
static inline int succ_build(struct succ_table *t, const uint8_t *bitmap, unsigned int nbits)
{
	unsigned int r = 0, i, j, k, pos;
	bool any = false;

	memset(t, 0, sizeof(*t));
	for (pos = 0; pos < nbits; pos++) {
		if (succ_bit(bitmap, nbits, pos)) {
			t->max_pos = pos;
			any = true;
		}
	}
	if (!any)
		return -ENOENT;
	t->nblocks =
		t->max_pos < SUCC_IMM_SIZE ? 0 : (t->max_pos - SUCC_IMM_SIZE) / SUCC_BLOCK_BITS + 1;
	t->blocks = calloc(t->nblocks ? t->nblocks : 1, SUCC_BLOCK_SIZE);
	if (!t->blocks)
		return -ENOMEM;
	/* every immediate word (Ruby fills those up to max_pos's): past max_pos nothing is asked */
	for (j = 0; j < SUCC_IMM_WORDS; j++) {
		for (i = 0; i < 9; i++) {
			r += succ_bit(bitmap, nbits, j * 9 + i);
			t->imm[j] |= (uint64_t)r << (7 * i);
		}
	}
	for (k = 0; k < t->nblocks; k++) {
		uint8_t *b = t->blocks + (size_t)k * SUCC_BLOCK_SIZE;
		uint32_t brank = r;
		uint64_t small_ranks = 0, bits;
		unsigned int small_rank = 0;

		memcpy(b, &brank, sizeof(brank));
		for (j = 0; j < 8; j++) {
			bits = 0;
			if (j)
				small_ranks |= (uint64_t)small_rank << (9 * (j - 1));
			for (i = 0; i < 64; i++) {
				if (succ_bit(bitmap, nbits,
					     SUCC_IMM_SIZE + k * SUCC_BLOCK_BITS + j * 64 + i)) {
					bits |= 1ULL << i;
					r++;
				}
			}
			memcpy(b + 16 + j * 8, &bits, sizeof(bits));
			small_rank += (unsigned int)__builtin_popcountll(bits);
		}
		memcpy(b + 8, &small_ranks, sizeof(small_ranks));
	}
	return 0;
}

/* The block symbolizer_succ_index_lookup takes for pos, as the symbolizer passes it (NULL: immediate). */
static inline const uint8_t *succ_block(const struct succ_table *t, unsigned int pos)
{
	return pos >= SUCC_IMM_SIZE
		       ? t->blocks +
				 (size_t)((pos - SUCC_IMM_SIZE) / SUCC_BLOCK_BITS) * SUCC_BLOCK_SIZE
		       : NULL;
}

#endif
