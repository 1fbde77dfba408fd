/* SPDX-License-Identifier: GPL-2.0-only */
/* fileio.h - small file helpers shared by the writers (pprof files, the spool). */
#ifndef RP_FILEIO_H
#define RP_FILEIO_H

#include <stddef.h>

/* Writes all of data to fd, across short writes and EINTR. 0 or -errno (-ENOSPC: disk full). */
int fileio_write_all(int fd, const void *data, size_t len);

#endif
