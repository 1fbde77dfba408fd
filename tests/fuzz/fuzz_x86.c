// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the x86-64 code recognizers of daemon/ruby/discover.c: the bytes are a function's code read
 * from an untrusted object file. The first 8 bytes are its vaddr (the rip-relative arithmetic
 * must not overflow into undefined behaviour); the rest is the code.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "ruby/discover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t vaddr, out[16], idx, slot;
	int64_t off;
	size_t n, i;

	if (size < sizeof(vaddr))
		return 0;
	memcpy(&vaddr, data, sizeof(vaddr));
	data += sizeof(vaddr), size -= sizeof(vaddr);
	n = discover_rip_targets(data, size, vaddr, out, sizeof(out) / sizeof(out[0]));
	if (n > sizeof(out) / sizeof(out[0]))
		abort(); /* more targets than room */
	for (i = 0; i < n; i++)
		(void)out[i];
	(void)discover_rip_targets(data, size, vaddr, out, 1);
	(void)discover_rip_targets(data, size, vaddr, out, 0);
	(void)discover_gd_tls_index(data, size, vaddr, &idx);
	(void)discover_static_tls(data, size, vaddr, &off, &slot);
	return 0;
}
