// SPDX-License-Identifier: GPL-2.0-only
/* hmap.c - linear-probing hash map with 128-bit keys. */
#include <errno.h>
#include <stdlib.h>

#include "hmap.h"

uint64_t hmap_hash(uint64_t k1, uint64_t k2)
{
	/* splitmix64 finalizer over both halves */
	uint64_t x = k1 * 0x9e3779b97f4a7c15ULL ^ (k2 + 0x632be59bd9b4e019ULL);

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static struct hmap_entry *find(const struct hmap *h, uint64_t k1, uint64_t k2)
{
	size_t i = hmap_hash(k1, k2) & (h->cap - 1);

	while (h->slots[i].used) {
		if (h->slots[i].k1 == k1 && h->slots[i].k2 == k2)
			return &h->slots[i];
		i = (i + 1) & (h->cap - 1);
	}
	return &h->slots[i];
}

bool hmap_get(const struct hmap *h, uint64_t k1, uint64_t k2, uint64_t *val)
{
	struct hmap_entry *e;

	if (!h->cap)
		return false;
	e = find(h, k1, k2);
	if (!e->used)
		return false;
	*val = e->val;
	return true;
}

static int grow(struct hmap *h)
{
	size_t cap = h->cap ? h->cap * 2 : 64, i;
	struct hmap old = *h;

	h->slots = calloc(cap, sizeof(*h->slots));
	if (!h->slots) {
		*h = old;
		return -ENOMEM;
	}
	h->cap = cap;
	for (i = 0; i < old.cap; i++) {
		if (old.slots[i].used)
			*find(h, old.slots[i].k1, old.slots[i].k2) = old.slots[i];
	}
	free(old.slots);
	return 0;
}

int hmap_put(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct hmap_entry *e;
	int err;

	if ((h->len + 1) * 4 > h->cap * 3) {
		err = grow(h);
		if (err)
			return err;
	}
	e = find(h, k1, k2);
	if (!e->used) {
		e->used = true;
		e->k1 = k1;
		e->k2 = k2;
		h->len++;
	}
	e->val = val;
	return 0;
}

void hmap_foreach(const struct hmap *h,
		  void (*fn)(void *ctx, uint64_t k1, uint64_t k2, uint64_t val), void *ctx)
{
	size_t i;

	for (i = 0; i < h->cap; i++) {
		if (h->slots[i].used)
			fn(ctx, h->slots[i].k1, h->slots[i].k2, h->slots[i].val);
	}
}

void hmap_clear(struct hmap *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = 0;
	h->len = 0;
}
