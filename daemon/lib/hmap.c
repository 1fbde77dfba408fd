// SPDX-License-Identifier: GPL-2.0-only
/*
 * hmap.c - linear-probing hash map with 128-bit keys, backward-shift deletion.
 *
 * Invariant: every entry sits at its home slot (hash & mask) or after it, with no empty slot in
 * between. Lookups stop at the first empty slot; deletion keeps the invariant by moving later
 * entries of the cluster back into the hole, instead of leaving a tombstone. The load stays at
 * most 3/4, so every probe reaches an empty slot.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/hmap.h"

/* The smallest table: shrinking stops here, so a map that breathes does not reallocate. */
#define HMAP_MIN_CAP 64

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

static size_t home_of(const struct hmap *h, uint64_t k1, uint64_t k2)
{
	return hmap_hash(k1, k2) & (h->cap - 1);
}

static bool is_key(const struct hmap_entry *e, uint64_t k1, uint64_t k2)
{
	return e->used && e->k1 == k1 && e->k2 == k2;
}

/* The slot holding key, or the empty slot where it belongs. Needs cap > 0. */
static struct hmap_entry *find(const struct hmap *h, uint64_t k1, uint64_t k2)
{
	size_t i = home_of(h, k1, k2);

	while (h->slots[i].used && !is_key(&h->slots[i], k1, k2))
		i = (i + 1) & (h->cap - 1);
	return &h->slots[i];
}

/* The first empty slot of key's probe sequence, where a new entry goes. Needs cap > 0. */
static struct hmap_entry *free_slot(const struct hmap *h, uint64_t k1, uint64_t k2)
{
	size_t i = home_of(h, k1, k2);

	while (h->slots[i].used)
		i = (i + 1) & (h->cap - 1);
	return &h->slots[i];
}

/* Moves every entry into a new table of cap slots (a power of two above len). 0 or -ENOMEM. */
static int resize(struct hmap *h, size_t cap)
{
	struct hmap old = *h;
	size_t i;

	if (cap > SIZE_MAX / sizeof(*h->slots))
		return -ENOMEM;
	h->slots = calloc(cap, sizeof(*h->slots));
	if (!h->slots) {
		*h = old;
		return -ENOMEM;
	}
	h->cap = cap;
	for (i = 0; i < old.cap; i++) {
		if (old.slots[i].used)
			*free_slot(h, old.slots[i].k1, old.slots[i].k2) = old.slots[i];
	}
	free(old.slots);
	return 0;
}

/* Makes room for one more entry (load at most 3/4). 0 or -ENOMEM. */
static int reserve(struct hmap *h)
{
	if ((h->len + 1) * 4 <= h->cap * 3)
		return 0;
	if (h->cap > SIZE_MAX / 2)
		return -ENOMEM;
	return resize(h, h->cap ? h->cap * 2 : HMAP_MIN_CAP);
}

/*
 * Halves the table while it is under 1/8 full: after a shrink the load is at least 1/8 and far
 * from the 3/4 that grows it again, so a steady insert/delete churn does not resize each time.
 * A failed allocation keeps the bigger table, which is still correct.
 */
static void shrink(struct hmap *h)
{
	size_t cap = h->cap;

	while (cap > HMAP_MIN_CAP && h->len < cap / 8)
		cap /= 2;
	if (cap != h->cap)
		resize(h, cap);
}

/* The entry of (k1, k2), or NULL: a table that never had one has no slots to probe. */
static struct hmap_entry *lookup(const struct hmap *h, uint64_t k1, uint64_t k2)
{
	struct hmap_entry *e;

	if (!h->cap)
		return NULL;
	e = find(h, k1, k2);
	return e->used ? e : NULL;
}

bool hmap_get(const struct hmap *h, uint64_t k1, uint64_t k2, uint64_t *val)
{
	struct hmap_entry *e = lookup(h, k1, k2);

	if (!e)
		return false;
	*val = e->val;
	return true;
}

int hmap_put(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct hmap_entry *e = lookup(h, k1, k2);

	if (e) {
		e->val = val;
		return 0;
	}
	return hmap_add(h, k1, k2, val);
}

int hmap_add(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct hmap_entry *e;
	int err;

	err = reserve(h);
	if (err)
		return err;
	e = free_slot(h, k1, k2);
	e->used = true;
	e->k1 = k1;
	e->k2 = k2;
	e->val = val;
	h->len++;
	return 0;
}

bool hmap_next_dup(const struct hmap *h, uint64_t k1, uint64_t k2, struct hmap_iter *it,
		   uint64_t *val)
{
	size_t mask, i;

	if (!h->cap)
		return false;
	mask = h->cap - 1;
	i = it->started ? (it->pos + 1) & mask : home_of(h, k1, k2);
	it->started = true;
	/* Every entry of the key lies between its home and the next empty slot. */
	for (; h->slots[i].used; i = (i + 1) & mask) {
		if (is_key(&h->slots[i], k1, k2)) {
			it->pos = i;
			*val = h->slots[i].val;
			return true;
		}
	}
	/* Parked before the empty slot: further calls keep returning false. */
	it->pos = (i - 1) & mask;
	return false;
}

/*
 * Empties slot i, then walks the rest of its cluster: an entry whose home is not after the hole
 * (cyclically, between the hole and the entry) moves back into it, and its old slot becomes the
 * hole. Entries only move backwards, never past an empty slot. Does not shrink.
 */
static void del_at(struct hmap *h, size_t i)
{
	size_t mask = h->cap - 1, j = i, home;

	for (;;) {
		j = (j + 1) & mask;
		if (!h->slots[j].used)
			break;
		home = home_of(h, h->slots[j].k1, h->slots[j].k2);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			h->slots[i] = h->slots[j];
			i = j;
		}
	}
	h->slots[i] = (struct hmap_entry){0};
	h->len--;
}

bool hmap_del(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t *val)
{
	struct hmap_entry *e = lookup(h, k1, k2);

	if (!e)
		return false;
	if (val)
		*val = e->val;
	del_at(h, (size_t)(e - h->slots));
	shrink(h);
	return true;
}

bool hmap_del_val(struct hmap *h, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct hmap_iter it = {0};
	uint64_t v;

	while (hmap_next_dup(h, k1, k2, &it, &v)) {
		if (v == val) {
			del_at(h, it.pos);
			shrink(h);
			return true;
		}
	}
	return false;
}

size_t hmap_filter(struct hmap *h, bool (*drop)(void *ctx, uint64_t k1, uint64_t k2, uint64_t val),
		   void *ctx)
{
	size_t mask, start, i, seen, dropped = 0;
	struct hmap_entry *e;

	if (!h->len)
		return 0;
	mask = h->cap - 1;
	/*
	 * Scan once around the table from just after an empty slot. A deletion at i only moves
	 * entries from later slots of the same cluster back into slots >= i (in scan order), and
	 * never past that empty slot, so the slot is looked at again and every entry is seen once.
	 */
	for (start = 0; h->slots[start].used; start++)
		;
	start = (start + 1) & mask;
	for (i = start, seen = 0; seen < h->cap;) {
		e = &h->slots[i];
		if (e->used && drop(ctx, e->k1, e->k2, e->val)) {
			del_at(h, i);
			dropped++;
			continue;
		}
		i = (i + 1) & mask;
		seen++;
	}
	shrink(h);
	return dropped;
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

size_t hmap_bytes(const struct hmap *h)
{
	return h->cap * sizeof(*h->slots);
}

static void free_val(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	free((void *)(uintptr_t)val);
}

void hmap_clear_free(struct hmap *h)
{
	hmap_foreach(h, free_val, NULL);
	hmap_clear(h);
}

void hmap_clear(struct hmap *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = 0;
	h->len = 0;
}
