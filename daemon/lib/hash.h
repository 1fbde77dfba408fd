/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hash.h - the one string and byte hash of the tree: 64-bit FNV-1a, for hash tables (hmap.h keys)
 * and the push API's sample id (protocol.c). Not for anything an adversary must not collide.
 */
#ifndef RP_HASH_H
#define RP_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HASH_INIT 0xcbf29ce484222325ULL

/* FNV-1a of len bytes at data, continuing from h (HASH_INIT to start). */
static inline uint64_t hash_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The same over string s and its NUL: chained strings ("ab", "c" and "a", "bc") hash apart. */
static inline uint64_t hash_str(uint64_t h, const char *s)
{
	return hash_bytes(h, s, strlen(s) + 1);
}

#endif
