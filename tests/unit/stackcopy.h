/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stackcopy.h - copies a piece of the test's own live stack, as the BPF side copies a sampled
 * thread's: byte by byte and uninstrumented, because AddressSanitizer's redzones between stack
 * frames make any checked read (memcpy's interceptor too) of the live stack an error report.
 */
#ifndef RP_TEST_STACKCOPY_H
#define RP_TEST_STACKCOPY_H

#include <stddef.h>
#include <stdint.h>

static __attribute__((unused, noinline, no_sanitize_address)) void
stackcopy(void *dst, uintptr_t src, size_t len)
{
	volatile unsigned char *d = dst;
	const volatile unsigned char *s = (const volatile unsigned char *)src;
	size_t i;

	for (i = 0; i < len; i++)
		d[i] = s[i];
}

#endif
