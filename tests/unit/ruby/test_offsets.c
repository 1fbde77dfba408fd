// SPDX-License-Identifier: GPL-2.0-only
/* The per-version offset table: lookups and the facts that bite (../shared/DESIGN.md). */
#include <criterion/criterion.h>
#include <string.h>

#include "ruby/offsets.h"

Test(offsets, parse_version)
{
	int a, b, c;

	cr_assert_eq(offsets_parse_version("3.1.2", &a, &b, &c), 0);
	cr_assert(a == 3 && b == 1 && c == 2);
	cr_assert_neq(offsets_parse_version("3.1", &a, &b, &c), 0);
	cr_assert_neq(offsets_parse_version("3.1.2x", &a, &b, &c), 0);
	cr_assert_neq(offsets_parse_version("", &a, &b, &c), 0);
	cr_assert_neq(offsets_parse_version(NULL, &a, &b, &c), 0);
}

Test(offsets, known_unknown_patch_and_unknown_minor)
{
	const struct ruby_offsets *o;
	bool exact;

	o = offsets_find("3.1.2", &exact);
	cr_assert_not_null(o);
	cr_assert(exact);
	cr_assert_str_eq(o->first, "3.1.0");

	/* a patch release newer than the table knows: that minor's row, flagged inexact */
	o = offsets_find("3.1.99", &exact);
	cr_assert_not_null(o);
	cr_assert_not(exact);
	cr_assert_str_eq(o->first, "3.1.0");

	cr_assert_null(offsets_find("3.9.0", &exact));
	cr_assert_null(offsets_find("1.9.3", &exact));
	cr_assert_null(offsets_find("garbage", &exact));
}

/*
 * 4.0's main ractor running_ec moved by 8 bytes within the minor (312 in 4.0.0 and 4.0.1, 320 in
 * 4.0.6): the row is chosen by patch level, and a patch release between known rows gets its
 * nearest earlier row, inexact.
 */
Test(offsets, running_ec_by_4_0_patch_level)
{
	const struct ruby_offsets *o;
	bool exact;

	o = offsets_find("4.0.0", &exact);
	cr_assert(o && exact && o->ractor_running_ec == 312);
	o = offsets_find("4.0.1", &exact);
	cr_assert(o && exact && o->ractor_running_ec == 312);
	o = offsets_find("4.0.6", &exact);
	cr_assert(o && exact && o->ractor_running_ec == 320);
	o = offsets_find("4.0.3", &exact);
	cr_assert(o && !exact && o->ractor_running_ec == 312);
	o = offsets_find("4.0.9", &exact);
	cr_assert(o && !exact && o->ractor_running_ec == 320);
	/* a minor with one row: any patch release gets it */
	o = offsets_find("3.3.99", &exact);
	cr_assert(o && !exact && strcmp(o->first, "3.3.0") == 0);
}

Test(offsets, every_minor_from_2_6_to_4_0)
{
	static const char *const versions[] = {"2.6.10", "2.7.8",  "3.0.7", "3.1.7", "3.2.11",
					       "3.3.12", "3.4.10", "4.0.0", "4.0.6"};
	bool exact;
	size_t i;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		cr_assert_not_null(offsets_find(versions[i], &exact), "%s", versions[i]);
		cr_assert(exact, "%s", versions[i]);
	}
}

Test(offsets, facts_that_bite)
{
	bool exact;

	/* sizeof(rb_control_frame_t): 56, then 64 in 3.1/3.2 (jit_return), then 56 again */
	cr_assert_eq(offsets_find("3.0.0", &exact)->vm.cfp_size, 56);
	cr_assert_eq(offsets_find("3.1.0", &exact)->vm.cfp_size, 64);
	cr_assert_eq(offsets_find("3.2.0", &exact)->vm.cfp_size, 64);
	cr_assert_eq(offsets_find("3.3.0", &exact)->vm.cfp_size, 56);
	/* first_lineno is a Fixnum before 3.2 */
	cr_assert(offsets_find("3.1.0", &exact)->first_lineno_is_fixnum);
	cr_assert_not(offsets_find("3.2.0", &exact)->first_lineno_is_fixnum);
	/* insns_info moved in 3.2 */
	cr_assert_eq(offsets_find("3.1.0", &exact)->body_insns_info, 120);
	cr_assert_eq(offsets_find("3.2.0", &exact)->body_insns_info, 112);
	/* before 3.0 the EC is a global */
	cr_assert(offsets_find("2.7.0", &exact)->ec_is_global);
	cr_assert_not(offsets_find("3.0.0", &exact)->ec_is_global);
}

Test(offsets, rows_fit_the_bpf_walk)
{
	const struct ruby_offsets *rows;
	unsigned int n, i;

	rows = offsets_all(&n);
	cr_assert_gt(n, 0);
	for (i = 0; i < n; i++) {
		/* the BPF program reads the first 64 bytes of the EC and one control frame batch */
		cr_assert_lt(rows[i].vm.ec_cfp, 64);
		cr_assert_lt(rows[i].vm.ec_thread_ptr, 64);
		cr_assert_leq(rows[i].vm.cfp_size, RP_CFP_MAX_SIZE);
		cr_assert_eq(rows[i].vm.cfp_size % 8, 0);
		cr_assert_lt(rows[i].vm.cfp_ep, rows[i].vm.cfp_size);
		cr_assert_lt(rows[i].vm.cfp_jit_return, rows[i].vm.cfp_size);
	}
}
