// SPDX-License-Identifier: GPL-2.0-only
/*
 * The metric table (daemon/cmd/metrics_table.h): every counter the daemon keeps is in it (each
 * field of the modules' stats structs, each BPF statistic), its label values are the modules'
 * own names, and what it renders is what promtool's format asks for.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/metrics_table.h"
#include "output/ship.h"
#include "profile/tracker.h"

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;

	cr_assert_not_null(f, "cannot read %s (the tests run from the tree's top)", path);
	buf = calloc(1, 1 << 20);
	cr_assert_not_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The stats structs of the modules, and how the table reaches each (S->PATH.field). */
static const struct {
	const char *header, *type, *path;
} structs[] = {
	{"daemon/sample/sampler.h", "struct sampler_counters", "c.sampler."},
	{"daemon/profile/stacks.h", "struct stacks_stats", "c.stacks."},
	{"daemon/ruby/symbolizer.h", "struct symbolizer_stats", "c.stacks.sym."},
	{"daemon/ruby/rthreads.h", "struct rthread_stats", "c.stacks.rthread."},
	{"daemon/profile/tracker.h", "struct tracker_stats", "c.tracker."},
	{"daemon/profile/wall.h", "struct wall_counters", "c.wall."},
	{"daemon/sample/native.h", "struct native_stats", "c.native."},
	{"daemon/native/unwinder.h", "struct unwinder_stats", "c.native.unw."},
	{"daemon/native/elfcache.h", "struct elfcache_stats", "c.native.unw.elf."},
	{"daemon/profile/aggregate.h", "struct aggregate_stats", "c.agg."},
	{"daemon/output/spool.h", "struct spool_stats", "spool."},
	{"daemon/output/ship.h", "struct ship_stats", "ship."},
	{"daemon/cmd/metrics.h", "struct metrics_stats", "endpoint."},
	{"daemon/lib/bounds.h", "struct bounds_stats", "c.bounds."},
	{"daemon/native/checksum.h", "struct checksum_stats", "c.checksum."},
	{"daemon/proc/procctx.h", "struct procctx_stats", "c.procctx."},
};

/* Every uint64_t or double member of every stats struct is read by some entry of the table. */
Test(metrics_table, every_counter_is_exported)
{
	char *table = read_all("daemon/cmd/metrics_table.h");
	char want[160], field[64];
	size_t i, n, missing = 0;

	for (i = 0; i < sizeof(structs) / sizeof(structs[0]); i++) {
		char *h = read_all(structs[i].header), *p, *end, *line;

		snprintf(want, sizeof(want), "%s {", structs[i].type);
		p = strstr(h, want);
		cr_assert_not_null(p, "%s not found in %s", want, structs[i].header);
		end = strstr(p, "\n};");
		cr_assert_not_null(end);
		for (line = strchr(p, '\n'); line && line < end; line = strchr(line + 1, '\n')) {
			const char *t = line + 1;

			while (*t == '\t' || *t == ' ')
				t++;
			if (strncmp(t, "uint64_t ", 9) && strncmp(t, "double ", 7))
				continue;
			t = strchr(t, ' ');
			while (*t == ' ' || *t == '\t')
				t++;
			/* the lines may declare several: a, b, c; */
			for (;;) {
				for (n = 0; (isalnum((unsigned char)t[n]) || t[n] == '_') &&
					    n + 1 < sizeof(field);
				     n++)
					field[n] = t[n];
				field[n] = '\0';
				snprintf(want, sizeof(want), "S->%s%s", structs[i].path, field);
				if (!strstr(table, want)) {
					cr_log_error(
						"%s.%s is in no entry of the metric table (%s)",
						structs[i].type, field, want);
					missing++;
				}
				t += n;
				while (*t == '[') /* an array: its index */
					t = strchr(t, ']') + 1;
				if (*t != ',')
					break;
				t++;
				while (*t == ' ')
					t++;
			}
		}
		free(h);
	}
	cr_expect_eq(missing, 0, "%zu counters are not exported", missing);
	free(table);
}

/* Every BPF statistic (RP_STAT_*, RP_WSTAT_*) is read by some entry. */
Test(metrics_table, every_bpf_statistic_is_exported)
{
	char *table = read_all("daemon/cmd/metrics_table.h"), *h = read_all("include/rubyprof.h");
	char name[64];
	const char *p;
	size_t n, missing = 0;

	for (p = h; (p = strstr(p, "#define RP_")); p += 8) {
		p += 8;
		for (n = 0; (isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < sizeof(name);
		     n++)
			name[n] = p[n];
		name[n] = '\0';
		if ((strncmp(name, "RP_STAT_", 8) && strncmp(name, "RP_WSTAT_", 9)) ||
		    strstr(name, "_MAX"))
			continue;
		if (!strstr(table, name)) {
			cr_log_error("%s is in no entry of the metric table", name);
			missing++;
		}
	}
	cr_expect_eq(missing, 0, "%zu BPF statistics are not exported", missing);
	free(h);
	free(table);
}

Test(metrics_table, label_values_are_the_modules_names)
{
	static const enum metric_id refused[] = {
		[TRACKER_REFUSED_UNSUPPORTED] = M_PROCESSES_REFUSED_UNSUPPORTED,
		[TRACKER_REFUSED_NOT_READY] = M_PROCESSES_REFUSED_NOT_READY,
		[TRACKER_REFUSED_NO_ACCESS] = M_PROCESSES_REFUSED_NO_ACCESS,
		[TRACKER_REFUSED_IGNORED] = M_PROCESSES_REFUSED_IGNORED,
		[TRACKER_REFUSED_ERROR] = M_PROCESSES_REFUSED_ERROR,
	};
	static const enum metric_id failures[] = {
		[SHIP_FAIL_NETWORK] = M_UPLOAD_FAILURES_NETWORK,
		[SHIP_FAIL_TIMEOUT] = M_UPLOAD_FAILURES_TIMEOUT,
		[SHIP_FAIL_TLS] = M_UPLOAD_FAILURES_TLS,
		[SHIP_FAIL_HTTP_429] = M_UPLOAD_FAILURES_HTTP_429,
		[SHIP_FAIL_HTTP_5XX] = M_UPLOAD_FAILURES_HTTP_5XX,
		[SHIP_FAIL_AUTH] = M_UPLOAD_FAILURES_AUTH,
		[SHIP_FAIL_ENDPOINT] = M_UPLOAD_FAILURES_ENDPOINT,
		[SHIP_FAIL_REJECTED] = M_UPLOAD_FAILURES_REJECTED,
		[SHIP_FAIL_PROTOCOL] = M_UPLOAD_FAILURES_PROTOCOL,
	};
	int i;

	cr_assert_eq(sizeof(refused) / sizeof(refused[0]), TRACKER_REFUSED_MAX);
	cr_assert_eq(sizeof(failures) / sizeof(failures[0]), SHIP_NFAIL);
	for (i = 0; i < TRACKER_REFUSED_MAX; i++)
		cr_expect_str_eq(metrics_table_label_value(refused[i]), tracker_refusal_name(i));
	for (i = 0; i < SHIP_NFAIL; i++)
		cr_expect_str_eq(metrics_table_label_value(failures[i]),
				 ship_failure_name((enum ship_failure)i));
}

/* Every family of every mode rendered at once: the text promtool reads (one family each, no
 * error from the writers). */
Test(metrics_table, every_family_renders)
{
	struct metric_snapshot S;
	struct metrics_buf *b = metrics_buf__new();
	size_t len;

	cr_assert_not_null(b);
	memset(&S, 0, sizeof(S));
	S.modes = ~0u;
	metrics_table_render(&S, b);
	cr_assert_eq(metrics_buf_error(b), 0);
	cr_assert_not_null(
		strstr(metrics_buf_data(b, &len), "# TYPE rubyprofd_upload_ok_total counter\n"));
	metrics_buf__free(b);
}
