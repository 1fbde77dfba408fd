// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_viewgroup.c - rubyprofd report --by frame:REGEX and --by label:KEY, and labels named as
 * collectors name them: profiles with stacks and labels drawn by the test (a seeded generator),
 * grouped by the test itself, against the groups of the folded stacks and of the top table.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../aggread.h"
#include "profile/pprof.h"
#include "../tmpdir.h"
#include "view/pprofread.h"
#include "view/report.h"
#include "view/view.h"

#define T0 1700000000000000000LL

/* The frames the generator draws from (root first in a stack). */
static const char *const names[] = {
	"<main>",
	"Rack::Handler#call",
	"OrdersController#index",
	"UsersController#show",
	"Order.find",
	"ApplicationRecord#load",
	"Integer#times",
	"HardJob#perform",
	"Kernel#sleep",
	"SoftJob#perform",
	"render",
	"Array#each",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

struct tsample {
	int frames[8]; /* indexes into names, root first */
	int n;
	int64_t count;
	const char *route; /* the http_route label, NULL: none */
	int64_t worker;	   /* a numeric label */
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* n samples: random stacks under <main>, a route on most. */
static void draw(struct tsample *s, size_t n)
{
	static const char *const routes[] = {"/orders", "/users/:id", "/a=b", NULL};
	size_t i;
	int d;

	for (i = 0; i < n; i++) {
		s[i].frames[0] = 0;
		s[i].n = 1 + (int)(next() % 7);
		for (d = 1; d < s[i].n; d++)
			s[i].frames[d] = 1 + (int)(next() % (NNAMES - 1));
		s[i].count = 1 + (int64_t)(next() % 9);
		s[i].route = routes[next() % 4];
		s[i].worker = (int64_t)(next() % 3);
	}
}

/* The samples as a profile (rubyprofd's writer), read back. */
static struct pprofread *encode(const struct tsample *s, size_t n, const char *route_key)
{
	struct pprof *p = pprof__new();
	uint64_t m, fn[NNAMES], loc[NNAMES], stack[8];
	struct pprof_label l[3];
	size_t i, k;
	int d;

	cr_assert_not_null(p);
	pprof_set_time(p, T0, 10000000000LL);
	m = pprof_mapping(p, 0, 0, 0, "[ruby]", "");
	for (i = 0; i < NNAMES; i++) {
		fn[i] = pprof_function(p, names[i], "", "/app/x.rb", (int64_t)i + 1);
		loc[i] = pprof_location(p, m, 0, fn[i], (int64_t)i + 2);
	}
	for (i = 0; i < n; i++) {
		const int64_t v[2] = {s[i].count, s[i].count * 10};

		for (d = 0; d < s[i].n; d++)
			stack[s[i].n - 1 - d] = loc[s[i].frames[d]]; /* leaf first */
		k = 0;
		l[k++] = (struct pprof_label){.key = "pid", .num = 42};
		l[k++] = (struct pprof_label){.key = "worker", .num = s[i].worker};
		if (s[i].route)
			l[k++] = (struct pprof_label){.key = route_key, .str = s[i].route};
		cr_assert_eq(pprof_add_sample(p, stack, (size_t)s[i].n, v, l, k), 0);
	}
	return pprof_reread(p, 1);
}

/* The view of r with filter f as format, into a string. */
static char *render(const struct view_filter *f, struct pprofread *r, const char *format,
		    struct view_stats *st)
{
	char err[256], *text = NULL;
	size_t len = 0;
	struct view *v = view__new(f, err, sizeof(err));
	FILE *out;

	cr_assert_not_null(v, "%s", err);
	cr_assert_geq(view_add_profile(v, r, "mem", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(view_finish(v), 0);
	out = open_memstream(&text, &len);
	cr_assert_not_null(out);
	cr_assert_eq(view_write(v, format, out, "test", 5), 0);
	fclose(out);
	if (st)
		view_stats(v, st);
	view__free(v);
	return text;
}

/* A tiny table of (name, samples), the test's own. */
struct counts {
	char name[64][256];
	int64_t n[64];
	size_t len;
};

static void count(struct counts *c, const char *name, int64_t n)
{
	size_t i;

	for (i = 0; i < c->len; i++) {
		if (strcmp(c->name[i], name) == 0) {
			c->n[i] += n;
			return;
		}
	}
	cr_assert_lt(c->len, 64);
	snprintf(c->name[c->len], sizeof(c->name[0]), "%s", name);
	c->n[c->len++] = n;
}

static int64_t count_of(const struct counts *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->len; i++) {
		if (strcmp(c->name[i], name) == 0)
			return c->n[i];
	}
	return 0;
}

/* Folded stacks summed by their root frame (the group). */
static void roots_of(const char *folded, struct counts *c)
{
	const char *line = folded, *sp, *semi, *nl;
	char root[256];

	for (; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		cr_assert_not_null(nl);
		sp = memrchr(line, ' ', (size_t)(nl - line));
		semi = memchr(line, ';', (size_t)(sp - line));
		snprintf(root, sizeof(root), "%.*s", (int)((semi ? semi : sp) - line), line);
		count(c, root, strtoll(sp + 1, NULL, 10));
	}
}

/* The groups of r's view with filter f (its folded stacks by root frame) are exactly want's. */
static void expect_groups(const struct view_filter *f, struct pprofread *r,
			  const struct counts *want)
{
	struct counts got = {0};
	char *folded = render(f, r, "collapsed", NULL);
	size_t i;

	roots_of(folded, &got);
	cr_assert_eq(got.len, want->len, "%s", folded);
	for (i = 0; i < want->len; i++)
		cr_assert_eq(count_of(&got, want->name[i]), want->n[i],
			     "%s: %" PRId64 ", want %" PRId64, want->name[i],
			     count_of(&got, want->name[i]), want->n[i]);
	free(folded);
}

/* The samples of r's view with filter f (one root frame expected: their sum). */
static int64_t filtered(const struct view_filter *f, struct pprofread *r)
{
	struct counts got = {0};
	char *folded = render(f, r, "collapsed", NULL);

	roots_of(folded, &got);
	cr_assert_leq(got.len, 1, "%s", folded);
	free(folded);
	return got.n[0];
}

/* The group header of the top table: "NAME: P% (N samples". Its N, -1 when absent. */
static int64_t top_group(const char *top, const char *name)
{
	char want[300];
	const char *p;

	snprintf(want, sizeof(want), "\n%s: ", name);
	p = strstr(top, want);
	if (!p)
		return -1;
	p = strchr(p + strlen(want), '(');
	return p ? strtoll(p + 1, NULL, 10) : -1;
}

/*
 * --by frame:Controller#: each sample under the first frame from the root whose name matches
 * (a stack with OrdersController#index under UsersController#show is UsersController#show's);
 * the groups' samples in the folded stacks and the top table are the test's own sums.
 */
Test(viewgroup, by_frame_first_match_from_the_root)
{
	static struct tsample s[400];
	struct view_filter f = {.want_top = true};
	struct counts want = {0};
	struct pprofread *r;
	char *top, err[256];
	int64_t total = 0;
	size_t i;
	int d;

	draw(s, 400);
	for (i = 0; i < 400; i++) {
		const char *g = "(no frame matches)";

		for (d = 0; d < s[i].n; d++) {
			if (strstr(names[s[i].frames[d]], "Controller#")) {
				g = names[s[i].frames[d]];
				break;
			}
		}
		count(&want, g, s[i].count);
		total += s[i].count;
	}
	cr_assert_geq(want.len, 3, "the draw has both controllers and samples without one");
	r = encode(s, 400, "http_route");
	cr_assert_eq(view_parse_by("frame:Controller#", &f, err, sizeof(err)), 0, "%s", err);
	expect_groups(&f, r, &want);
	top = render(&f, r, "top", NULL);
	cr_assert(strstr(top, "by frame:Controller#: "), "%s", top);
	for (i = 0; i < want.len; i++)
		cr_assert_eq(top_group(top, want.name[i]), want.n[i], "%s in\n%s", want.name[i],
			     top);
	/* the shares are the group's of the whole */
	{
		char line[300];

		snprintf(line, sizeof(line), "\nOrdersController#index: %.1f%% (",
			 100.0 * (double)count_of(&want, "OrdersController#index") / (double)total);
		cr_assert(strstr(top, line), "%s in\n%s", line, top);
	}
	free(top);
	/* speedscope: a profile per group, its samples the group's */
	top = render(&f, r, "speedscope", NULL);
	for (i = 0; i < want.len; i++) {
		char prof[400];

		snprintf(prof, sizeof(prof),
			 "{\"type\":\"sampled\",\"name\":\"%s\",\"unit\":\"none\",\"startValue\":0,"
			 "\"endValue\":%" PRId64 ",",
			 want.name[i], want.n[i]);
		cr_assert(strstr(top, prof), "%s", prof);
	}
	free(top);
	pprofread__free(r);
}

/*
 * --by label:http.route groups by the label http_route (an attribute's name as collectors take
 * it), "(no http.route)" for samples without it; --label http.route=/orders keeps one route;
 * a numeric label groups by its decimal value.
 */
Test(viewgroup, by_label_and_dotted_keys)
{
	static struct tsample s[300];
	struct view_filter f = {.want_top = true};
	struct counts want = {0}, wantw = {0};
	struct pprofread *r;
	char *top, err[256], g[300];
	int64_t orders = 0;
	size_t i;

	draw(s, 300);
	for (i = 0; i < 300; i++) {
		snprintf(g, sizeof(g), s[i].route ? "http.route=%s" : "(no http.route)",
			 s[i].route);
		count(&want, g, s[i].count);
		snprintf(g, sizeof(g), "worker=%" PRId64, s[i].worker);
		count(&wantw, g, s[i].count);
		if (s[i].route && strcmp(s[i].route, "/orders") == 0)
			orders += s[i].count;
	}
	cr_assert_eq(want.len, 4);
	r = encode(s, 300, "http_route");
	cr_assert_eq(view_parse_by("label:http.route", &f, err, sizeof(err)), 0, "%s", err);
	expect_groups(&f, r, &want);
	top = render(&f, r, "top", NULL);
	for (i = 0; i < want.len; i++)
		cr_assert_eq(top_group(top, want.name[i]), want.n[i], "%s in\n%s", want.name[i],
			     top);
	free(top);

	/* a numeric label */
	cr_assert_eq(view_parse_by("label:worker", &f, err, sizeof(err)), 0);
	expect_groups(&f, r, &wantw);

	/* --label with the attribute's name, and a value holding '=' */
	memset(&f, 0, sizeof(f));
	f.label_key[0] = "http.route";
	f.label_val[0] = "/orders";
	f.nlabels = 1;
	cr_assert_eq(filtered(&f, r), orders);
	pprofread__free(r);

	/* a label written with its dot is found as written */
	r = encode(s, 300, "http.route");
	cr_assert_eq(filtered(&f, r), orders);
	pprofread__free(r);
}

/*
 * A label with 1,500 values: the 100 biggest groups are shown, the rest summed in "(other
 * groups)"; past the first 1,000 values told apart, samples go there at once (counted). Value i
 * has i % 37 + 1 samples, one sample each, in the order i.
 */
Test(viewgroup, groups_are_bounded)
{
	enum { NV = 1500 };
	static struct tsample s[NV];
	static char routes[NV][16];
	struct view_filter f = {.want_top = true};
	struct view_stats st;
	struct pprofread *r;
	char *folded, *top, err[256];
	int64_t other = 0, unseen = 0, kept[1000], shown_min;
	size_t i, nroots = 0;
	const char *p;

	for (i = 0; i < NV; i++) {
		snprintf(routes[i], sizeof(routes[i]), "/r%zu", i);
		memset(&s[i], 0, sizeof(s[i]));
		s[i].n = 2;
		s[i].frames[1] = 1 + (int)(i % (NNAMES - 1));
		s[i].count = (int64_t)(i % 37) + 1;
		s[i].route = routes[i];
		if (i >= 1000)
			unseen += s[i].count;
		else
			kept[i] = s[i].count;
	}
	/* the test's own top 100 of the first 1000 (by count; ties by name, as strings) */
	{
		int64_t sorted[1000];
		size_t a, b;

		memcpy(sorted, kept, sizeof(sorted));
		for (a = 0; a < 1000; a++)
			for (b = a + 1; b < 1000; b++)
				if (sorted[b] > sorted[a]) {
					int64_t t = sorted[a];

					sorted[a] = sorted[b];
					sorted[b] = t;
				}
		shown_min = sorted[99];
		for (a = 100; a < 1000; a++)
			other += sorted[a];
	}
	other += unseen;
	r = encode(s, NV, "http_route");
	cr_assert_eq(view_parse_by("label:http_route", &f, err, sizeof(err)), 0);
	folded = render(&f, r, "collapsed", &st);
	cr_assert_eq(st.groups, 1000);
	cr_assert_eq(st.groups_merged, 900);
	cr_assert_eq(st.group_samples_unseen, NV - 1000);
	/* roots: 100 groups and "(other groups)", which has the rest's samples */
	{
		static char roots[200][64];
		int64_t in_other = 0;
		const char *nl, *semi;
		size_t k;

		for (p = folded; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			semi = strchr(p, ';');
			cr_assert(nl && semi && semi < nl);
			snprintf(roots[nroots], sizeof(roots[0]), "%.*s", (int)(semi - p), p);
			for (k = 0; k < nroots && strcmp(roots[k], roots[nroots]); k++)
				;
			if (k == nroots) {
				cr_assert_lt(nroots, 199);
				nroots++;
			}
			if (strcmp(roots[k], VIEW_OTHER_GROUPS) == 0)
				in_other +=
					strtoll(memrchr(p, ' ', (size_t)(nl - p)) + 1, NULL, 10);
		}
		cr_assert_eq(nroots, 101);
		cr_assert_eq(in_other, other);
	}
	free(folded);
	top = render(&f, r, "top", NULL);
	cr_assert(strstr(top, ": 1000 groups (the 100 biggest shown, the rest in (other groups))"),
		  "%.300s", top);
	cr_assert_eq(top_group(top, VIEW_OTHER_GROUPS), other, "%s", strstr(top, "\n(other"));
	cr_assert(strstr(top, "samples of 900 smaller groups; with 500 samples of groups past the "
			      "first 1000)"),
		  "%s", strstr(top, "\n(other"));
	/* every group shown is one of the biggest */
	{
		size_t shown = 0;

		for (i = 0; i < 1000; i++) {
			char name[64];
			int64_t n;

			snprintf(name, sizeof(name), "http_route=/r%zu", i);
			n = top_group(top, name);
			if (n < 0)
				continue;
			shown++;
			cr_assert_eq(n, kept[i]);
			cr_assert_geq(n, shown_min, "%s", name);
		}
		cr_assert_eq(shown, 100);
	}
	free(top);
	/* the page says the same; the SVG draws 101 groups under the root */
	top = render(&f, r, "flamegraph", NULL);
	cr_assert(strstr(top, ",\"by\":\"label:http_route\",\"groups\":1000,\"groupsMerged\":900,"
			      "\"groupSamplesUnseen\":500,\"groupsShownMax\":100,"),
		  "%.400s", strstr(top, "window.__PROFILE"));
	free(top);
	top = render(&f, r, "svg", NULL);
	{
		size_t ngroups = 0;

		for (p = strstr(top, "data-kind=\"group\""); p;
		     p = strstr(p + 1, "data-kind=\"group\""))
			ngroups++;
		cr_assert_eq(ngroups, 101);
	}
	free(top);
	pprofread__free(r);
}

Test(viewgroup, bad_by)
{
	struct view_filter f = {0};
	char err[256];

	cr_assert_eq(view_parse_by("frame:(", &f, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "'frame:('") && strstr(err, "("), "%s", err);
	cr_assert_eq(view_parse_by("frame:", &f, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "the REGEX is empty"), "%s", err);
	cr_assert_eq(view_parse_by("label:", &f, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "the label KEY is empty"), "%s", err);
	cr_assert_eq(view_parse_by("stack", &f, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "line, function, frame:REGEX or label:KEY"), "%s", err);
	cr_assert_eq(f.group_by, VIEW_BY_NONE);
	cr_assert_eq(view_parse_by("line", &f, err, sizeof(err)), 0);
	cr_assert_eq(view_parse_by("label:a", &f, err, sizeof(err)), 0);
	cr_assert(f.by_line && f.group_by == VIEW_BY_LABEL && strcmp(f.group_arg, "a") == 0);
}

Test(viewgroup, label_names_as_collectors_take_them)
{
	cr_assert(view_label_key_is("http_route", "http.route"));
	cr_assert(view_label_key_is("http.route", "http.route"));
	cr_assert(view_label_key_is("http_route", "http_route"));
	cr_assert(view_label_key_is("_1a", "1a"));
	cr_assert(view_label_key_is("a__b", "a\xc3\xa9"
					    "b")); /* one '_' per byte, as label_name */
	cr_assert_not(view_label_key_is("http_route", "http.rout"));
	cr_assert_not(view_label_key_is("http_routes", "http.route"));
	cr_assert_not(view_label_key_is("httpXroute", "http.route"));
	cr_assert_not(view_label_key_is("1a", "_1a"));
}

/* ---- the command line: --label splits at the first '=', --by's errors exit 2 --------------- */

static void file_setup(void)
{
	tmpdir_make("test_viewgroup");
	cr_redirect_stderr();
}

static void file_teardown(void)
{
	tmpdir_remove();
}

TestSuite(viewgroupcli, .init = file_setup, .fini = file_teardown);

Test(viewgroupcli, label_value_with_equals_and_exit_codes)
{
	static struct tsample s[200];
	char *prof, *out, *argv[12], buf[1 << 16];
	int64_t want = 0, got = 0;
	struct pprof *p;
	FILE *f;
	size_t i, n;

	/* a file: the samples' profile as the test wrote it */
	draw(s, 200);
	for (i = 0; i < 200; i++)
		if (s[i].route && strcmp(s[i].route, "/a=b") == 0)
			want += s[i].count;
	cr_assert_gt(want, 0);
	cr_assert_neq(asprintf(&prof, "%s/p.pb.gz", tmpdir), -1);
	cr_assert_neq(asprintf(&out, "%s/out.folded", tmpdir), -1);
	{
		/* one frame, the route label: the file the command line reads */
		uint64_t m, fn, loc;

		p = pprof__new();
		m = pprof_mapping(p, 0, 0, 0, "[ruby]", "");
		fn = pprof_function(p, "main", "", "/app/x.rb", 1);
		loc = pprof_location(p, m, 0, fn, 2);
		for (i = 0; i < 200; i++) {
			const int64_t v[2] = {s[i].count, 0};
			struct pprof_label l = {.key = "http_route", .str = s[i].route};

			cr_assert_eq(pprof_add_sample(p, &loc, 1, v, &l, s[i].route ? 1 : 0), 0);
		}
		cr_assert_eq(pprof_write_file(p, prof), 0);
		pprof__free(p);
	}
	argv[0] = "report";
	argv[1] = "-f";
	argv[2] = "collapsed";
	argv[3] = "-o";
	argv[4] = out;
	argv[5] = "--label";
	argv[6] = strdup("http.route=/a=b");
	argv[7] = prof;
	argv[8] = NULL;
	cr_assert_eq(report_main(8, argv), 0);
	f = fopen(out, "r");
	cr_assert_not_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	cr_assert(sscanf(buf, "main %" SCNd64, &got) == 1, "%s", buf);
	cr_assert_eq(got, want);
	free(argv[6]);
	/* --by's errors are usage errors */
	argv[5] = "--by";
	argv[6] = "frame:[";
	cr_assert_eq(report_main(8, argv), 2);
	argv[6] = "frame:";
	cr_assert_eq(report_main(8, argv), 2);
	argv[6] = "everything";
	cr_assert_eq(report_main(8, argv), 2);
	free(prof);
	free(out);
}
