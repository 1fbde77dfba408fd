/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * demangle.h - C++ symbol names as their source spells them ("_ZN2ns5Class6methodEi" ->
 * "ns::Class::method(int)"), with the Itanium C++ ABI's demangler of GCC's libiberty (the
 * one libstdc++'s __cxa_demangle is built from), at a cost bounded by the output's size.
 */
#ifndef RP_DEMANGLE_H
#define RP_DEMANGLE_H

#include <stddef.h>

/* Longest demangled name kept (bytes with the NUL); a longer one stays mangled. Of the 38055
 * C++ names of Debian's libLLVM-14, 220 are longer (the longest 4281 bytes); of libstdc++'s
 * 5891, none (661). */
#define DEMANGLE_MAX	   1024
/* Longest mangled name demangled (bytes with the NUL): the demangler's parse keeps about 70
 * bytes per input byte on the stack. The longest of libLLVM-14: 554 bytes; of libstdc++: 177. */
#define DEMANGLE_INPUT_MAX 1024

/*
 * Writes the demangled form of name into out (size bytes, at most DEMANGLE_MAX used; out is
 * written only on success). 0, or -EINVAL (not a mangled C++
 * name: C symbols are left alone), -ENAMETOOLONG (name is DEMANGLE_INPUT_MAX bytes or longer,
 * or its demangled form does not fit in size: the work stops there, whatever the name).
 */
int demangle_cxx(const char *name, char *out, size_t size);

#endif
