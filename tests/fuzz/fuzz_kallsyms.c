// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the /proc/kallsyms reader (daemon/native/kallsyms.c) on whole files: a module's symbol names
 * are whoever loaded it, and a container may bind another file at the path. The input is the
 * file. Checked against the text itself: every text symbol line of the kernel's exact form
 * ("%016lx %c %s") is found again at its address, every name looked up is a non-empty run of
 * the input's bytes without a separator, and offsets stay within one function's bound.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "native/kallsyms.h"

/* kallsyms.c's bound on a function's size, the farthest a lookup may land from its symbol */
#define FUZZ_MAX_FUNC_SIZE (1u << 20)

static void check_name(const struct kallsyms *k, const char *name, uint64_t off,
		       const uint8_t *data, size_t size)
{
	size_t len = strlen(name);

	if (kallsyms_hidden(k) || !len || len >= KALLSYMS_MAX_NAME || off >= FUZZ_MAX_FUNC_SIZE ||
	    strpbrk(name, " \t\n") || !memmem(data, size, name, len))
		abort();
}

/* addr looked up: a name checked, or NULL. */
static const char *lookup(const struct kallsyms *k, uint64_t addr, const uint8_t *data, size_t size)
{
	uint64_t off = UINT64_MAX;
	const char *name = kallsyms_lookup(k, addr, &off);

	if (name)
		check_name(k, name, off, data, size);
	return name;
}

/*
 * A line of the exact form the kernel writes, 16 hex digits, a space, the type, a space and a
 * name, parsed here without the reader's code. A text symbol (tTwW) with an address not 0 must
 * be found at that address with offset 0.
 */
static void check_line(const struct kallsyms *k, const char *line, const uint8_t *data, size_t size)
{
	unsigned long long addr;
	int at = -1, after = -1;
	char type;
	uint64_t off = UINT64_MAX;
	struct kallsyms_stats st;

	if (strspn(line, "0123456789abcdefABCDEF") != 16 ||
	    sscanf(line, "%16llx %c %n%*s%n", &addr, &type, &at, &after) != 2 || at != 19 ||
	    after <= at || line[16] != ' ' || line[18] != ' ' || !strchr("tTwW", type) || !addr)
		return;
	kallsyms_stats(k, &st);
	if (st.over)
		return; /* this one may be among those left out */
	if (!kallsyms_lookup(k, addr, &off) || off != 0) {
		fprintf(stderr, "fuzz_kallsyms: %.40s not found at its address\n", line);
		abort();
	}
	(void)lookup(k, addr, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms_stats st;
	struct kallsyms *k;
	char path[64], *text, *line, *save = NULL;
	uint64_t a;
	size_t i, lines = 1;
	int fd;

	fd = fuzz_memfile(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	k = kallsyms__new(path);
	close(fd);
	if (!k)
		return 0;
	kallsyms_stats(k, &st);
	for (i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (st.syms + st.zero + st.over + st.bad > lines)
		abort(); /* more symbols than lines */
	if (kallsyms_hidden(k) && (st.syms || !st.zero))
		abort();
	(void)lookup(k, 0, data, size);
	(void)lookup(k, UINT64_MAX, data, size);
	/* every 8 bytes of the input as an address, and its neighbours */
	for (i = 0; i + 8 <= size && i < 512; i += 8) {
		memcpy(&a, data + i, sizeof(a));
		(void)lookup(k, a, data, size);
		(void)lookup(k, a - 1, data, size);
	}
	text = fuzz_strndup(data, size);
	if (text) {
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			check_line(k, line, data, size);
		free(text);
	}
	kallsyms__free(k);
	return 0;
}
