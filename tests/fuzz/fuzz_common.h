/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fuzz_common.h - helpers shared by the libFuzzer targets (tests/fuzz/fuzz_*.c): inputs as files
 * for the APIs that take a path, and as NUL-terminated strings for the text parsers.
 */
#ifndef RP_FUZZ_COMMON_H
#define RP_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The input as a file: a memfd (no disk traffic per execution), named by its /proc/self/fd path
 * in path[len]. Returns the fd (the caller closes it) or -1.
 */
static inline int fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t done = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (done < size) {
		n = write(fd, data + done, size - done);
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* A NUL-terminated copy of data (the parsers take C strings); NULL when out of memory. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return NULL;
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
