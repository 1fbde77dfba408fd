// SPDX-License-Identifier: GPL-2.0-only
/*
 * cbext.c - a C extension built by the end-to-end tests (test_native's native_cext): C code that
 * calls back into a Ruby block, whose Ruby methods call C again. Its functions keep their own
 * frames (noinline, no sibling calls) so that a mixed stack shows each of them by name:
 *
 *   cbext_spin                       CbExt.spin's work (the leaf)
 *   CbExt.spin [c], Ruby methods, the block
 *   rb_yield (libruby), cbext_inner, cbext_outer, cbext_each_twice
 *   CbExt.each_twice [c], the Ruby caller
 *
 * Built against the headers of the Ruby that loads it; no -lruby: its symbols come from the
 * libruby already loaded.
 */
#include <ruby.h>
#include <stdint.h>

#define CBEXT_NOINLINE __attribute__((noinline))

/* A multiply-xorshift loop: pure CPU in this function's own code, nothing to inline or fold. */
static CBEXT_NOINLINE uint64_t cbext_spin(long n)
{
	volatile uint64_t x = 88172645463325252ULL;
	long i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

/* CbExt.spin(n) */
static VALUE cbext_spin_m(VALUE self, VALUE n)
{
	(void)self;
	return ULL2NUM(cbext_spin(NUM2LONG(n)) & 0xffff);
}

/* Yields i; the result is used after the call, so rb_yield is a call, not a jump. */
static CBEXT_NOINLINE VALUE cbext_inner(long i)
{
	VALUE r = rb_yield(LONG2NUM(i));

	return RTEST(r) ? Qtrue : Qfalse;
}

static CBEXT_NOINLINE long cbext_outer(void)
{
	long i, n = 0;

	for (i = 0; i < 2; i++)
		n += cbext_inner(i) == Qtrue;
	return n;
}

/* CbExt.each_twice { |i| ... }: yields 0 and 1 through cbext_outer and cbext_inner. */
static CBEXT_NOINLINE VALUE cbext_each_twice(VALUE self)
{
	(void)self;
	return LONG2NUM(cbext_outer());
}

void Init_cbext(void);
void Init_cbext(void)
{
	VALUE m = rb_define_module("CbExt");

	rb_define_module_function(m, "each_twice", cbext_each_twice, 0);
	rb_define_module_function(m, "spin", cbext_spin_m, 1);
}
