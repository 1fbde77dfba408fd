/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * checksum.h - the CRC32 of a whole file (a debug file that .gnu_debuglink names), computed off
 * the main loop. A file of up to BOUND_FILE_BYTES read at page-cache speed takes ~0.2 s, and many
 * times that from a cold disk: too long for the loop that samples, serves the metrics endpoint
 * and pets the watchdog. So the first ask queues the file to one worker thread and answers
 * -EINPROGRESS; the caller (discovery) asks again at its next try and gets the value from a
 * bounded cache keyed by the file's device, inode, size and ctime.
 */
#ifndef RP_CHECKSUM_H
#define RP_CHECKSUM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* Files remembered (the least recently asked for goes first), and waiting for the worker. */
#define CHECKSUM_CACHE_MAX 64
#define CHECKSUM_QUEUE_MAX 8

struct checksum_stats {
	uint64_t computed;   /* files checksummed by the worker */
	uint64_t bytes;	     /* bytes it read */
	uint64_t failed;     /* reads that failed (or a file that grew past the bound) */
	uint64_t hits;	     /* answers from the cache */
	uint64_t queue_full; /* asks turned away: CHECKSUM_QUEUE_MAX files were waiting */
	uint64_t evicted;    /* answers dropped from the cache at its bound */
};

/*
 * The CRC32 (zlib's, as .gnu_debuglink records it) of the regular file open at fd, whose fstat
 * is st (its size at most BOUND_FILE_BYTES: the caller checks the bound). 0 with *crc; or
 * -EINPROGRESS: queued or being read, ask again later; -EAGAIN: the queue is full, ask again
 * later; another -errno: the read failed (remembered like a value, until the file changes). The
 * worker reads its own duplicate of fd: the caller may close fd at once.
 */
int checksum_crc32(int fd, const struct stat *st, uint32_t *crc);

/* Files queued or being read now. */
unsigned int checksum_pending(void);

/* Waits until no file is queued or being read, for up to timeout_ms. Whether none is. */
bool checksum_wait(int timeout_ms);

/* Stops the worker (the file it reads is abandoned between two reads) and forgets the cache. */
void checksum_stop(void);

void checksum_stats(struct checksum_stats *out);

#endif
