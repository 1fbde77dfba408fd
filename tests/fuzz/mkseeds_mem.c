// SPDX-License-Identifier: GPL-2.0-only
/*
 * Writes the seeds of fuzz_mem (tests/fuzz/corpus/mem/): per row of daemon/ruby/offsets.c, the Ruby
 * objects of tests/fuzz/fakemem.h as a fuzz input, plain and with the JIT and small-cache flags;
 * then the regression inputs of the readers' fixed crashes.
 *   mkseeds_mem DIR
 */
#include <stdio.h>

#include "fakemem.h"

int main(int argc, char **argv)
{
	static struct fakemem_image img;
	static uint8_t out[FAKEMEM_HEADER_SIZE + 6 + 3 * FAKEMEM_BUILD_SIZE];
	static const unsigned int flags[] = {0, FAKEMEM_F_JIT | FAKEMEM_F_SMALL};
	unsigned int nrows, row, f;
	char path[4096];
	size_t n;
	FILE *fp;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	offsets_all(&nrows);
	for (row = 0; row < nrows; row++) {
		if (fakemem_build(&img, row)) {
			fprintf(stderr, "mkseeds_mem: row %u does not fit the image\n", row);
			return 1;
		}
		for (f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
			n = fakemem_serialize(&img, flags[f], out);
			snprintf(path, sizeof(path), "%s/ruby-%s%s", argv[1], img.off->first,
				 flags[f] ? "-jit-small" : "");
			fp = fopen(path, "wb");
			if (!fp || fwrite(out, 1, n, fp) != n || fclose(fp)) {
				perror(path);
				return 1;
			}
		}
	}
	/* the regression input of the 3.4 label recursion (docs/fuzzing.md), replayed by every run */
	for (row = 0; row < nrows; row++) {
		if (fakemem_build(&img, row) || !img.off->qualified_labels)
			continue;
		fakemem_blocks_local_to_each_other(&img);
		n = fakemem_serialize(&img, 0, out);
		snprintf(path, sizeof(path), "%s/regress-%s-blocks-local-to-each-other", argv[1],
			 img.off->first);
		fp = fopen(path, "wb");
		if (!fp || fwrite(out, 1, n, fp) != n || fclose(fp)) {
			perror(path);
			return 1;
		}
	}
	return 0;
}
