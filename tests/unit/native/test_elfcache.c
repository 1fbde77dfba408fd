// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shared ELF objects on real files: this test binary, a copy of it (another inode, the same
 * build id), and libc; opened twice, shared once, freed with the last reference. And hostile
 * ones: sparse files of 120 MiB, a symbol table past the object's bound, a section count of
 * millions, a string table with no NUL at its end.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../elfedit.h"
#include "../fixture.h"
#include "lib/bounds.h"
#include "native/elfcache.h"

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
	/* the image: headers, CFI, symbols and notes, not the code */
	cr_assert_gt(st.bytes, 0);
	cr_assert_lt(st.bytes, (uint64_t)self.st_size / 2, "%llu bytes of %lld",
		     (unsigned long long)st.bytes, (long long)self.st_size);

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

/* A file the full cache refuses (ENOSPC); its fd, which elfcache_get took. */
static int refused_full(struct elfcache *c, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_null(elfcache_get(c, fd, NULL));
	cr_assert_eq(errno, ENOSPC);
	return fd;
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
	fd = refused_full(c, "/bin/sh");
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
	struct elfcache *c;
	struct elfcache_obj *a;
	uint64_t image;

	c = elfcache__new(0, 0);
	a = elfcache_get(c, open_self(), NULL);
	cr_assert_not_null(a);
	elfcache_stats(c, &st);
	image = st.bytes;
	elfcache_put(c, a);
	elfcache__free(c);
	/* room for this binary's image, not for libc's beside it */
	c = elfcache__new(0, image + 4096);
	a = elfcache_get(c, open_self(), NULL);
	cr_assert_not_null(a);
	refused_full(c, "/lib/x86_64-linux-gnu/libc.so.6");
	cr_assert_eq(elfcache_reserve(c, 8192), -ENOSPC);
	elfcache_stats(c, &st);
	cr_assert_eq(st.full_bytes, 2);
	cr_assert_eq(st.bytes, image);
	cr_assert_eq(elfcache_reserve(c, 4096), 0);
	elfcache_release(c, 4096);
	elfcache_put(c, a);
	elfcache_stats(c, &st);
	cr_assert_eq(st.bytes, 0);
	elfcache__free(c);
}

/* ---- hostile objects --------------------------------------------------------------------- */

#define SPARSE_SIZE (120ULL << 20)

/* A copy of this binary, writable, its path in path. */
static int writable_copy(char *path, size_t size)
{
	int fd = open_copy(path, size);

	close(fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	return fd;
}

/*
 * Three sparse 120 MiB objects held at once: copies of this binary grown to 120 MiB with a hole,
 * their .text (the largest section) claiming the hole. Read whole they would take 360 MiB (the
 * third refused at a byte bound); their images take what the real parts take.
 */
Test(elfcache, sparse_objects_cost_their_parts)
{
	struct elfcache *c = elfcache__new(0, 0);
	struct elfcache_obj *o[3];
	struct elfcache_stats st;
	char path[3][64];
	long rss0, rss1;
	Elf64_Shdr sh;
	Elf64_Ehdr eh;
	size_t i, idx;
	int fd;

	rss0 = status_kib("VmRSS:");
	for (i = 0; i < 3; i++) {
		fd = writable_copy(path[i], sizeof(path[i]));
		idx = find_section(fd, SHT_PROGBITS, &sh);
		/* the .text: the PROGBITS section with code */
		pread_all(fd, &eh, sizeof(eh), 0);
		for (; idx < eh.e_shnum; idx++) {
			pread_all(fd, &sh, sizeof(sh), (off_t)(eh.e_shoff + idx * sizeof(sh)));
			if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) &&
			    sh.sh_size > 65536)
				break;
		}
		cr_assert_lt(idx, eh.e_shnum, "no .text");
		sh.sh_size = SPARSE_SIZE - (8ULL << 20);
		write_section(fd, idx, &sh);
		/* a build id of its own (the last byte of each note): three objects, not one */
		for (idx = 1; idx < eh.e_shnum; idx++) {
			unsigned char b;

			pread_all(fd, &sh, sizeof(sh), (off_t)(eh.e_shoff + idx * sizeof(sh)));
			if (sh.sh_type != SHT_NOTE)
				continue;
			pread_all(fd, &b, 1, (off_t)(sh.sh_offset + sh.sh_size - 1));
			b ^= (unsigned char)(i + 1);
			pwrite_all(fd, &b, 1, (off_t)(sh.sh_offset + sh.sh_size - 1));
		}
		cr_assert_eq(ftruncate(fd, (off_t)SPARSE_SIZE), 0);
		close(fd);
		fd = open(path[i], O_RDONLY | O_CLOEXEC);
		o[i] = elfcache_get(c, fd, path[i]);
		cr_assert_not_null(o[i], "%s: %s", path[i], strerror(errno));
	}
	rss1 = status_kib("VmRSS:");
	elfcache_stats(c, &st);
	cr_assert_eq(st.misses, 3);
	cr_assert_eq(st.objects, 3);
	cr_assert_lt(st.bytes, 4ULL << 20, "%llu bytes held", (unsigned long long)st.bytes);
	cr_assert_lt(rss1 - rss0, 16 * 1024, "RSS grew by %ld KiB", rss1 - rss0);
	cr_assert_lt(status_kib("VmHWM:"), 64 * 1024, "peak RSS %ld KiB", status_kib("VmHWM:"));
	for (i = 0; i < 3; i++) {
		elfcache_put(c, o[i]);
		unlink(path[i]);
	}
	elfcache__free(c);
}

/* The file at path is refused (err) and counted once under bound: the counts before and after. */
static void refused_at_bound(struct elfcache *c, const char *path, int err, enum bound_id bound,
			     struct bounds_stats *before, struct bounds_stats *after)
{
	bounds_stats(before);
	cr_assert_null(elfcache_get(c, open(path, O_RDONLY | O_CLOEXEC), path));
	cr_assert_eq(errno, err);
	bounds_stats(after);
	cr_assert_eq(after->refused[bound], before->refused[bound] + 1);
}

/* A symbol table that claims 100 MiB (sparse): the object is refused before a byte of it is read,
 * counted by bound and said once. */
Test(elfcache, parts_past_the_bound_are_refused)
{
	struct elfcache *c = elfcache__new(0, 0);
	struct bounds_stats b0, b1;
	char path[64];
	Elf64_Shdr sh;
	struct stat fst;
	size_t idx;
	int fd;

	fd = writable_copy(path, sizeof(path));
	idx = find_section(fd, SHT_SYMTAB, &sh);
	cr_assert_eq(fstat(fd, &fst), 0);
	sh.sh_offset = (uint64_t)fst.st_size;
	sh.sh_size = (100ULL << 20) / sizeof(Elf64_Sym) * sizeof(Elf64_Sym);
	write_section(fd, idx, &sh);
	cr_assert_eq(ftruncate(fd, (off_t)(sh.sh_offset + sh.sh_size)), 0);
	close(fd);
	refused_at_bound(c, path, EFBIG, BOUND_OBJECT, &b0, &b1);
	cr_assert_eq(b1.logged, b0.logged + 1);
	/* again: counted, not logged again */
	refused_at_bound(c, path, EFBIG, BOUND_OBJECT, &b1, &b0);
	cr_assert_eq(b0.logged, b1.logged);
	unlink(path);
	elfcache__free(c);
}

/* e_shnum 0: the count is section 0's sh_size, here 2 million (a sparse 128 MiB table): refused,
 * never a structure per claimed section. */
Test(elfcache, extended_section_count_is_bounded)
{
	struct elfcache *c = elfcache__new(0, 0);
	struct bounds_stats b0, b1;
	uint64_t count = 2000000;
	char path[64];
	Elf64_Shdr sh0;
	Elf64_Ehdr eh;
	int fd;

	fd = writable_copy(path, sizeof(path));
	pread_all(fd, &eh, sizeof(eh), 0);
	pread_all(fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff);
	eh.e_shnum = 0;
	sh0.sh_size = count;
	pwrite_all(fd, &eh, sizeof(eh), 0);
	pwrite_all(fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff);
	cr_assert_eq(ftruncate(fd, (off_t)(eh.e_shoff + count * sizeof(sh0))), 0);
	close(fd);
	refused_at_bound(c, path, ENOEXEC, BOUND_SECTIONS, &b0, &b1);
	cr_assert_lt(status_kib("VmHWM:"), 64 * 1024);
	unlink(path);
	elfcache__free(c);
}

/* A string table whose last byte is not a NUL: the image's is (libelf's elf_strptr would scan
 * the table from its end on every name otherwise), and the names before it are intact. */
Test(elfcache, string_tables_end_in_nul)
{
	struct elfcache *c = elfcache__new(0, 0);
	struct elfcache_obj *o;
	struct stat st;
	uint64_t bytes, needed;
	char path[64], last = 'x', *img;
	Elf64_Shdr sh, ish;
	Elf64_Ehdr ieh;
	size_t idx;
	int fd, mfd;

	fd = writable_copy(path, sizeof(path));
	find_section(fd, SHT_SYMTAB, &sh);
	idx = sh.sh_link;
	pread_all(fd, &ieh, sizeof(ieh), 0);
	pread_all(fd, &sh, sizeof(sh), (off_t)(ieh.e_shoff + idx * sizeof(sh)));
	cr_assert_eq(sh.sh_type, SHT_STRTAB);
	pwrite_all(fd, &last, 1, (off_t)(sh.sh_offset + sh.sh_size - 1));
	cr_assert_eq(fstat(fd, &st), 0);
	mfd = elfcache_image(fd, &st, 16ULL << 20, &bytes, &needed);
	cr_assert_geq(mfd, 0, "%s", strerror(-mfd));
	cr_assert_leq(bytes, needed + 64);
	img = malloc(bytes);
	pread_all(mfd, img, bytes, 0);
	memcpy(&ieh, img, sizeof(ieh));
	memcpy(&ish, img + ieh.e_shoff + idx * sizeof(ish), sizeof(ish));
	cr_assert_eq(ish.sh_size, sh.sh_size);
	cr_assert_eq(img[ish.sh_offset + ish.sh_size - 1], '\0');
	cr_assert_eq(img[ish.sh_offset], '\0', "the table's first byte is its empty name");
	/* the code is not read: SHT_NOBITS in the image */
	for (idx = 1; idx < ieh.e_shnum; idx++) {
		memcpy(&ish, img + ieh.e_shoff + idx * sizeof(ish), sizeof(ish));
		cr_assert(!(ish.sh_flags & SHF_EXECINSTR) || ish.sh_type == SHT_NOBITS);
	}
	free(img);
	close(mfd);
	close(fd);
	o = elfcache_get(c, open(path, O_RDONLY | O_CLOEXEC), path);
	cr_assert_not_null(o);
	elfcache_put(c, o);
	unlink(path);
	elfcache__free(c);
}

/* A file of an ELF header and `n` empty sections: an image of 64 * (n + 1) bytes. */
static int many_sections(char *path, size_t size, unsigned int n)
{
	Elf64_Ehdr eh = elf_header();
	Elf64_Shdr *sh = calloc(n, sizeof(*sh));
	int fd;

	snprintf(path, size, "/tmp/rp-elfcache-shnum-XXXXXX");
	fd = mkstemp(path);
	cr_assert(fd >= 0 && sh);
	eh.e_shoff = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (Elf64_Half)n;
	pwrite_all(fd, &eh, sizeof(eh), 0);
	pwrite_all(fd, sh, n * sizeof(*sh), sizeof(eh));
	free(sh);
	return fd;
}

/*
 * Objects of 4096 sections (the section bound): their images are 256 KiB, but libelf keeps 1 MiB
 * for each once it reads them, which the byte bound did not count: twenty in a mixed stack took
 * 15 MiB more than the cache's figure said (a tenant's 90, within its 24 MiB of images, 90 MiB).
 * Each section now counts ELFCACHE_SECTION_COST: with 8 MiB for the cache, six of 30 fit, and
 * the process grows by what the bound says.
 */
Test(elfcache, libelf_per_section_memory_counts_against_the_byte_bound)
{
	enum { OBJECTS = 30, SECTIONS = 4096 };
	struct elfcache_obj *objs[OBJECTS];
	char paths[OBJECTS][64];
	struct elfcache_stats st;
	struct elfcache *c;
	long rss0;
	int i, got = 0;

	c = elfcache__new(0, 8ULL << 20);
	cr_assert_not_null(c);
	rss0 = status_kib("VmRSS:");
	for (i = 0; i < OBJECTS; i++) {
		objs[i] =
			elfcache_get(c, many_sections(paths[i], sizeof(paths[i]), SECTIONS), NULL);
		got += objs[i] != NULL;
	}
	elfcache_stats(c, &st);
	cr_expect_leq(st.bytes, 8ULL << 20);
	cr_expect_geq(st.bytes, (uint64_t)got * SECTIONS * ELFCACHE_SECTION_COST);
	cr_expect_lt(got, OBJECTS, "all %d objects taken", got);
	cr_expect_gt(got, 0);
	/* what the process holds for them stays near what the bound counts (not under ASan,
	 * whose redzones and quarantine hold 4-5 times what libelf asked for: 28 MiB for 6) */
#if !defined(__SANITIZE_ADDRESS__)
	cr_expect_lt(status_kib("VmRSS:") - rss0, 12 * 1024, "RSS grew by %ld KiB for %d objects",
		     status_kib("VmRSS:") - rss0, got);
#else
	(void)rss0;
#endif
	for (i = 0; i < OBJECTS; i++) {
		elfcache_put(c, objs[i]);
		unlink(paths[i]);
	}
	elfcache__free(c);
}
