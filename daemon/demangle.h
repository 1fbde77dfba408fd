/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * demangle.h - C++ symbol names as their source spells them ("_ZN2ns5Class6methodEi" ->
 * "ns::Class::method(int)"), with the Itanium C++ ABI's demangler of libstdc++
 * (__cxa_demangle), the one the compilers that made the names ship.
 */
#ifndef RP_DEMANGLE_H
#define RP_DEMANGLE_H

#include <stddef.h>

/* Longest demangled name kept (bytes with the NUL); a longer one stays mangled. */
#define DEMANGLE_MAX 1024

/*
 * Writes the demangled form of name into out (size bytes). 0, or -EINVAL (not a mangled C++
 * name: C symbols are left alone), -ENAMETOOLONG (it does not fit), -ENOMEM.
 */
int demangle_cxx(const char *name, char *out, size_t size);

#endif
