// SPDX-License-Identifier: GPL-2.0-only
/*
 * demangle.c - C++ names demangled by the Itanium ABI demangler of GCC's libiberty (the code
 * libstdc++'s __cxa_demangle is built from), through its callback entry, which prints the name
 * piece by piece into our buffer and allocates nothing: printing stops at the buffer's end.
 *
 * Why not __cxa_demangle: its cost is the size of the demangled name, and back-references make
 * that exponential in the mangled one. 286 bytes ("_Z1fI1A" and 26 "1BI" types, each naming
 * the one before twice) demangle to 872 million characters: 872 MB and 10 s. A bound on the input
 * alone does not hold; a bound on the output does, and its buffer is the one we keep anyway.
 */
#include <errno.h>
#include <libiberty/demangle.h>
#include <setjmp.h>
#include <string.h>

#include "native/demangle.h"

struct printed {
	char *out;
	size_t size, len;
	jmp_buf full;
};

/*
 * One piece of the name. At the buffer's end the demangler is left by longjmp: its state is on
 * the stack (the callback entry is async-signal safe: no malloc, no lock), so nothing leaks.
 */
static void demangle_piece(const char *s, size_t n, void *arg)
{
	struct printed *p = arg;

	if (n >= p->size - p->len)
		longjmp(p->full, 1);
	memcpy(p->out + p->len, s, n);
	p->len += n;
}

int demangle_cxx(const char *name, char *out, size_t size)
{
	/* printed here, copied to out only whole: a name refused half way leaves out as it was */
	char buf[DEMANGLE_MAX];
	struct printed p = {.out = buf, .size = size < sizeof(buf) ? size : sizeof(buf)};
	int ok;

	/* only the ABI's own prefix: the demangler also takes bare type names ("i" is "int") */
	if (!name || strncmp(name, "_Z", 2) != 0)
		return -EINVAL;
	if (strnlen(name, DEMANGLE_INPUT_MAX) >= DEMANGLE_INPUT_MAX || size == 0)
		return -ENAMETOOLONG;
	if (setjmp(p.full))
		return -ENAMETOOLONG;
	/* __cxa_demangle's options: parameters, qualifiers, types; the recursion limit kept */
	ok = cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_ANSI | DMGL_TYPES, demangle_piece,
					&p);
	if (!ok)
		return -EINVAL;
	memcpy(out, buf, p.len);
	out[p.len] = '\0';
	return 0;
}
