// SPDX-License-Identifier: GPL-2.0-only
/* fileio.c - small file helpers shared by the writers. */
#include <errno.h>
#include <unistd.h>

#include "fileio.h"

int fileio_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
