// SPDX-License-Identifier: GPL-2.0-only
/*
 * File checksums off the main loop (checksum.h): the value is zlib's CRC32 of the whole file, as
 * computed here by the test over the bytes it wrote; the first ask never waits for the read; a
 * file changed in place is read again; the cache and the queue keep their bounds and count what
 * they turn away.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "native/checksum.h"

static char dir[] = "/tmp/rp-checksum-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	checksum_stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(checksum, .init = setup, .fini = teardown, .timeout = 60);

/* Writes n pseudo-random bytes (seeded) to dir/name; returns an fd open for reading and the
 * bytes' CRC32 in *crc. */
static int make_file(const char *name, size_t n, unsigned int seed, uint32_t *crc)
{
	unsigned char *buf = malloc(n ? n : 1);
	char path[256];
	size_t i;
	int fd;

	cr_assert_not_null(buf);
	srand(seed);
	for (i = 0; i < n; i++)
		buf[i] = (unsigned char)rand();
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, buf, n), (ssize_t)n);
	*crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)n);
	free(buf);
	return fd;
}

/* checksum_crc32 asked until it answers (waiting for the worker in between). */
static int ask(int fd, uint32_t *crc)
{
	struct stat st;
	int i, err = -EINPROGRESS;

	cr_assert_eq(fstat(fd, &st), 0);
	for (i = 0; i < 4 && (err == -EINPROGRESS || err == -EAGAIN); i++) {
		err = checksum_crc32(fd, &st, crc);
		if (err == -EINPROGRESS || err == -EAGAIN)
			cr_assert(checksum_wait(20000));
	}
	return err;
}

Test(checksum, the_value_is_zlibs_crc32_of_the_whole_file)
{
	uint32_t want, got = 0;
	struct stat st;
	int fd = make_file("a", 3 << 20 | 12345, 1, &want);

	cr_assert_eq(fstat(fd, &st), 0);
	/* the first ask is queued, not read */
	cr_assert_eq(checksum_crc32(fd, &st, &got), -EINPROGRESS);
	close(fd); /* the worker has its own duplicate */
	cr_assert(checksum_wait(20000));
	cr_assert_eq(checksum_crc32(fd, &st, &got), 0, "from the cache, fd closed or not");
	cr_expect_eq(got, want, "crc %08x, want %08x", got, want);
}

Test(checksum, an_empty_file)
{
	uint32_t want, got = 1;
	int fd = make_file("e", 0, 1, &want);

	cr_assert_eq(ask(fd, &got), 0);
	cr_expect_eq(got, want);
	close(fd);
}

Test(checksum, a_file_changed_in_place_is_read_again)
{
	struct checksum_stats st;
	uint32_t want, got = 0;
	unsigned char b = 0x5a;
	int fd = make_file("c", 65536, 2, &want);

	cr_assert_eq(ask(fd, &got), 0);
	cr_assert_eq(got, want);
	usleep(20000); /* a ctime the filesystem tells from the first */
	cr_assert_eq(pwrite(fd, &b, 1, 100), 1);
	cr_assert_eq(ask(fd, &got), 0);
	cr_expect_neq(got, want, "the old value after a write");
	checksum_stats(&st);
	cr_expect_eq(st.computed, 2);
	close(fd);
}

Test(checksum, the_cache_is_bounded)
{
	struct checksum_stats st;
	uint32_t want, got;
	char name[16];
	int fd, i;

	for (i = 0; i < CHECKSUM_CACHE_MAX + 6; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		fd = make_file(name, 4096, (unsigned int)i, &want);
		cr_assert_eq(ask(fd, &got), 0);
		cr_assert_eq(got, want);
		close(fd);
	}
	checksum_stats(&st);
	cr_expect_eq(st.evicted, 6);
	cr_expect_eq(st.computed, CHECKSUM_CACHE_MAX + 6);
}

Test(checksum, a_full_queue_turns_asks_away)
{
	struct checksum_stats st;
	struct stat sb;
	uint32_t crc;
	char name[16], path[256];
	int fd, i, queued = 0, turned = 0, err;

	/* sparse files of 200 MiB: each takes the worker a while, the asks do not wait */
	for (i = 0; i < CHECKSUM_QUEUE_MAX + 4; i++) {
		snprintf(name, sizeof(name), "q%d", i);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		cr_assert(fd >= 0);
		cr_assert_eq(ftruncate(fd, 200LL << 20), 0);
		cr_assert_eq(fstat(fd, &sb), 0);
		err = checksum_crc32(fd, &sb, &crc);
		cr_assert(err == -EINPROGRESS || err == -EAGAIN, "err %d", err);
		queued += err == -EINPROGRESS;
		turned += err == -EAGAIN;
		close(fd);
	}
	checksum_stats(&st);
	/* the worker may have finished some meanwhile, making room: never more than the bound */
	cr_expect_geq(queued, CHECKSUM_QUEUE_MAX);
	cr_expect_eq(st.queue_full, (uint64_t)turned);
	cr_assert(checksum_wait(60000));
	checksum_stats(&st);
	cr_expect_eq(st.computed, (uint64_t)queued);
	cr_expect_eq(st.bytes, (uint64_t)queued * (200ULL << 20));
}
