/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * report.h - the `rubyprofd report` command (report.c), and the views that --oneshot writes
 * beside its profile through it.
 */
#ifndef RP_REPORT_H
#define RP_REPORT_H

#include <stddef.h>
#include <stdio.h>

/* `rubyprofd report ARGS` (argv[0] is "report"): the exit status (0, 1 failure, 2 usage). */
int report_main(int argc, char **argv);
/*
 * Writes the view of one profile in format beside it: PATH.pb.gz -> PATH.html (the format's
 * extension), the path into out_path[len]; by: a --by value, or NULL. 0 or -errno with a message
 * in err.
 */
int report_write_beside(const char *pprof_path, const char *format, const char *by, char *out_path,
			size_t len, char *err, size_t errlen);
/*
 * The oneshot summary's top list with --by (by: a --by value): the profile just written, read
 * back and grouped, top rows per group, to out. 0 or -errno with a message in err.
 */
int report_write_top_of(const char *pprof_path, const char *by, FILE *out, unsigned int top,
			char *err, size_t errlen);

#endif
