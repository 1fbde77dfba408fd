// SPDX-License-Identifier: GPL-2.0-only
/* C++ names demangled as their source spells them; C names and junk left alone. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixture.h"
#include "lib/clock.h"
#include "native/demangle.h"

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

/* libstdc++'s own demangler (C++ ABI): the independent answer the bounded one must match. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* The name of the issue: "_Z1fI1A", then n types B<X, X>, each X the type before it (a
 * back-reference), then "Evv". Its demangled form doubles with each: 2^n * 13 bytes. */
static void bomb(char *buf, size_t len, int n)
{
	static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	/* substitutions: f (0), A (1), then per type its name B and the type itself */
	int prev = 1, next = 2, k, id;
	size_t at;
	char ref[16];

	at = (size_t)snprintf(buf, len, "_Z1fI1A");
	for (k = 0; k < n; k++) {
		/* S<seq-id>_ names substitution id + 1 in base 36 (S_ is 0) */
		id = prev - 1;
		if (id < 36)
			snprintf(ref, sizeof(ref), "S%c_", digits[id]);
		else
			snprintf(ref, sizeof(ref), "S%c%c_", digits[id / 36], digits[id % 36]);
		at += (size_t)snprintf(buf + at, len - at, "1BI%s%sE", ref, ref);
		next++; /* the name B */
		prev = next++;
	}
	snprintf(buf + at, len - at, "Evv");
}

Test(demangle, back_reference_bomb_is_cut_at_the_output_bound)
{
	char name[DEMANGLE_INPUT_MAX], out[DEMANGLE_MAX], *d;
	int64_t t0, ms;
	long rss0;
	int status;

	/* the generator is right: 3 levels demangle as libstdc++ says */
	bomb(name, sizeof(name), 3);
	d = __cxa_demangle(name, NULL, NULL, &status);
	cr_assert_not_null(d);
	cr_assert_str_eq(d, "void f<A, B<A, A>, B<B<A, A>, B<A, A> >, B<B<B<A, A>, B<A, A> >, "
			    "B<B<A, A>, B<A, A> > > >()");
	cr_assert_eq(demangle_cxx(name, out, sizeof(out)), 0);
	cr_assert_str_eq(out, d);
	free(d);

	/* the 286 bytes (872 MB and 10 s through __cxa_demangle), and 60 levels (2^60) */
	bomb(name, sizeof(name), 26);
	cr_assert_geq(strlen(name), 280);
	rss0 = status_kib("VmHWM:");
	t0 = clock_mono_ns();
	cr_assert_eq(demangle_cxx(name, out, sizeof(out)), -ENAMETOOLONG);
	bomb(name, sizeof(name), 60);
	cr_assert_lt(strlen(name), sizeof(name) - 1);
	cr_assert_eq(demangle_cxx(name, out, sizeof(out)), -ENAMETOOLONG);
	ms = (clock_mono_ns() - t0) / 1000000;
	cr_assert_lt(ms, 100, "both bombs took %lld ms", (long long)ms);
	cr_assert_lt(status_kib("VmHWM:") - rss0, 4096, "peak RSS grew by %ld KiB",
		     status_kib("VmHWM:") - rss0);
}

Test(demangle, input_bound)
{
	char name[DEMANGLE_INPUT_MAX + 16], out[DEMANGLE_MAX];
	size_t n;

	/* _Z3fooIiiii...iEvv: the longest accepted, then one byte more */
	n = DEMANGLE_INPUT_MAX - 1;
	memset(name, 'i', n);
	memcpy(name, "_Z3fooI", 7);
	memcpy(name + n - 3, "Evv", 4);
	cr_assert_eq(strlen(name), DEMANGLE_INPUT_MAX - 1);
	/* accepted, but "int, " per byte passes the output bound */
	cr_assert_eq(demangle_cxx(name, out, sizeof(out)), -ENAMETOOLONG);
	memcpy(name + 200, "Evv", 4);
	cr_assert_eq(demangle_cxx(name, out, sizeof(out)), 0);
	cr_assert(strstr(out, "void foo<int, int, "));
	memset(name, 'i', DEMANGLE_INPUT_MAX);
	memcpy(name, "_Z3fooI", 7);
	memcpy(name + DEMANGLE_INPUT_MAX - 3, "Evv", 4);
	cr_assert_eq(strlen(name), DEMANGLE_INPUT_MAX);
	cr_assert_eq(demangle_cxx(name, out, sizeof(out)), -ENAMETOOLONG);
}

/* The path of the loaded object that holds addr. */
static const char *object_of(const void *addr)
{
	Dl_info info;

	cr_assert(dladdr(addr, &info) && info.dli_fname);
	return info.dli_fname;
}

Test(demangle, matches_libstdcxx_on_its_own_names)
{
	char out[DEMANGLE_MAX], *d;
	size_t i, n, checked = 0, too_long = 0;
	const char *name;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	int fd, status, r;
	Elf *elf;

	fd = open(object_of((void *)__cxa_demangle), O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		data = elf_getdata(scn, NULL);
		n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (i = 0; i < n; i++) {
			if (!gelf_getsym(data, (int)i, &sym))
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || strncmp(name, "_Z", 2))
				continue;
			d = __cxa_demangle(name, NULL, NULL, &status);
			r = demangle_cxx(name, out, sizeof(out));
			if (d && strlen(d) >= sizeof(out)) {
				cr_assert_eq(r, -ENAMETOOLONG, "%s", name);
				too_long++;
			} else if (d) {
				cr_assert_eq(r, 0, "%s", name);
				cr_assert_str_eq(out, d, "%s", name);
				checked++;
			} else {
				cr_assert_neq(r, 0, "%s", name);
			}
			free(d);
		}
	}
	elf_end(elf);
	close(fd);
	/* libstdc++ 12 exports about 5900 C++ names */
	cr_assert_gt(checked, 3000, "%zu names compared, %zu too long", checked, too_long);
}
