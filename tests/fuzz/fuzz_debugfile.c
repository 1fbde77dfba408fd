// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes separate debug file handling (debugfile_find in daemon/native/debugfile.c, then
 * daemon/native/elf.c on the file it takes): the input is the debug file of a fixed real object,
 * the unit tests' stripped fixture (RP_BUILD/fixtures/libtlsfix-stripped.so, RP_BUILD defaulting
 * to "build"), which a process's root (a directory made once) holds where gdb looks for it. The
 * debug file belongs to whoever owns that root. The last byte of the input picks the place:
 *   0  /usr/lib/debug/.build-id/xx/rest.debug: the object's build id note is set to the input's
 *      (when it has one), so that the lookup goes on to open and check it
 *   1  next to the object, 2  in its .debug/ directory: the object's .gnu_debuglink CRC is set to
 *      the input's CRC32, so that the file is opened as an ELF
 *   3  under /usr/lib/debug/DIR/ with the object's own CRC: the mismatch path
 * Then every lookup the discovery makes runs on the debug file that was taken.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fuzz_common.h"
#include "native/checksum.h"
#include "native/debugfile.h"
#include "native/elf.h"

#define OBJECT_DIR  "/opt/app"
#define OBJECT_PATH OBJECT_DIR "/libtlsfix-stripped.so"

static struct {
	uint8_t *obj; /* the object's bytes, patched per input in copy */
	uint8_t *copy;
	size_t len;
	size_t id_off, id_len; /* the build id's bytes in the file */
	size_t crc_off;	       /* the .gnu_debuglink CRC in the file */
	char link[256];	       /* the name .gnu_debuglink records */
	char root[PATH_MAX];
	char placed[PATH_MAX * 2]; /* the debug file written for the last input, "" for none */
} fx;

static void die(const char *what) __attribute__((noreturn));
static void die(const char *what)
{
	fprintf(stderr, "fuzz_debugfile: %s: %s\n", what, strerror(errno));
	abort();
}

static int hexval(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/* Binary form of a hex build id; its length. */
static size_t unhex(const char *hex, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (hex[0] && hex[1] && n < max) {
		out[n++] = (uint8_t)(hexval(hex[0]) << 4 | hexval(hex[1]));
		hex += 2;
	}
	return n;
}

static size_t find(const uint8_t *hay, size_t len, const void *needle, size_t n)
{
	const uint8_t *p = memmem(hay, len, needle, n);

	return p ? (size_t)(p - hay) : 0;
}

static void mkdirs(const char *path)
{
	char buf[PATH_MAX * 2], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			die(buf);
		*p = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		die(buf);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* The root made at start goes at exit (libFuzzer ends with exit()). */
static void remove_root(void)
{
	if (fx.root[0])
		nftw(fx.root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *build = getenv("RP_BUILD");
	char path[PATH_MAX], hex[128], dir[PATH_MAX * 2];
	uint8_t id[64];
	struct elf_file *ef;
	uint32_t crc;
	FILE *fp;
	long n;

	snprintf(path, sizeof(path), "%s/fixtures/libtlsfix-stripped.so", build ? build : "build");
	fp = fopen(path, "rb");
	if (!fp || fseek(fp, 0, SEEK_END) || (n = ftell(fp)) <= 0 || fseek(fp, 0, SEEK_SET))
		die(path);
	fx.len = (size_t)n;
	fx.obj = malloc(fx.len);
	fx.copy = malloc(fx.len);
	if (!fx.obj || !fx.copy || fread(fx.obj, 1, fx.len, fp) != fx.len)
		die(path);
	fclose(fp);

	ef = elf_file__open(path);
	if (!ef || elf_build_id(ef, hex, sizeof(hex)) ||
	    elf_debuglink(ef, fx.link, sizeof(fx.link), &crc)) {
		errno = ENOEXEC;
		die("the fixture has no build id or .gnu_debuglink");
	}
	elf_file__free(ef);
	fx.id_len = unhex(hex, id, sizeof(id));
	fx.id_off = find(fx.obj, fx.len, id, fx.id_len);
	/* .gnu_debuglink: the name, NUL, padding to 4, the CRC */
	fx.crc_off = find(fx.obj, fx.len, fx.link, strlen(fx.link) + 1);
	fx.crc_off = (fx.crc_off + strlen(fx.link) + 1 + 3) & ~(size_t)3;
	if (!fx.id_off || fx.crc_off + 4 > fx.len || memcmp(fx.obj + fx.crc_off, &crc, 4)) {
		errno = ENOEXEC;
		die("build id or debuglink CRC not found in the fixture's bytes");
	}

	snprintf(fx.root, sizeof(fx.root), "%s/fuzz-debugfile-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(fx.root))
		die(fx.root);
	atexit(remove_root);
	snprintf(dir, sizeof(dir), "%s" OBJECT_DIR "/.debug", fx.root);
	mkdirs(dir);
	snprintf(dir, sizeof(dir), "%s/usr/lib/debug" OBJECT_DIR, fx.root);
	mkdirs(dir);
	return 0;
}

static void place(const char *path, const uint8_t *data, size_t size)
{
	int fd;

	snprintf(fx.placed, sizeof(fx.placed), "%s%s", fx.root, path);
	fd = open(fx.placed, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size || close(fd))
		die(fx.placed);
}

/* The lookups discover.c makes in a debug file, and the reads of what they find. */
static void query(struct elf_file *dbg)
{
	static const char *const names[] = {
		"ruby_current_ec", "ruby_global_symbols", "ruby_current_vm_ptr", "rb_vm_exec",
		"fix_current_ec",  "fix_version",	  "fix_bss_area",	 "",
	};
	struct elf_sym sym;
	struct elf_tls tls;
	char buf[256];
	uint64_t a, b;
	uint32_t crc;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!elf_find_symbol(dbg, names[i], &sym))
			(void)elf_read_vaddr(dbg, sym.value, buf,
					     sym.size < sizeof(buf) ? sym.size : sizeof(buf));
		(void)elf_find_symbol_in(dbg, ELF_SYM_SYMTAB, names[i], &sym);
	}
	(void)elf_has_symtab(dbg);
	if (!elf_tls_segment(dbg, &tls))
		(void)elf_read_vaddr(dbg, tls.vaddr, buf, sizeof(buf));
	(void)elf_build_id(dbg, buf, sizeof(buf));
	(void)elf_debuglink(dbg, buf, sizeof(buf), &crc);
	if (!elf_section(dbg, ".text", &a, &b))
		(void)elf_read_vaddr(dbg, a, buf, b < sizeof(buf) ? b : sizeof(buf));
	(void)elf_dtpmod_slot(dbg, NULL, &a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX * 2], hex[128], found[PATH_MAX], objpath[64];
	struct elf_file *in, *ef = NULL, *dbg = NULL;
	unsigned int mode = size ? data[size - 1] & 3 : 0;
	uint32_t crc;
	uint8_t id[64];
	size_t n;
	const char *how = NULL;
	int fd, tries;

	if (fx.placed[0]) {
		unlink(fx.placed);
		fx.placed[0] = '\0';
	}
	memcpy(fx.copy, fx.obj, fx.len);
	if (mode == 0) {
		/* the object claims the input's build id, which names the place to look */
		fd = fuzz_memfile(data, size, path, sizeof(path));
		in = fd < 0 ? NULL : elf_file__open(path);
		hex[0] = '\0';
		if (in && elf_build_id(in, hex, sizeof(hex)) == 0 && strlen(hex) > 2) {
			n = unhex(hex, id, sizeof(id));
			if (n == fx.id_len)
				memcpy(fx.copy + fx.id_off, id, n);
		}
		elf_file__free(in);
		if (fd >= 0)
			close(fd);
		if (strlen(hex) > 2) {
			snprintf(path, sizeof(path), "%s/usr/lib/debug/.build-id/%.2s", fx.root,
				 hex);
			mkdirs(path);
			snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex,
				 hex + 2);
			place(path, data, size);
		}
	} else {
		if (mode != 3) {
			crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), data, (uInt)size);
			memcpy(fx.copy + fx.crc_off, &crc, 4);
		}
		snprintf(path, sizeof(path), "%s%s/%s",
			 mode == 3 ? "/usr/lib/debug" OBJECT_DIR : OBJECT_DIR,
			 mode == 2 ? "/.debug" : "", fx.link);
		place(path, data, size);
	}

	fd = fuzz_memfile(fx.copy, fx.len, objpath, sizeof(objpath));
	if (fd < 0)
		return 0;
	ef = elf_file__open(objpath);
	/* a .gnu_debuglink candidate's CRC32 is the worker's (checksum.h): asked again once done,
	 * as discovery does at its next try */
	for (tries = 0; ef && !dbg && tries < 4; tries++) {
		dbg = debugfile_find(fx.root, OBJECT_PATH, ef, found, sizeof(found), &how);
		if (dbg || (errno != EINPROGRESS && errno != EAGAIN) || !checksum_wait(10000))
			break;
	}
	if (dbg)
		query(dbg);
	elf_file__free(dbg);
	elf_file__free(ef);
	close(fd);
	return 0;
}
