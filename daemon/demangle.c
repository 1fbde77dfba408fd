// SPDX-License-Identifier: GPL-2.0-only
/* demangle.c - C++ names demangled by libstdc++'s Itanium ABI demangler. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

/* libstdc++'s C entry (the C++ ABI's, declared in <cxxabi.h>, which C cannot include): a
 * malloc'd demangled name, or NULL with *status -1 (memory), -2 (not a mangled name), -3. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

int demangle_cxx(const char *name, char *out, size_t size)
{
	char *d = NULL;
	int status = 0, err = 0;
	size_t len;

	/* only the ABI's own prefix: __cxa_demangle also takes bare type names ("i" is "int") */
	if (!name || strncmp(name, "_Z", 2) != 0) {
		err = -EINVAL;
		goto cleanup;
	}
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d) {
		err = status == -1 ? -ENOMEM : -EINVAL;
		goto cleanup;
	}
	len = strlen(d);
	if (len >= size) {
		err = -ENAMETOOLONG;
		goto cleanup;
	}
	memcpy(out, d, len + 1);
cleanup:
	free(d);
	return err;
}
