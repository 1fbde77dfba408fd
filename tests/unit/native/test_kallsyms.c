// SPDX-License-Identifier: GPL-2.0-only
/* kallsyms: fixture files in /proc/kallsyms's format (tests/fixtures), and the real file. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "native/kallsyms.h"

Test(kallsyms, lookups_in_sorted_text_symbols)
{
	struct kallsyms *k = kallsyms__new("tests/fixtures/kallsyms.txt");
	struct kallsyms_stats st;
	uint64_t off = 0;
	const char *name;

	cr_assert_not_null(k, "%s", strerror(errno));
	cr_assert_not(kallsyms_hidden(k));
	kallsyms_stats(k, &st);
	/* the data symbol is left out, the bad line counted */
	cr_assert_eq(st.syms, 10);
	cr_assert_eq(st.bad, 1);
	cr_assert_eq(st.cut, 1);
	cr_assert_str_eq(kallsyms_lookup(k, 0xffffffff81003000, &off), "vfs_read");
	cr_assert_eq(off, 0);
	cr_assert_str_eq(kallsyms_lookup(k, 0xffffffff810031ff, &off), "vfs_read");
	cr_assert_eq(off, 0x1ff);
	cr_assert_str_eq(kallsyms_lookup(k, 0xffffffff81003401, NULL), "ksys_read");
	cr_assert_str_eq(kallsyms_lookup(k, 0xffffffff81003700, NULL), "weak_fn");
	/* D is no function: the text symbol below it holds the address */
	cr_assert_str_eq(kallsyms_lookup(k, 0xffffffff81002010, NULL), "do_one_initcall");
	/* module symbols, out of order in the file */
	cr_assert_str_eq(kallsyms_lookup(k, 0xffffffffc0000010, NULL), "zzz_module_fn");
	cr_assert_str_eq(kallsyms_lookup(k, 0xffffffffc0100008, NULL), "ext4_file_read_iter");
	/* the name cut at the bound, and still a string */
	name = kallsyms_lookup(k, 0xffffffff81003210, NULL);
	cr_assert_not_null(name);
	cr_assert_eq(strlen(name), KALLSYMS_MAX_NAME - 1);
	cr_assert_eq(strncmp(name, "a_function_name", 15), 0);
	/* below the first symbol, and far above the last */
	cr_assert_null(kallsyms_lookup(k, 0xffffffff80ffffff, NULL));
	cr_assert_null(kallsyms_lookup(k, 0xffffffffc0100000 + (2u << 20), NULL));
	kallsyms__free(k);
}

Test(kallsyms, zero_addresses_are_hidden)
{
	struct kallsyms *k = kallsyms__new("tests/fixtures/kallsyms-hidden.txt");
	struct kallsyms_stats st;

	cr_assert_not_null(k);
	cr_assert(kallsyms_hidden(k));
	kallsyms_stats(k, &st);
	cr_assert_eq(st.syms, 0);
	cr_assert_eq(st.zero, 3);
	cr_assert_null(kallsyms_lookup(k, 0xffffffff81003000, NULL));
	kallsyms__free(k);
}

Test(kallsyms, missing_file)
{
	cr_assert_null(kallsyms__new("tests/fixtures/no-such-kallsyms"));
	cr_assert_eq(errno, ENOENT);
	kallsyms__free(NULL);
}

/* The running kernel's table: its own name for its own address (root sees addresses). */
Test(kallsyms, the_running_kernel)
{
	struct kallsyms *k = kallsyms__new(NULL);
	unsigned long long addr = 0;
	char line[512], type, name[256];
	FILE *f;

	cr_assert_not_null(k);
	if (kallsyms_hidden(k)) {
		kallsyms__free(k);
		cr_skip_test("/proc/kallsyms hides its addresses here (no CAP_SYSLOG)");
	}
	f = fopen("/proc/kallsyms", "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && type == 'T' &&
		    strcmp(name, "vfs_read") == 0)
			break;
		addr = 0;
	}
	fclose(f);
	cr_assert_neq(addr, 0, "vfs_read is in /proc/kallsyms");
	cr_assert_str_eq(kallsyms_lookup(k, addr + 1, NULL), "vfs_read");
	kallsyms__free(k);
}
