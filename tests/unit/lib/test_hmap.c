// SPDX-License-Identifier: GPL-2.0-only
/*
 * The hash map: insert/replace, backward-shift deletion inside probe chains (also across the end
 * of the table), duplicate keys, filtering, shrinking, and long random runs against a plain
 * array model. The table's slots are public, so the tests also check the probing invariant.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "lib/hmap.h"

/* Every entry lies at or after its home slot with no empty slot in between, and len is right. */
static void check_invariant(const struct hmap *h)
{
	size_t i, j, used = 0;

	for (i = 0; i < h->cap; i++) {
		if (!h->slots[i].used)
			continue;
		used++;
		j = hmap_hash(h->slots[i].k1, h->slots[i].k2) & (h->cap - 1);
		for (; j != i; j = (j + 1) & (h->cap - 1))
			cr_assert(h->slots[j].used, "hole at %zu before the entry at %zu", j, i);
	}
	cr_assert_eq(used, h->len);
}

/* The next k1 >= *from (k2 = 0) whose home slot in a table of cap slots is home. */
static uint64_t key_with_home(uint64_t *from, size_t cap, size_t home)
{
	while ((hmap_hash(*from, 0) & (cap - 1)) != home)
		(*from)++;
	return (*from)++;
}

/* A small deterministic generator (xorshift64*), so that every run does the same operations. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

Test(hmap, put_get_replace)
{
	struct hmap h = {0};
	uint64_t v, i;

	cr_assert_not(hmap_get(&h, 1, 2, &v));
	cr_assert_not(hmap_del(&h, 1, 2, NULL));
	cr_assert_eq(hmap_bytes(&h), 0);
	for (i = 0; i < 5000; i++)
		cr_assert_eq(hmap_put(&h, i, ~i, i * 2), 0);
	cr_assert_eq(h.len, 5000);
	for (i = 0; i < 5000; i++) {
		cr_assert(hmap_get(&h, i, ~i, &v));
		cr_assert_eq(v, i * 2);
	}
	/* the two halves of the key are not interchangeable */
	cr_assert_not(hmap_get(&h, ~3ULL, 3, &v));
	cr_assert_eq(hmap_put(&h, 7, ~7ULL, 1234), 0);
	cr_assert_eq(h.len, 5000);
	cr_assert(hmap_get(&h, 7, ~7ULL, &v));
	cr_assert_eq(v, 1234);
	cr_assert_geq(hmap_bytes(&h), 5000 * sizeof(struct hmap_entry));
	check_invariant(&h);
	hmap_clear(&h);
	cr_assert_eq(h.len, 0);
	cr_assert_eq(hmap_bytes(&h), 0);
	cr_assert_not(hmap_get(&h, 7, ~7ULL, &v));
}

/*
 * Builds, in a 64-slot table, one long cluster from keys that all want slots 10..12, and one that
 * wraps from slot 62 over the end to slot 0 and on; then deletes every key in a shuffled order,
 * checking after each deletion that every other key is still found with its value.
 */
Test(hmap, delete_inside_probe_chains)
{
	struct hmap h = {0};
	uint64_t keys[40], from = 0, v, seed = 42;
	bool gone[40] = {false};
	size_t i, j, n = 40;

	for (i = 0; i < n; i++) {
		size_t home = i < 20 ? 10 + i % 3 : (i % 2 ? 62 : 63);

		keys[i] = key_with_home(&from, 64, home);
		cr_assert_eq(hmap_put(&h, keys[i], 0, keys[i] * 5), 0);
	}
	cr_assert_eq(h.cap, 64, "the test needs one small table");
	check_invariant(&h);
	/* The wrapping cluster really reaches the start of the table. */
	cr_assert(h.slots[0].used);

	for (i = n - 1; i > 0; i--) {
		uint64_t t;

		j = rnd(&seed) % (i + 1);
		t = keys[i];
		keys[i] = keys[j];
		keys[j] = t;
	}
	for (i = 0; i < n; i++) {
		cr_assert(hmap_del(&h, keys[i], 0, &v));
		cr_assert_eq(v, keys[i] * 5);
		gone[i] = true;
		cr_assert_not(hmap_del(&h, keys[i], 0, &v), "deleted twice");
		check_invariant(&h);
		for (j = 0; j < n; j++) {
			if (gone[j]) {
				cr_assert_not(hmap_get(&h, keys[j], 0, &v));
				continue;
			}
			cr_assert(hmap_get(&h, keys[j], 0, &v), "key %zu lost after deleting %zu",
				  j, i);
			cr_assert_eq(v, keys[j] * 5);
		}
	}
	cr_assert_eq(h.len, 0);
	hmap_clear(&h);
}

/* Collects the values under (k1, k2), sorted. */
static size_t dups(const struct hmap *h, uint64_t k1, uint64_t k2, uint64_t *out, size_t max)
{
	struct hmap_iter it = {0};
	size_t n = 0, i, j;
	uint64_t v;

	while (hmap_next_dup(h, k1, k2, &it, &v)) {
		cr_assert_lt(n, max, "more values than inserted");
		out[n++] = v;
	}
	/* once exhausted, it stays exhausted */
	cr_assert_not(hmap_next_dup(h, k1, k2, &it, &v));
	for (i = 1; i < n; i++) {
		for (j = i; j > 0 && out[j - 1] > out[j]; j--) {
			v = out[j];
			out[j] = out[j - 1];
			out[j - 1] = v;
		}
	}
	return n;
}

Test(hmap, duplicates)
{
	struct hmap h = {0};
	uint64_t got[8], from = 1000, other, v;
	size_t n;

	cr_assert_eq(dups(&h, 5, 6, got, 8), 0);
	cr_assert_eq(hmap_add(&h, 5, 6, 30), 0);
	cr_assert_eq(hmap_add(&h, 5, 6, 10), 0);
	/* a different key in the same chain must not be yielded */
	other = key_with_home(&from, 64, hmap_hash(5, 6) & 63);
	cr_assert_eq(hmap_add(&h, other, 6, 99), 0);
	cr_assert_eq(hmap_add(&h, 5, 6, 20), 0);
	cr_assert_eq(hmap_add(&h, 5, 6, 20), 0);
	cr_assert_eq(h.len, 5);
	check_invariant(&h);

	n = dups(&h, 5, 6, got, 8);
	cr_assert_eq(n, 4);
	cr_assert_eq(got[0], 10);
	cr_assert_eq(got[1], 20);
	cr_assert_eq(got[2], 20);
	cr_assert_eq(got[3], 30);
	cr_assert_eq(dups(&h, 5, 7, got, 8), 0);

	cr_assert_not(hmap_del_val(&h, 5, 6, 99), "99 is under another key");
	cr_assert(hmap_del_val(&h, 5, 6, 20));
	n = dups(&h, 5, 6, got, 8);
	cr_assert_eq(n, 3);
	cr_assert_eq(got[0], 10);
	cr_assert_eq(got[1], 20);
	cr_assert_eq(got[2], 30);
	cr_assert(hmap_del_val(&h, 5, 6, 10));
	cr_assert(hmap_del_val(&h, 5, 6, 20));
	cr_assert_not(hmap_del_val(&h, 5, 6, 20));
	n = dups(&h, 5, 6, got, 8);
	cr_assert_eq(n, 1);
	cr_assert_eq(got[0], 30);
	cr_assert(hmap_get(&h, other, 6, &v));
	cr_assert_eq(v, 99);
	cr_assert_eq(h.len, 2);
	check_invariant(&h);

	/* put replaces one of them rather than adding */
	cr_assert_eq(hmap_put(&h, 5, 6, 31), 0);
	cr_assert_eq(h.len, 2);
	cr_assert_eq(dups(&h, 5, 6, got, 8), 1);
	cr_assert_eq(got[0], 31);
	hmap_clear(&h);
}

struct filter_ctx {
	unsigned *visits; /* per key */
	uint64_t nkeys;
};

static bool drop_odd(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct filter_ctx *f = ctx;

	cr_assert_lt(k1, f->nkeys);
	cr_assert_eq(val, k1 + k2);
	f->visits[k1]++;
	return k1 % 2;
}

Test(hmap, filter_visits_each_entry_once)
{
	struct filter_ctx f = {.nkeys = 20000};
	struct hmap h = {0};
	uint64_t k, v;

	f.visits = calloc(f.nkeys, sizeof(*f.visits));
	cr_assert_not_null(f.visits);
	for (k = 0; k < f.nkeys; k++)
		cr_assert_eq(hmap_put(&h, k, 3, k + 3), 0);
	cr_assert_eq(hmap_filter(&h, drop_odd, &f), f.nkeys / 2);
	for (k = 0; k < f.nkeys; k++) {
		cr_assert_eq(f.visits[k], 1, "key %lu seen %u times", (unsigned long)k,
			     f.visits[k]);
		cr_assert_eq(hmap_get(&h, k, 3, &v), k % 2 == 0);
	}
	cr_assert_eq(h.len, f.nkeys / 2);
	check_invariant(&h);
	free(f.visits);
	hmap_clear(&h);
}

/* Counts a visit per value (an index below nkeys) and drops odd values. */
static bool drop_odd_val(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	struct filter_ctx *f = ctx;

	cr_assert_lt(val, f->nkeys);
	f->visits[val]++;
	return val % 2;
}

/*
 * The same in a small table whose clusters wrap over its end: deleting near the end moves
 * entries from the start of the table, which a scan from slot 0 would have seen already.
 */
Test(hmap, filter_across_the_end)
{
	unsigned visits[40] = {0};
	struct filter_ctx f = {.visits = visits, .nkeys = 40};
	uint64_t keys[40], from = 0, v;
	struct hmap h = {0};
	size_t i;

	for (i = 0; i < 40; i++) {
		keys[i] = key_with_home(&from, 64, i < 30 ? 60 + i % 4 : 5);
		cr_assert_eq(hmap_put(&h, keys[i], 0, i), 0);
	}
	cr_assert_eq(h.cap, 64);
	cr_assert(h.slots[0].used && h.slots[63].used);
	cr_assert_eq(hmap_filter(&h, drop_odd_val, &f), 20);
	for (i = 0; i < 40; i++) {
		cr_assert_eq(visits[i], 1, "entry %zu seen %u times", i, visits[i]);
		cr_assert_eq(hmap_get(&h, keys[i], 0, &v), i % 2 == 0);
	}
	cr_assert_eq(h.len, 20);
	check_invariant(&h);
	hmap_clear(&h);
}

Test(hmap, shrink_returns_memory)
{
	struct hmap h = {0};
	size_t big, n = 100000;
	uint64_t k, v;

	for (k = 0; k < n; k++)
		cr_assert_eq(hmap_put(&h, k, 0, k), 0);
	big = hmap_bytes(&h);
	cr_assert_geq(big, n * sizeof(struct hmap_entry));
	for (k = 100; k < n; k++)
		cr_assert(hmap_del(&h, k, 0, NULL));
	cr_assert_eq(h.len, 100);
	/* at least 1/8 full again: 100 entries fit in 1024 slots at most */
	cr_assert_leq(h.cap, 1024, "cap %zu after deleting down to 100", h.cap);
	cr_assert_geq(h.len * 8, h.cap);
	cr_assert_eq(hmap_bytes(&h), h.cap * sizeof(struct hmap_entry));
	cr_assert_lt(hmap_bytes(&h) * 100, big);
	for (k = 0; k < 100; k++) {
		cr_assert(hmap_get(&h, k, 0, &v));
		cr_assert_eq(v, k);
	}
	check_invariant(&h);
	for (k = 0; k < 100; k++)
		cr_assert(hmap_del(&h, k, 0, NULL));
	cr_assert_eq(h.cap, 64, "an empty map keeps its smallest table");
	hmap_clear(&h);
}

static bool drop_if_marked(void *ctx, uint64_t k1, uint64_t k2, uint64_t val)
{
	const bool *marked = ctx;

	return marked[k1];
}

/*
 * 200,000 random puts, deletes, gets and occasional filters over 3000 keys (so that the table
 * grows, shrinks and its chains are cut often), compared after each step with a plain array.
 */
Test(hmap, random_against_array_model)
{
	enum { NKEYS = 3000, NOPS = 200000 };
	static uint64_t model[NKEYS];
	static bool present[NKEYS], marked[NKEYS];
	struct hmap h = {0};
	uint64_t seed = 0x5eed, r, k, v;
	size_t op, len = 0, i, n;
	bool found;

	for (op = 0; op < NOPS; op++) {
		r = rnd(&seed);
		/* keys come from a window that drifts, so whole regions empty and refill */
		k = (r >> 8) % (NKEYS / 3) + (op / 20000) % 3 * (NKEYS / 3);
		switch (r % 8) {
		case 0:
		case 1:
		case 2:
			cr_assert_eq(hmap_put(&h, k, k ^ 0xabc, r), 0);
			len += !present[k];
			present[k] = true;
			model[k] = r;
			break;
		case 3:
		case 4:
		case 5:
			found = hmap_del(&h, k, k ^ 0xabc, &v);
			cr_assert_eq(found, present[k], "op %zu: del %lu", op, (unsigned long)k);
			if (found)
				cr_assert_eq(v, model[k]);
			len -= present[k];
			present[k] = false;
			break;
		case 6:
			found = hmap_get(&h, k, k ^ 0xabc, &v);
			cr_assert_eq(found, present[k], "op %zu: get %lu", op, (unsigned long)k);
			if (found)
				cr_assert_eq(v, model[k]);
			break;
		default:
			if (r % 1000 != 7)
				break;
			for (i = 0, n = 0; i < NKEYS; i++) {
				marked[i] = rnd(&seed) % 4 == 0;
				n += marked[i] && present[i];
			}
			cr_assert_eq(hmap_filter(&h, drop_if_marked, marked), n);
			for (i = 0; i < NKEYS; i++) {
				len -= marked[i] && present[i];
				present[i] = present[i] && !marked[i];
			}
			break;
		}
		cr_assert_eq(h.len, len, "op %zu", op);
		cr_assert(h.len * 4 <= h.cap * 3);
	}
	check_invariant(&h);
	for (k = 0; k < NKEYS; k++) {
		cr_assert_eq(hmap_get(&h, k, k ^ 0xabc, &v), present[k]);
		if (present[k])
			cr_assert_eq(v, model[k]);
	}
	hmap_clear(&h);
}

/*
 * Random adds and value deletes over few keys (many duplicates), compared with a list of
 * (key, value) pairs: next_dup must yield exactly the values of each key, with multiplicity.
 */
Test(hmap, random_duplicates_against_model)
{
	enum { NKEYS = 50, MAXPAIRS = 4000, NOPS = 50000 };
	static uint64_t pk[MAXPAIRS], pv[MAXPAIRS], got[MAXPAIRS];
	size_t npairs = 0, op, i, n, want;
	struct hmap h = {0};
	uint64_t seed = 7, r, k;

	for (op = 0; op < NOPS; op++) {
		r = rnd(&seed);
		k = (r >> 16) % NKEYS;
		if (r % 2 && npairs < MAXPAIRS) {
			cr_assert_eq(hmap_add(&h, k, 1, (r >> 40) % 8), 0);
			pk[npairs] = k;
			pv[npairs++] = (r >> 40) % 8;
		} else if (npairs) {
			i = (r >> 8) % npairs;
			cr_assert(hmap_del_val(&h, pk[i], 1, pv[i]));
			pk[i] = pk[--npairs];
			pv[i] = pv[npairs];
		}
		cr_assert_eq(h.len, npairs);
		if (op % 97)
			continue;
		for (k = 0; k < NKEYS; k++) {
			uint64_t val;

			n = dups(&h, k, 1, got, MAXPAIRS);
			for (val = 0; val < 8; val++) {
				size_t have = 0;

				for (i = 0, want = 0; i < npairs; i++)
					want += pk[i] == k && pv[i] == val;
				for (i = 0; i < n; i++)
					have += got[i] == val;
				cr_assert_eq(have, want, "op %zu key %lu value %lu", op,
					     (unsigned long)k, (unsigned long)val);
			}
		}
	}
	check_invariant(&h);
	hmap_clear(&h);
}
