// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes demangle_cxx (daemon/native/demangle.c, libstdc++'s __cxa_demangle behind it) on symbol
 * names of at most FUZZ_MAX_NAME bytes, the bound a name gets before it is demangled: a
 * library's symbol names are whoever built it. Checked: only "_Z" names are taken, nothing is
 * written for a refused one, and the result does not depend on the buffer beyond fitting in it
 * (the same text in a buffer of its exact size, -ENAMETOOLONG in one byte less).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "native/demangle.h"

#define FUZZ_MAX_NAME 1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[DEMANGLE_MAX], again[DEMANGLE_MAX], *name;
	size_t len;
	int err;

	name = fuzz_strndup(data, size < FUZZ_MAX_NAME ? size : FUZZ_MAX_NAME);
	if (!name)
		return 0;
	memset(out, 0x5a, sizeof(out));
	err = demangle_cxx(name, out, sizeof(out));
	if (strncmp(name, "_Z", 2) != 0 && err != -EINVAL)
		abort(); /* a C name or junk demangled */
	if (err) {
		if (err != -EINVAL && err != -ENAMETOOLONG && err != -ENOMEM)
			abort();
		if (out[0] != 0x5a || out[sizeof(out) - 1] != 0x5a)
			abort(); /* written although refused */
		goto cleanup;
	}
	len = strnlen(out, sizeof(out));
	if (len == 0 || len == sizeof(out))
		abort(); /* empty, or not terminated */
	if (demangle_cxx(name, again, len + 1) != 0 || strcmp(again, out) != 0) {
		fprintf(stderr, "fuzz_demangle: \"%s\" differs in a buffer of its size\n", out);
		abort();
	}
	if (demangle_cxx(name, again, len) != -ENAMETOOLONG)
		abort();
cleanup:
	free(name);
	return 0;
}
