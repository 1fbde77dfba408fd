/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hmap.h - an open-addressing hash map from a 128-bit key (two u64) to a u64 value, for the
 * daemon's caches (iseq and frame caches, processes). Grows by doubling; no deletion of single
 * keys (caches are dropped whole with hmap_clear).
 */
#ifndef RP_HMAP_H
#define RP_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hmap_entry {
	uint64_t k1, k2, val;
	bool used;
};

struct hmap {
	struct hmap_entry *slots;
	size_t cap; /* power of two, 0 before the first insert */
	size_t len;
};

uint64_t hmap_hash(uint64_t k1, uint64_t k2);
bool hmap_get(const struct hmap *h, uint64_t k1, uint64_t k2, uint64_t *val);
/* Inserts or replaces. 0 or -ENOMEM. */
int hmap_put(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t val);
/* Calls fn for every entry. */
void hmap_foreach(const struct hmap *h,
		  void (*fn)(void *ctx, uint64_t k1, uint64_t k2, uint64_t val), void *ctx);
void hmap_clear(struct hmap *h);

#endif
