// SPDX-License-Identifier: GPL-2.0-only
/*
 * report.c - `rubyprofd report FILE.pb.gz... [OPTIONS]`: parses the options, reads and merges
 * the files into a view (view.c) and writes the chosen format. Also the helper that --oneshot
 * uses to write a view beside its profile.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/fileio.h"
#include "lib/text.h"
#include "view/report.h"
#include "view/view.h"

#define REPORT_DEFAULT_TOP 30

/*
 * A view into a file for a user: rendered in memory, then written by fileio_write_file (never
 * through a link, mode FILEIO_MODE, all or nothing). 0 or -errno.
 */
static int write_view_file(const struct view *v, const char *format, const char *path,
			   const char *title, unsigned int top)
{
	char *data = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&data, &len);
	int ret;

	if (!mem)
		return -errno;
	ret = view_write(v, format, mem, title, top);
	if (fclose(mem) && !ret)
		ret = -ENOMEM;
	if (!ret)
		ret = fileio_write_file(path, data, len);
	free(data);
	return ret;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: rubyprofd report FILE.pb.gz... [OPTIONS]\n"
		"Reads pprof profiles (rubyprofd's, or any), merges them into one view, writes "
		"it.\n"
		"  -f, --format F      flamegraph (HTML, default), svg, speedscope, collapsed, "
		"top\n"
		"  -o, --output OUT    where to write (- : stdout); default: stdout for collapsed "
		"and\n"
		"                      top, else the first FILE's name with the format's extension "
		"in\n"
		"                      the current directory\n"
		"      --pid PID       only the samples of this process\n"
		"      --thread T      only this thread: a tid, a thread name or a Ruby thread\n"
		"      --label K=V     only samples with this label (repeatable, all must match;\n"
		"                      K as written or as collectors name it: http.route is\n"
		"                      http_route)\n"
		"      --focus REGEX   only stacks with a frame (name or file) matching REGEX\n"
		"      --since TIME    only files whose time range ends at or after TIME\n"
		"      --until TIME    only files whose time range starts at or before TIME\n"
		"                      TIME: seconds since the epoch, or YYYY-MM-DDTHH:MM:SS "
		"(UTC)\n"
		"      --by W          top: function (default) or line; and/or groups (the top\n"
		"                      and a flame graph per group): frame:REGEX, the first frame\n"
		"                      from the root whose function matches "
		"(frame:'Controller#'),\n"
		"                      or label:KEY, a label's value (label:http.route)\n"
		"      --top N         top: rows (per group with --by; default %d)\n"
		"      --title TEXT    the title of the graphical views\n",
		REPORT_DEFAULT_TOP);
}

/* Seconds since the epoch (fractions allowed) or an ISO 8601 UTC time, into ns. 0 or -EINVAL. */
static int parse_time(const char *s, int64_t *ns)
{
	struct tm tm;
	char *end;
	double secs;

	errno = 0;
	secs = strtod(s, &end);
	if (!errno && end != s && *end == '\0' && secs >= 0 && secs < 9.2e9) {
		*ns = (int64_t)(secs * 1e9);
		return 0;
	}
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (!end || (*end && strcmp(end, "Z") != 0))
		return -EINVAL;
	*ns = (int64_t)timegm(&tm) * 1000000000LL;
	return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	uint64_t v;

	if (text_parse_u64(s, 0, max, &v))
		return -EINVAL;
	*out = (unsigned long)v;
	return 0;
}

enum {
	OPT_PID = 256,
	OPT_THREAD,
	OPT_LABEL,
	OPT_FOCUS,
	OPT_SINCE,
	OPT_UNTIL,
	OPT_BY,
	OPT_TOP,
	OPT_TITLE
};

/* The default output: the first input's base name, its .pb.gz or .pb replaced by ext. */
static char *default_output(const char *input, const char *ext)
{
	char *copy = strdup(input), *base, *dot, *out = NULL;

	if (!copy)
		return NULL;
	base = basename(copy);
	dot = strstr(base, ".pb.gz");
	if (!dot)
		dot = strstr(base, ".pb");
	if (dot)
		*dot = '\0';
	if (asprintf(&out, "%s%s", base, ext) < 0)
		out = NULL;
	free(copy);
	return out;
}

int report_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"pid", required_argument, NULL, OPT_PID},
		{"thread", required_argument, NULL, OPT_THREAD},
		{"label", required_argument, NULL, OPT_LABEL},
		{"focus", required_argument, NULL, OPT_FOCUS},
		{"since", required_argument, NULL, OPT_SINCE},
		{"until", required_argument, NULL, OPT_UNTIL},
		{"by", required_argument, NULL, OPT_BY},
		{"top", required_argument, NULL, OPT_TOP},
		{"title", required_argument, NULL, OPT_TITLE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "flamegraph", *output = NULL, *title = NULL;
	struct view_filter flt = {0};
	char err[512], *eq, *derived = NULL, *title_buf = NULL;
	unsigned long num, top = REPORT_DEFAULT_TOP;
	struct view_stats st;
	struct view *v = NULL;
	bool to_stdout;
	int c, i, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case OPT_PID:
			if (parse_uint(optarg, INT32_MAX, &num) || !num)
				goto bad_value;
			flt.pid = (pid_t)num;
			break;
		case OPT_THREAD:
			flt.thread = optarg;
			break;
		case OPT_LABEL:
			eq = strchr(optarg, '=');
			if (!eq || eq == optarg || flt.nlabels == VIEW_MAX_LABELS) {
				fprintf(stderr,
					"rubyprofd report: --label '%s': want KEY=VALUE (at most "
					"%d)\n",
					optarg, VIEW_MAX_LABELS);
				return 2;
			}
			*eq = '\0';
			flt.label_key[flt.nlabels] = optarg;
			flt.label_val[flt.nlabels++] = eq + 1;
			break;
		case OPT_FOCUS:
			flt.focus = optarg;
			break;
		case OPT_SINCE:
		case OPT_UNTIL:
			if (parse_time(optarg, c == OPT_SINCE ? &flt.since_ns : &flt.until_ns))
				goto bad_value;
			break;
		case OPT_BY:
			if (view_parse_by(optarg, &flt, err, sizeof(err))) {
				fprintf(stderr, "rubyprofd report: --by %s\n", err);
				return 2;
			}
			break;
		case OPT_TOP:
			if (parse_uint(optarg, 1000000, &top))
				goto bad_value;
			break;
		case OPT_TITLE:
			title = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!view_format_ext(format)) {
		fprintf(stderr,
			"rubyprofd report: --format '%s': flamegraph, svg, speedscope, collapsed "
			"or top\n",
			format);
		return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "rubyprofd report: no profile given\n");
		usage(stderr);
		return 2;
	}
	flt.want_top = strcmp(format, "top") == 0;
	v = view__new(&flt, err, sizeof(err));
	if (!v) {
		fprintf(stderr, "rubyprofd report: %s\n", err);
		return 2;
	}
	for (i = optind; i < argc; i++) {
		if (view_add_file(v, argv[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "rubyprofd report: %s\n", err);
			goto cleanup;
		}
	}
	if (view_finish(v)) {
		fprintf(stderr, "rubyprofd report: out of memory\n");
		goto cleanup;
	}
	view_stats(v, &st);
	if (!st.files) {
		fprintf(stderr, "rubyprofd report: every profile is outside --since/--until\n");
		goto cleanup;
	}
	if (!title) {
		const char *by = view_group_by_text(v);

		if (argc - optind == 1)
			ret = asprintf(&title_buf, "rubyprofd: %s%s%s", argv[optind],
				       by ? " by " : "", by ? by : "");
		else
			ret = asprintf(&title_buf, "rubyprofd: %" PRIu64 " profiles%s%s", st.files,
				       by ? " by " : "", by ? by : "");
		title = ret < 0 ? "rubyprofd" : title_buf;
		ret = 1;
	}
	/* by default, the text formats go to stdout, the others to a file named after the input */
	if (!output && strcmp(format, "top") != 0 && strcmp(format, "collapsed") != 0) {
		derived = default_output(argv[optind], view_format_ext(format));
		if (!derived) {
			fprintf(stderr, "rubyprofd report: out of memory\n");
			goto cleanup;
		}
	}
	output = output ? output : derived ? derived : "-";
	to_stdout = strcmp(output, "-") == 0;
	if (to_stdout) {
		c = view_write(v, format, stdout, title, (unsigned int)top);
		if (fflush(stdout) && !c)
			c = -errno;
	} else {
		c = write_view_file(v, format, output, title, (unsigned int)top);
	}
	if (c) {
		fprintf(stderr, "rubyprofd report: writing '%s': %s\n", output, fileio_strerror(c));
		goto cleanup;
	}
	if (!to_stdout)
		fprintf(stderr,
			"rubyprofd report: %" PRIu64 " samples from %" PRIu64 " profile%s (%" PRIu64
			" skipped by time) written to '%s'\n",
			view_total(v), st.files, st.files == 1 ? "" : "s", st.files_skipped,
			output);
	if (st.frames_refused || st.nodes_truncated || st.top_dropped)
		fprintf(stderr,
			"rubyprofd report: bounds hit: %" PRIu64 " frames past %u, %" PRIu64
			" stacks cut at %u nodes, %" PRIu64 " stacks out of top\n",
			st.frames_refused, VIEW_MAX_FRAMES, st.nodes_truncated, VIEW_MAX_NODES,
			st.top_dropped);
	if (st.groups_merged || st.group_samples_unseen)
		fprintf(stderr,
			"rubyprofd report: %" PRIu64 " groups: the %u biggest shown, %" PRIu64
			" summed in %s, and %" PRIu64
			" samples of groups past the first %u told apart\n",
			st.groups, VIEW_MAX_GROUPS, st.groups_merged, VIEW_OTHER_GROUPS,
			st.group_samples_unseen, VIEW_MAX_GROUPS_SEEN);
	ret = 0;
cleanup:
	view__free(v);
	free(derived);
	free(title_buf);
	return ret;

bad_value:
	fprintf(stderr, "rubyprofd report: %s: invalid value '%s'\n", argv[optind - 1], optarg);
	return 2;
}

int report_write_beside(const char *pprof_path, const char *format, const char *by, char *out_path,
			size_t len, char *err, size_t errlen)
{
	const char *ext = view_format_ext(format);
	struct view_filter flt = {.want_top = strcmp(format, "top") == 0};
	struct view *v = NULL;
	size_t base;
	int ret;

	if (!ext) {
		snprintf(err, errlen, "unknown format '%s'", format);
		return -EINVAL;
	}
	if (by && view_parse_by(by, &flt, err, errlen))
		return -EINVAL;
	base = strlen(pprof_path);
	if (base > 6 && strcmp(pprof_path + base - 6, ".pb.gz") == 0)
		base -= 6;
	if (snprintf(out_path, len, "%.*s%s", (int)base, pprof_path, ext) >= (int)len) {
		snprintf(err, errlen, "'%s': path too long", pprof_path);
		return -ENAMETOOLONG;
	}
	v = view__new(&flt, err, errlen);
	if (!v)
		return -errno;
	ret = view_add_file(v, pprof_path, err, errlen);
	if (ret < 0)
		goto cleanup;
	ret = view_finish(v);
	if (ret) {
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	ret = write_view_file(v, format, out_path, pprof_path, REPORT_DEFAULT_TOP);
	if (ret)
		snprintf(err, errlen, "writing '%s': %s", out_path, fileio_strerror(ret));
cleanup:
	view__free(v);
	return ret < 0 ? ret : 0;
}

int report_write_top_of(const char *pprof_path, const char *by, FILE *out, unsigned int top,
			char *err, size_t errlen)
{
	struct view_filter flt = {.want_top = true};
	struct view *v;
	int ret;

	if (view_parse_by(by, &flt, err, errlen))
		return -EINVAL;
	v = view__new(&flt, err, errlen);
	if (!v)
		return -errno;
	ret = view_add_file(v, pprof_path, err, errlen);
	if (ret >= 0) {
		ret = view_finish(v);
		if (ret)
			snprintf(err, errlen, "out of memory");
	}
	if (!ret) {
		ret = view_write_top(v, out, top);
		if (ret)
			snprintf(err, errlen, "%s", strerror(-ret));
	}
	view__free(v);
	return ret < 0 ? ret : 0;
}
