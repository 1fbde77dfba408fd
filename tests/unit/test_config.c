// SPDX-License-Identifier: GPL-2.0-only
/* Command-line parsing: defaults, strict numbers, the command after "--". */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <getopt.h>

#include "config.h"

static enum config_result parse(struct config *cfg, char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	optind = 0; /* getopt_long is reset between tests */
	return config_parse(cfg, argc, argv);
}

Test(config, defaults, .init = cr_redirect_stderr)
{
	char *argv[] = {"rubyprofd", "--oneshot", NULL};
	struct config cfg;

	cr_assert_eq(parse(&cfg, argv), CONFIG_RUN);
	cr_assert_eq(cfg.frequency, 99);
	cr_assert_eq(cfg.max_frames, 4096);
	cr_assert_float_eq(cfg.duration, 10.0, 1e-9);
	cr_assert_null(cfg.command);
	cr_assert_eq(cfg.npids, 0);
}

Test(config, options_and_command)
{
	char *argv[] = {"rubyprofd", "--oneshot",    "-d",    "2.5", "--frequency", "999", "-o",
			"x.pb.gz",   "--max-frames", "10000", "--",  "ruby",	    "-e",  "1",
			NULL};
	struct config cfg;

	cr_assert_eq(parse(&cfg, argv), CONFIG_RUN);
	cr_assert_float_eq(cfg.duration, 2.5, 1e-9);
	cr_assert_eq(cfg.frequency, 999);
	cr_assert_str_eq(cfg.output, "x.pb.gz");
	cr_assert_eq(cfg.max_frames, 10000);
	cr_assert_str_eq(cfg.command[0], "ruby");
	cr_assert_str_eq(cfg.command[1], "-e");
}

Test(config, command_without_duration_runs_until_exit)
{
	char *argv[] = {"rubyprofd", "--oneshot", "ruby", "--version", NULL};
	struct config cfg;

	cr_assert_eq(parse(&cfg, argv), CONFIG_RUN);
	cr_assert_float_eq(cfg.duration, 0.0, 1e-9);
	/* the command's own options stay its own */
	cr_assert_str_eq(cfg.command[1], "--version");
}

Test(config, repeated_pids)
{
	char *argv[] = {"rubyprofd", "--oneshot", "-p", "12", "--pid", "34", NULL};
	struct config cfg;

	cr_assert_eq(parse(&cfg, argv), CONFIG_RUN);
	cr_assert_eq(cfg.npids, 2);
	cr_assert_eq(cfg.pids[0], 12);
	cr_assert_eq(cfg.pids[1], 34);
}

Test(config, bad_numbers_are_refused, .init = cr_redirect_stderr)
{
	char *bad[][5] = {
		{"rubyprofd", "--oneshot", "-F", "0", NULL},
		{"rubyprofd", "--oneshot", "-F", "12x", NULL},
		{"rubyprofd", "--oneshot", "-F", "-5", NULL},
		{"rubyprofd", "--oneshot", "-F", "100000", NULL},
		{"rubyprofd", "--oneshot", "-d", "0", NULL},
		{"rubyprofd", "--oneshot", "-d", "nan", NULL},
		{"rubyprofd", "--oneshot", "-p", "abc", NULL},
		{"rubyprofd", "--oneshot", "--max-frames", "0", NULL},
		{"rubyprofd", "--oneshot", "--bogus", NULL, NULL},
		{"rubyprofd", "-d", "5", NULL, NULL}, /* --duration without --oneshot */
	};
	struct config cfg;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(parse(&cfg, bad[i]), CONFIG_EXIT_BAD, "case %zu", i);
}

Test(config, pid_and_command_exclusive, .init = cr_redirect_stderr)
{
	char *argv[] = {"rubyprofd", "--oneshot", "-p", "1", "--", "ruby", NULL};
	struct config cfg;

	cr_assert_eq(parse(&cfg, argv), CONFIG_EXIT_BAD);
}

Test(config, help_and_version, .init = cr_redirect_stdout)
{
	char *h[] = {"rubyprofd", "--help", NULL};
	char *v[] = {"rubyprofd", "--version", NULL};
	struct config cfg;

	cr_assert_eq(parse(&cfg, h), CONFIG_EXIT_OK);
	cr_assert_eq(parse(&cfg, v), CONFIG_EXIT_OK);
}
