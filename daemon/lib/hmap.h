/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hmap.h - an open-addressing (linear probing) hash map from a 128-bit key (two u64) to a u64
 * value: the one map of the daemon (caches, processes, interning tables).
 *
 * It grows by doubling at 3/4 load and deletes by backward shift, so no tombstones pile up and
 * lookups cost the same after months of inserts and deletes; after deletions it halves when under
 * 1/8 load, so memory comes back after a churn of processes.
 *
 * Two ways to use it:
 * - a map: hmap_put inserts or replaces, hmap_get and hmap_del find one entry per key;
 * - a content-addressed table (key = a hash of content that lives elsewhere, value = where):
 *   hmap_add inserts even when the key is there, hmap_next_dup yields every value stored under a
 *   key so that the caller compares content, hmap_del_val removes one (key, value) pair.
 *
 * A zeroed struct hmap is an empty map; hmap_clear frees it and leaves it empty again.
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

/* Iterates the values under one key; start zeroed. Any insert or delete invalidates it. */
struct hmap_iter {
	size_t pos;
	bool started;
};

uint64_t hmap_hash(uint64_t k1, uint64_t k2);
/* With duplicate keys, one of their values. */
bool hmap_get(const struct hmap *h, uint64_t k1, uint64_t k2, uint64_t *val);
/* Inserts or replaces. 0 or -ENOMEM. */
int hmap_put(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t val);
/* Inserts a new entry even when the key is already there. 0 or -ENOMEM. */
int hmap_add(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t val);
/* The next value stored under (k1, k2) into *val; false when there are no more. */
bool hmap_next_dup(const struct hmap *h, uint64_t k1, uint64_t k2, struct hmap_iter *it,
		   uint64_t *val);
/* Removes an entry with that key, its value into *val (may be NULL); false when absent. */
bool hmap_del(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t *val);
/* Removes one entry with that key and that value; false when absent. */
bool hmap_del_val(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t val);
/*
 * Removes every entry for which drop returns true (drop must not change the map); calls drop
 * exactly once per entry. Returns how many were removed.
 */
size_t hmap_filter(struct hmap *h, bool (*drop)(void *ctx, uint64_t k1, uint64_t k2, uint64_t val),
		   void *ctx);
/* Calls fn for every entry. */
void hmap_foreach(const struct hmap *h,
		  void (*fn)(void *ctx, uint64_t k1, uint64_t k2, uint64_t val), void *ctx);
/* Heap bytes held by the table (for metrics). */
size_t hmap_bytes(const struct hmap *h);
void hmap_clear(struct hmap *h);
/* hmap_clear for a map whose values are malloc'ed pointers: each is freed first. */
void hmap_clear_free(struct hmap *h);

#endif
