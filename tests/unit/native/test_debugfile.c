// SPDX-License-Identifier: GPL-2.0-only
/*
 * Separate debug files (debugfile_find): a stripped fixture whose symbols live only in its
 * debug file, found the way gdb finds it, inside a directory that stands for the process's root:
 * by build id, then by .gnu_debuglink next to the object, in its .debug/ subdirectory and under
 * /usr/lib/debug/DIR. A file with the right name but the wrong build id or CRC is not taken, and
 * no symlink leads out of the root.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../fixture.h"
#include "lib/bounds.h"
#include "native/checksum.h"
#include "native/debugfile.h"
#include "native/elf.h"

/* The object's path as the (imaginary) process sees it. */
#define OBJECT	"/opt/fake/bin/fakeruby-stripped"
#define DBGNAME "fakeruby-hidden.debug" /* what its .gnu_debuglink names */

static char root[PATH_MAX];
static char outside[PATH_MAX];
static struct elf_file *obj;
static char build_id[128];

static void mkdirs(const char *path)
{
	char buf[PATH_MAX], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		cr_assert(mkdir(buf, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", buf,
			  strerror(errno));
		*p = '/';
	}
	cr_assert(mkdir(buf, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", buf, strerror(errno));
}

/* Copies fixture `name` to root + `dst` (creating directories). */
static void place(const char *name, const char *dst)
{
	char src[PATH_MAX], to[PATH_MAX * 2], dir[PATH_MAX * 2], buf[65536];
	FILE *in, *out;
	size_t n;

	fixture_path(src, sizeof(src), name);
	snprintf(to, sizeof(to), "%s%s", root, dst);
	snprintf(dir, sizeof(dir), "%s", to);
	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	in = fopen(src, "rb");
	out = fopen(to, "wb");
	cr_assert(in && out, "copy %s to %s", src, to);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		cr_assert_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	cr_assert_eq(fclose(out), 0);
}

static void build_id_path(char *buf, size_t len)
{
	snprintf(buf, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", build_id, build_id + 2);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void setup(void)
{
	char path[PATH_MAX];

	snprintf(root, sizeof(root), "/tmp/rp-debugfile-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(outside, sizeof(outside), "/tmp/rp-debugfile-out-XXXXXX");
	cr_assert_not_null(mkdtemp(outside));
	fixture_path(path, sizeof(path), "fakeruby-stripped");
	obj = elf_file__open(path);
	cr_assert_not_null(obj, "%s: %s", path, strerror(errno));
	cr_assert_eq(elf_build_id(obj, build_id, sizeof(build_id)), 0);
	/* the premise: the stripped object does not have the VM's symbols itself */
	cr_assert_neq(elf_find_symbol(obj, "ruby_current_ec", NULL), 0);
	cr_assert_neq(elf_find_symbol(obj, "rb_vm_exec", NULL), 0);
}

static void teardown(void)
{
	elf_file__free(obj);
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	nftw(outside, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * debugfile_find as discovery's retries see it: a .gnu_debuglink candidate's CRC32 is
 * computed off the main loop (checksum.h), so until it is known the answer is NULL with
 * EINPROGRESS; then asked again.
 */
static struct elf_file *ask(char *found, size_t len, const char **how)
{
	struct elf_file *dbg;
	int i;

	for (i = 0; i < 8; i++) {
		errno = 0;
		dbg = debugfile_find(root, OBJECT, obj, found, len, how);
		if (dbg || (errno != EINPROGRESS && errno != EAGAIN))
			return dbg;
		cr_assert(checksum_wait(10000), "no checksum within 10 s");
	}
	cr_assert_fail("still waiting for a checksum after 8 asks");
	return NULL;
}

/* Finds the debug file under root; checks where, how, and that it holds the hidden symbols. */
static void expect_found(const char *want_path, const char *want_how)
{
	struct elf_file *dbg;
	struct elf_sym sym;
	const char *how = NULL;
	char found[PATH_MAX];

	dbg = ask(found, sizeof(found), &how);
	cr_assert_not_null(dbg, "no debug file found (want %s): %s", want_path, strerror(errno));
	cr_assert_str_eq(found, want_path);
	cr_assert_str_eq(how, want_how);
	cr_assert_eq(elf_find_symbol(dbg, "ruby_current_ec", &sym), 0);
	cr_assert_eq(sym.type, STT_TLS);
	cr_assert_eq(sym.source, ELF_SYM_SYMTAB);
	cr_assert_eq(elf_find_symbol(dbg, "rb_vm_exec", &sym), 0);
	cr_assert_eq(sym.type, STT_FUNC);
	cr_assert_eq(elf_find_symbol(dbg, "ruby_global_symbols", &sym), 0);
	elf_file__free(dbg);
}

static void expect_none(void)
{
	const char *how = NULL;
	char found[PATH_MAX];

	cr_assert_null(ask(found, sizeof(found), &how));
	cr_assert_eq(errno, ENOENT, "errno %d (%s)", errno, strerror(errno));
}

TestSuite(debugfile, .init = setup, .fini = teardown);

Test(debugfile, nothing_there)
{
	expect_none();
}

Test(debugfile, by_build_id)
{
	char p[PATH_MAX];

	build_id_path(p, sizeof(p));
	place("fakeruby-hidden.debug", p);
	expect_found(p, "build id");
}

Test(debugfile, debuglink_next_to_the_object)
{
	place("fakeruby-hidden.debug", "/opt/fake/bin/" DBGNAME);
	expect_found("/opt/fake/bin/" DBGNAME, ".gnu_debuglink");
}

Test(debugfile, debuglink_in_debug_subdirectory)
{
	place("fakeruby-hidden.debug", "/opt/fake/bin/.debug/" DBGNAME);
	expect_found("/opt/fake/bin/.debug/" DBGNAME, ".gnu_debuglink");
}

Test(debugfile, debuglink_under_usr_lib_debug)
{
	place("fakeruby-hidden.debug", "/usr/lib/debug/opt/fake/bin/" DBGNAME);
	expect_found("/usr/lib/debug/opt/fake/bin/" DBGNAME, ".gnu_debuglink");
}

Test(debugfile, build_id_comes_first)
{
	char p[PATH_MAX];

	build_id_path(p, sizeof(p));
	place("fakeruby-hidden.debug", "/opt/fake/bin/" DBGNAME);
	place("fakeruby-hidden.debug", p);
	expect_found(p, "build id");
}

Test(debugfile, wrong_crc_is_not_taken)
{
	/* the right name, another file: its CRC32 is not the one .gnu_debuglink records */
	place("exetls", "/opt/fake/bin/" DBGNAME);
	place("exetls", "/opt/fake/bin/.debug/" DBGNAME);
	expect_none();
	/* the next location in gdb's order is still tried */
	place("fakeruby-hidden.debug", "/usr/lib/debug/opt/fake/bin/" DBGNAME);
	expect_found("/usr/lib/debug/opt/fake/bin/" DBGNAME, ".gnu_debuglink");
}

Test(debugfile, wrong_build_id_is_not_taken)
{
	char p[PATH_MAX];

	build_id_path(p, sizeof(p));
	place("exetls", p);
	expect_none();
	place("fakeruby-hidden.debug", "/opt/fake/bin/.debug/" DBGNAME);
	expect_found("/opt/fake/bin/.debug/" DBGNAME, ".gnu_debuglink");
}

Test(debugfile, links_are_not_followed)
{
	char target[PATH_MAX * 2], link[PATH_MAX * 2], p[PATH_MAX];

	/* An absolute symlink to a good debug file outside the root: as the process sees it, the
	 * target does not exist. */
	snprintf(target, sizeof(target), "%s/real.debug", outside);
	fixture_path(p, sizeof(p), "fakeruby-hidden.debug");
	cr_assert_eq(symlink(p, target), 0);
	mkdirs(strcat(strcpy(link, root), "/opt/fake/bin"));
	strcat(link, "/" DBGNAME);
	cr_assert_eq(symlink(target, link), 0, "symlink: %s", strerror(errno));
	expect_none();

	/* Nor once the same target exists inside the root: no link is followed at all (a link
	 * could lead onto a FUSE mount that the mount table check did not see, procs.h) */
	place("fakeruby-hidden.debug", target);
	expect_none();

	/* the debug file itself at the link's place is found */
	cr_assert_eq(unlink(link), 0);
	place("fakeruby-hidden.debug", "/opt/fake/bin/" DBGNAME);
	expect_found("/opt/fake/bin/" DBGNAME, ".gnu_debuglink");
}

/*
 * A device where a debug file is looked for (a symlink to /dev/zero, planted in a container's
 * image): never read. The CRC of /dev/zero would never end, and discovery with it.
 */
Test(debugfile, devices_are_not_read, .timeout = 20)
{
	char dev[PATH_MAX * 2], link[PATH_MAX * 2];

	mkdirs(strcat(strcpy(dev, root), "/dev"));
	strcat(dev, "/zero");
	if (mknod(dev, S_IFCHR | 0666, makedev(1, 5)))
		cr_skip_test("mknod %s: %s (needs root)", dev, strerror(errno));
	mkdirs(strcat(strcpy(link, root), "/opt/fake/bin/.debug"));
	strcat(link, "/" DBGNAME);
	cr_assert_eq(symlink("/dev/zero", link), 0, "symlink: %s", strerror(errno));
	expect_none();
	/* and a FIFO (opened without blocking, then refused) */
	cr_assert_eq(mkfifo(strcat(strcpy(link, root), "/opt/fake/bin/" DBGNAME), 0600), 0);
	expect_none();
}

/*
 * A debuglink naming a sparse file of 200 GB (a few KiB on disk): its CRC would be read whole at
 * the next scan for minutes. Past BOUND_FILE_BYTES it is not read, counted, and logged once for
 * the file; a debug file within the bound is still found.
 */
Test(debugfile, a_sparse_debug_file_past_the_bound_is_not_read, .timeout = 20)
{
	struct bounds_stats before, after;
	char path[PATH_MAX * 2], found[PATH_MAX];
	const char *how = NULL;
	int fd, i;

	snprintf(path, sizeof(path), "%s/opt/fake/bin", root);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/opt/fake/bin/" DBGNAME, root);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, 200LL << 30), 0);
	close(fd);
	bounds_stats(&before);
	for (i = 0; i < 2; i++)
		cr_expect_null(debugfile_find(root, OBJECT, obj, found, sizeof(found), &how));
	bounds_stats(&after);
	cr_expect_eq(after.refused[BOUND_FILE] - before.refused[BOUND_FILE], 2);
	cr_expect_eq(after.logged - before.logged, 1, "one log line for the file");
	/* the real one beside it, in .debug/, is still taken */
	place("fakeruby-hidden.debug", "/opt/fake/bin/.debug/" DBGNAME);
	expect_found("/opt/fake/bin/.debug/" DBGNAME, ".gnu_debuglink");
}

/*
 * The CRC32 of a debuglink candidate is never computed by the caller (the main loop): the first
 * ask answers EINPROGRESS at once, whatever the file's size, and a later ask has the answer.
 */
Test(debugfile, a_debuglink_checksum_is_computed_off_the_caller, .timeout = 60)
{
	struct checksum_stats st;
	char path[PATH_MAX * 2], found[PATH_MAX];
	const char *how = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/opt/fake/bin", root);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/opt/fake/bin/" DBGNAME, root);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(ftruncate(fd, 200LL << 20), 0); /* within the bound: it is read whole */
	close(fd);
	errno = 0;
	cr_assert_null(debugfile_find(root, OBJECT, obj, found, sizeof(found), &how));
	cr_assert_eq(errno, EINPROGRESS, "errno %d (%s)", errno, strerror(errno));
	cr_assert_str_eq(found, "/opt/fake/bin/" DBGNAME, "the candidate waited for is named");
	cr_assert(checksum_wait(30000));
	checksum_stats(&st);
	cr_expect_eq(st.computed, 1);
	cr_expect_eq(st.bytes, 200ULL << 20);
	/* known now (not this file's CRC): the next candidates are tried, none is there */
	expect_none();
	checksum_stats(&st);
	cr_expect_geq(st.hits, 1);
	checksum_stop();
}
