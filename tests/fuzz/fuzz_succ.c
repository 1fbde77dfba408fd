// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes symbolizer_succ_index_lookup, the decoder of Ruby's succinct line table (copied out of an untrusted
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

#include "ruby/symbolizer.h"
#include "succbuild.h"

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
	if (symbolizer_succ_index_lookup(imm, pos >= SUCC_IMM_SIZE ? block : NULL, pos) > 0x7f &&
	    pos < SUCC_IMM_SIZE)
		abort(); /* an immediate rank has 7 bits */
}

static void fuzz_succ_diff(const uint8_t *bitmap, size_t size)
{
	struct succ_table t;
	unsigned int r = 0, pos, nbits;
	int err;

	if (size > FUZZ_MAX_POS / 8)
		size = FUZZ_MAX_POS / 8;
	nbits = (unsigned int)size * 8;
	err = succ_build(&t, bitmap, nbits);
	if (err == -ENOENT)
		return;
	if (err)
		abort();
	for (pos = 0; pos <= t.max_pos; pos++) {
		r += succ_bit(bitmap, nbits, pos);
		if (symbolizer_succ_index_lookup(t.imm, succ_block(&t, pos), pos) != r)
			abort(); /* the decoder disagrees with a plain count */
	}
	free(t.blocks);
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
