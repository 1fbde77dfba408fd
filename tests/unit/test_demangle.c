// SPDX-License-Identifier: GPL-2.0-only
/* C++ names demangled as their source spells them; C names and junk left alone. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "demangle.h"

Test(demangle, cxx_names)
{
	char out[DEMANGLE_MAX];

	cr_assert_eq(demangle_cxx("_ZN2ns5Class6methodEi", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "ns::Class::method(int)");
	cr_assert_eq(demangle_cxx("_ZNKSt6vectorIiSaIiEE4sizeEv", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "std::vector<int, std::allocator<int> >::size() const");
	/* GCC's split-off parts keep their clone suffix */
	cr_assert_eq(demangle_cxx("_ZN2ns5Class6methodEi.cold", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "ns::Class::method(int) [clone .cold]");
}

Test(demangle, not_cxx)
{
	char out[DEMANGLE_MAX] = "";

	/* C symbols, and what __cxa_demangle would read as a type ("i" is "int") */
	cr_assert_eq(demangle_cxx("deflate", out, sizeof(out)), -EINVAL);
	cr_assert_eq(demangle_cxx("i", out, sizeof(out)), -EINVAL);
	cr_assert_eq(demangle_cxx("_Zjunk", out, sizeof(out)), -EINVAL);
	cr_assert_eq(demangle_cxx(NULL, out, sizeof(out)), -EINVAL);
	cr_assert_str_eq(out, "", "nothing written");
	/* too long for the caller's buffer: left to the caller, not cut */
	cr_assert_eq(demangle_cxx("_ZN2ns5Class6methodEi", out, 8), -ENAMETOOLONG);
}
