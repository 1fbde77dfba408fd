// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes succ_index_lookup, the decoder of Ruby's succinct line table (copied out of an untrusted
 * process). Byte 0 picks the mode:
 *   even: raw. Bytes 1..48 are the immediate words, 49..50 the position, 51..130 the block; any
 *         words must decode without a fault (the rank is bounded by the caller).
 *   odd:  differential. The rest is a bitmap of instruction positions; a table is built from it
 *         in Ruby's layout (iseq.c succ_index_table_create) and every position's rank must equal
 *         a plain count.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

#define FUZZ_MAX_POS 4096 /* positions in differential mode: 8 dictionary blocks */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_succ_raw(const uint8_t *data, size_t size)
{
	uint64_t imm[SUCC_IMM_WORDS] = {0};
	uint8_t block[SUCC_BLOCK_SIZE] = {0};
	uint16_t pos = 0;
	size_t n;

	n = size < sizeof(imm) ? size : sizeof(imm);
	memcpy(imm, data, n);
	data += n, size -= n;
	n = size < sizeof(pos) ? size : sizeof(pos);
	memcpy(&pos, data, n);
	data += n, size -= n;
	n = size < sizeof(block) ? size : sizeof(block);
	memcpy(block, data, n);
	/* block is read only for positions past the immediate part, as the symbolizer passes it */
	if (succ_index_lookup(imm, pos >= SUCC_IMM_SIZE ? block : NULL, pos) > 0x7f &&
	    pos < SUCC_IMM_SIZE)
		abort(); /* an immediate rank has 7 bits */
}

static void fuzz_succ_diff(const uint8_t *bitmap, size_t size)
{
	uint64_t imm[SUCC_IMM_WORDS] = {0};
	uint8_t *blocks;
	unsigned int max_pos = 0, nblocks, r = 0, rank, pos, i, j, k;
	bool any = false;

	if (size > FUZZ_MAX_POS / 8)
		size = FUZZ_MAX_POS / 8;
	for (pos = 0; pos < size * 8; pos++) {
		if (bitmap[pos / 8] & (1u << (pos % 8))) {
			max_pos = pos;
			any = true;
		}
	}
	if (!any)
		return;
#define IS_SET(p) ((p) < size * 8 && (bitmap[(p) / 8] & (1u << ((p) % 8))))
	nblocks = max_pos < SUCC_IMM_SIZE ? 0 : (max_pos - SUCC_IMM_SIZE) / SUCC_BLOCK_BITS + 1;
	blocks = calloc(nblocks ? nblocks : 1, SUCC_BLOCK_SIZE);
	if (!blocks)
		abort();
	for (j = 0; j < SUCC_IMM_WORDS; j++) {
		for (i = 0; i < 9; i++) {
			r += IS_SET(j * 9 + i) ? 1 : 0;
			imm[j] |= (uint64_t)r << (7 * i);
		}
	}
	for (k = 0; k < nblocks; k++) {
		uint8_t *b = blocks + (size_t)k * SUCC_BLOCK_SIZE;
		uint32_t brank = r;
		uint64_t small_ranks = 0, bits;
		unsigned int small_rank = 0;

		memcpy(b, &brank, sizeof(brank));
		for (j = 0; j < 8; j++) {
			bits = 0;
			if (j)
				small_ranks |= (uint64_t)small_rank << (9 * (j - 1));
			for (i = 0; i < 64; i++) {
				if (IS_SET(SUCC_IMM_SIZE + k * SUCC_BLOCK_BITS + j * 64 + i)) {
					bits |= 1ULL << i;
					r++;
				}
			}
			memcpy(b + 16 + j * 8, &bits, sizeof(bits));
			small_rank += (unsigned int)__builtin_popcountll(bits);
		}
		memcpy(b + 8, &small_ranks, sizeof(small_ranks));
	}
	r = 0;
	for (pos = 0; pos <= max_pos; pos++) {
		const uint8_t *block =
			pos >= SUCC_IMM_SIZE
				? blocks + (size_t)((pos - SUCC_IMM_SIZE) / SUCC_BLOCK_BITS) *
						   SUCC_BLOCK_SIZE
				: NULL;

		r += IS_SET(pos) ? 1 : 0;
		rank = succ_index_lookup(imm, block, pos);
		if (rank != r)
			abort(); /* the decoder disagrees with a plain count */
	}
#undef IS_SET
	free(blocks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		fuzz_succ_diff(data + 1, size - 1);
	else
		fuzz_succ_raw(data + 1, size - 1);
	return 0;
}
