// SPDX-License-Identifier: GPL-2.0-only
/* Frame interning, stack counting, the table bound, and the hash map under them. */
#include <criterion/criterion.h>
#include <errno.h>

#include "aggregate.h"
#include "hmap.h"

Test(hmap, put_get_grow_clear)
{
	struct hmap h = {0};
	uint64_t v, i;

	for (i = 0; i < 10000; i++)
		cr_assert_eq(hmap_put(&h, i, i * 3, i + 7), 0);
	cr_assert_eq(h.len, 10000);
	for (i = 0; i < 10000; i++) {
		cr_assert(hmap_get(&h, i, i * 3, &v));
		cr_assert_eq(v, i + 7);
	}
	cr_assert_not(hmap_get(&h, 1, 4, &v));
	cr_assert_eq(hmap_put(&h, 5, 15, 99), 0);
	cr_assert_eq(h.len, 10000);
	cr_assert(hmap_get(&h, 5, 15, &v));
	cr_assert_eq(v, 99);
	hmap_clear(&h);
	cr_assert_not(hmap_get(&h, 5, 15, &v));
}

struct sum {
	uint64_t count, stacks;
};

static void add_up(void *ctx, const struct agg_stack *st)
{
	struct sum *s = ctx;

	s->count += st->count;
	s->stacks++;
}

Test(aggregate, frames_are_interned)
{
	struct agg *a = agg__new(100);
	uint32_t x, y, z;

	cr_assert_not_null(a);
	x = agg_frame_id(a, AGG_FRAME_RUBY, "foo", "/a.rb", 1, 10);
	y = agg_frame_id(a, AGG_FRAME_RUBY, "foo", "/a.rb", 1, 10);
	z = agg_frame_id(a, AGG_FRAME_RUBY, "foo", "/a.rb", 1, 11);
	cr_assert_neq(x, 0);
	cr_assert_eq(x, y);
	cr_assert_neq(x, z);
	/* the same name as a C function is another frame */
	cr_assert_neq(agg_frame_id(a, AGG_FRAME_CFUNC, "foo", "/a.rb", 1, 10), x);
	cr_assert_str_eq(agg_frame_get(a, z)->name, "foo");
	cr_assert_eq(agg_frame_get(a, z)->line, 11);
	cr_assert_null(agg_frame_get(a, 0));
	agg__free(a);
}

Test(aggregate, stacks_are_counted_per_thread)
{
	struct agg *a = agg__new(100);
	uint32_t f[3];
	struct sum s = {0};

	f[0] = agg_frame_id(a, AGG_FRAME_RUBY, "leaf", "/a.rb", 1, 2);
	f[1] = agg_frame_id(a, AGG_FRAME_RUBY, "mid", "/a.rb", 5, 6);
	f[2] = agg_frame_id(a, AGG_FRAME_RUBY, "<main>", "/a.rb", 0, 9);
	cr_assert_eq(agg_add(a, 10, 10, "ruby", f, 3, 1), 0);
	cr_assert_eq(agg_add(a, 10, 10, "ruby", f, 3, 2), 0);
	cr_assert_eq(agg_add(a, 10, 11, "worker", f, 3, 1), 0);	  /* another thread */
	cr_assert_eq(agg_add(a, 10, 10, "ruby", f + 1, 2, 1), 0); /* another stack */
	cr_assert_eq(agg_nstacks(a), 3);
	cr_assert_eq(agg_total(a), 5);
	agg_foreach(a, add_up, &s);
	cr_assert_eq(s.count, 5);
	cr_assert_eq(s.stacks, 3);
	agg__free(a);
}

Test(aggregate, full_table_counts_drops)
{
	struct agg *a = agg__new(2);
	uint32_t f = agg_frame_id(a, AGG_FRAME_RUBY, "x", "", 0, 0);

	cr_assert_eq(agg_add(a, 1, 1, "", &f, 1, 1), 0);
	cr_assert_eq(agg_add(a, 2, 2, "", &f, 1, 1), 0);
	cr_assert_eq(agg_add(a, 3, 3, "", &f, 1, 4), -ENOSPC);
	cr_assert_eq(agg_dropped(a), 4);
	/* existing stacks still count */
	cr_assert_eq(agg_add(a, 1, 1, "", &f, 1, 1), 0);
	cr_assert_eq(agg_total(a), 3);
	agg__free(a);
}

Test(aggregate, many_stacks_rehash)
{
	struct agg *a = agg__new(1u << 20);
	uint32_t f[2];
	struct sum s = {0};
	int i;

	f[1] = agg_frame_id(a, AGG_FRAME_RUBY, "root", "/r.rb", 0, 1);
	for (i = 0; i < 5000; i++) {
		f[0] = (uint32_t)(i % 1000) + 1000; /* ids need not be interned for counting */
		cr_assert_eq(agg_add(a, 1, i / 1000, "t", f, 2, 1), 0);
	}
	cr_assert_eq(agg_nstacks(a), 5000);
	agg_foreach(a, add_up, &s);
	cr_assert_eq(s.count, 5000);
	agg__free(a);
}
