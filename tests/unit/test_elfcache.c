// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shared ELF objects on real files: this test binary, a copy of it (another inode, the same
 * build id), and libc; opened twice, shared once, freed with the last reference.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfcache.h"

static int open_self(void)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	return fd;
}

/* A copy of this binary in a new file: another inode, the same bytes and build id. */
static int open_copy(char *path, size_t size)
{
	char buf[65536];
	ssize_t n;
	int in = open_self(), out;

	snprintf(path, size, "/tmp/rp-elfcache-XXXXXX");
	out = mkstemp(path);
	cr_assert_geq(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	out = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(out, 0);
	return out;
}

Test(elfcache, same_file_and_same_build_id_are_shared)
{
	struct elfcache *c = elfcache__new(0, 0);
	struct elfcache_obj *a, *b, *copy;
	struct elfcache_stats st;
	struct stat self;
	char path[64];
	Elf *e;

	cr_assert_not_null(c);
	a = elfcache_get(c, open_self(), NULL);
	cr_assert_not_null(a, "%s", strerror(errno));
	cr_assert_eq(strlen(elfcache_obj_build_id(a)), 40, "build id '%s'",
		     elfcache_obj_build_id(a));
	b = elfcache_get(c, open_self(), NULL);
	cr_assert_eq(a, b, "the same file is one object");
	copy = elfcache_get(c, open_copy(path, sizeof(path)), NULL);
	unlink(path);
	cr_assert_eq(a, copy, "a copy with the same build id is the same object");
	elfcache_stats(c, &st);
	cr_assert_eq(st.misses, 1);
	cr_assert_eq(st.hits, 2);
	cr_assert_eq(st.objects, 1);
	cr_assert_eq(stat("/proc/self/exe", &self), 0);
	cr_assert_eq(st.bytes, (uint64_t)self.st_size);

	/* a holder's reference outlives the cache's */
	e = elfcache_obj_elf(a);
	cr_assert_eq(elf_kind(e), ELF_K_ELF);
	elfcache_put(c, a);
	elfcache_put(c, b);
	elfcache_stats(c, &st);
	cr_assert_eq(st.freed, 0, "one reference is left");
	elfcache_put(c, copy);
	elfcache_stats(c, &st);
	cr_assert_eq(st.freed, 1);
	cr_assert_eq(st.objects, 0);
	cr_assert_eq(st.bytes, 0);
	cr_assert_not_null(elf_getident(e, NULL), "the holder's Elf is still readable");
	cr_assert_eq(elf_end(e), 0);
	elfcache__free(c);
}

Test(elfcache, bound_and_non_elf)
{
	struct elfcache *c = elfcache__new(1, 0);
	struct elfcache_obj *a;
	struct elfcache_stats st;
	int fd;

	a = elfcache_get(c, open_self(), NULL);
	cr_assert_not_null(a);
	/* full: another file is refused (never handed to libdwfl to map), closed, and counted */
	fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_null(elfcache_get(c, fd, NULL));
	cr_assert_eq(errno, ENOSPC);
	cr_assert_eq(fcntl(fd, F_GETFD), -1, "the fd is closed");
	elfcache_stats(c, &st);
	cr_assert_eq(st.full, 1);
	cr_assert_eq(st.peak, 1);
	/* the same file as the one held is still shared at the bound */
	cr_assert_eq(elfcache_get(c, open_self(), NULL), a);
	elfcache_put(c, a);
	elfcache_put(c, a);
	/* not ELF: refused, fd closed, counted */
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	cr_assert_null(elfcache_get(c, fd, NULL));
	cr_assert_eq(errno, ENOEXEC);
	cr_assert_eq(fcntl(fd, F_GETFD), -1);
	elfcache_stats(c, &st);
	cr_assert_eq(st.unreadable, 1);
	elfcache__free(c);
}

/* A copy of this binary that the test can truncate (its path in path). */
static int copy_fd(char *path, size_t size)
{
	int fd = open_copy(path, size);

	return fd;
}

Test(elfcache, truncated_file_is_read_not_mapped)
{
	struct elfcache *c = elfcache__new(0, 0);
	struct elfcache_obj *o;
	struct stat self;
	Elf_Scn *scn = NULL;
	Elf_Data *d;
	size_t n = 0, sum = 0, i;
	char path[64];
	int fd;
	Elf *e;

	cr_assert_not_null(c);
	fd = copy_fd(path, sizeof(path));
	o = elfcache_get(c, fd, path);
	cr_assert_not_null(o, "%s", strerror(errno));
	e = elfcache_obj_elf(o);
	/* the owner truncates the file: what was read stays, no page of it is a mapping (a mapped
	 * copy dies of SIGBUS on the first section read below) */
	cr_assert_eq(truncate(path, 0), 0);
	cr_assert_eq(stat("/proc/self/exe", &self), 0);
	while ((scn = elf_nextscn(e, scn))) {
		d = elf_getdata(scn, NULL);
		for (i = 0; d && d->d_buf && i < d->d_size; i++)
			sum += ((const unsigned char *)d->d_buf)[i];
		n++;
	}
	cr_assert_gt(n, 10, "%zu sections read", n);
	cr_assert_gt(sum, 0);
	unlink(path);
	elf_end(e);
	elfcache_put(c, o);
	elfcache__free(c);
}

Test(elfcache, byte_bound)
{
	struct elfcache_stats st;
	struct stat self;
	struct elfcache *c;
	struct elfcache_obj *a;
	int fd;

	cr_assert_eq(stat("/proc/self/exe", &self), 0);
	/* room for this binary, not for libc beside it */
	c = elfcache__new(0, (uint64_t)self.st_size + 4096);
	a = elfcache_get(c, open_self(), NULL);
	cr_assert_not_null(a);
	fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_null(elfcache_get(c, fd, NULL));
	cr_assert_eq(errno, ENOSPC);
	cr_assert_eq(elfcache_reserve(c, 8192), -ENOSPC);
	elfcache_stats(c, &st);
	cr_assert_eq(st.full_bytes, 2);
	cr_assert_eq(st.bytes, (uint64_t)self.st_size);
	cr_assert_eq(elfcache_reserve(c, 4096), 0);
	elfcache_release(c, 4096);
	elfcache_put(c, a);
	elfcache_stats(c, &st);
	cr_assert_eq(st.bytes, 0);
	elfcache__free(c);
}
