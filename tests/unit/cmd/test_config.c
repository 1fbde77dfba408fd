// SPDX-License-Identifier: GPL-2.0-only
/*
 * The configuration: command-line parsing (defaults, strict numbers, the command after "--"),
 * the file under it (real files in a temporary directory), errors word for word, reload.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/config.h"
#include "lib/log.h"
#include "output/protocol.h"
#include "rubyprof.h"
#include "../tmpdir.h"

#define STR_(x) #x
#define STR(x)	STR_(x)

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

/* ---- the file and the service ----------------------------------------------------------------- */

/* Each test runs in its own process (Criterion forks): one directory per test. */
/* The settings that every_key_from_the_file and every_flag_wins_over_the_file both check. */
struct settings {
	unsigned int frequency;
	double interval;
	unsigned int max_frames;
	const char *spool_dir;
	uint64_t spool_max_bytes;
	double spool_max_age;
	const char *metrics_address;
	double rescan_interval;
	const char *hostname;
};

static void expect_settings(const struct config *c, struct settings want)
{
	cr_assert_eq(c->frequency, want.frequency);
	cr_assert_float_eq(c->interval, want.interval, 1e-9);
	cr_assert_eq(c->max_frames, want.max_frames);
	cr_assert_str_eq(c->spool_dir, want.spool_dir);
	cr_assert_eq(c->spool_max_bytes, want.spool_max_bytes);
	cr_assert_float_eq(c->spool_max_age, want.spool_max_age, 1e-9);
	cr_assert_str_eq(c->metrics_address, want.metrics_address);
	cr_assert_float_eq(c->rescan_interval, want.rescan_interval, 1e-9);
	cr_assert_str_eq(c->hostname, want.hostname);
}

/* A label of the configuration: this key with this value. */
static void expect_label(const struct config_label *l, const char *key, const char *value)
{
	cr_assert_str_eq(l->key, key);
	cr_assert_str_eq(l->value, value);
}

/* struct config is about 300 KiB: not on the stack, and two for the reload tests */
static struct config cfg, cfg2;

static void setup(void)
{
	tmpdir_make("rp-test-config");
}

static char *write_conf(const char *name, const char *text)
{
	char *p = tmpdir_path(name);
	FILE *f = fopen(p, "w");

	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	cr_assert_eq(fclose(f), 0);
	/* whatever the umask: a file others can write is refused (trusted_files below) */
	cr_assert_eq(chmod(p, 0644), 0);
	return p;
}

static int count(char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return argc;
}

/*
 * Parses with `def` as the default file, with stderr in *err (the caller frees it): fd 2 goes
 * to a temporary file for the call, so that every message is compared whole.
 */
static enum config_result parse_err(struct config *c, char **argv, const char *def, char **err)
{
	enum config_result res;
	FILE *tmp = tmpfile();
	int saved;
	long n;

	cr_assert_not_null(tmp);
	fflush(stderr);
	saved = dup(2);
	cr_assert_geq(saved, 0);
	cr_assert_geq(dup2(fileno(tmp), 2), 0);
	res = config_parse_with_default(c, count(argv), argv, def);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = ftell(tmp);
	cr_assert_geq(n, 0);
	*err = calloc(1, (size_t)n + 1);
	cr_assert_not_null(*err);
	rewind(tmp);
	cr_assert_eq(fread(*err, 1, (size_t)n, tmp), (size_t)n);
	fclose(tmp);
	return res;
}

/* Parses and expects success with nothing said. */
static void parse_ok(struct config *c, char **argv, const char *def)
{
	char *err;

	cr_assert_eq(parse_err(c, argv, def, &err), CONFIG_RUN, "stderr: %s", err);
	cr_assert_str_empty(err);
	free(err);
}

/* Parses and expects exactly this message. */
static void parse_bad(char **argv, const char *def, const char *want)
{
	char *err;

	cr_assert_eq(parse_err(&cfg, argv, def, &err), CONFIG_EXIT_BAD, "argv[1] %s", argv[1]);
	cr_assert_str_eq(err, want);
	free(err);
}

/* A file with this text, read by the service as --config; expects this message for line `msg`. */
static void file_bad(const char *text, const char *msg)
{
	char *p = write_conf("bad.conf", text);
	char *argv[] = {"rubyprofd", "--config", p, NULL};
	char *want;

	cr_assert_neq(asprintf(&want, "rubyprofd: %s:%s\n", p, msg), -1);
	parse_bad(argv, "/nonexistent/default.conf", want);
	free(want);
}

TestSuite(conffile, .init = setup, .fini = tmpdir_remove);

Test(conffile, every_key_from_the_file)
{
	char *p = write_conf("all.conf", "# every key\n"
					 "frequency = 49\n"
					 "interval = 2.5\n"
					 "max_frames = 300\n"
					 "spool_dir = /srv/spool\n"
					 "spool_max_bytes = 64M\n"
					 "spool_max_age = 90m\n"
					 "metrics_address = 127.0.0.1:9464\n"
					 "rescan_interval = 0\n"
					 "hostname = web-1.example\n"
					 "label = env=prod\n"
					 "log_level = debug\n"
					 "rule = comm ~ ^sidekiq$ => name=jobs\n");
	char *argv[] = {"rubyprofd", "--config", p, NULL};

	parse_ok(&cfg, argv, "/nonexistent/default.conf");
	cr_assert_not(cfg.oneshot);
	cr_assert_eq(cfg.config_file, p, "points into argv");
	cr_assert_not(cfg.config_file_missing);
	expect_settings(&cfg, (struct settings){49, 2.5, 300, "/srv/spool", 64ULL << 20, 5400,
						"127.0.0.1:9464", 0, "web-1.example"});
	cr_assert_eq(cfg.nlabels, 1);
	expect_label(&cfg.labels[0], "env", "prod");
	cr_assert_eq(cfg.log_level, LOG_LVL_DEBUG);
	cr_assert_eq(cfg.nrules, 1);
	cr_assert_str_eq(cfg.rules[0].text, "comm ~ ^sidekiq$ => name=jobs");
}

Test(conffile, value_forms)
{
	char *p = write_conf("forms.conf", "spool_max_bytes = 1048576\n"
					   "spool_max_age = 7d\n"
					   "metrics_address = [::1]:9464\n"
					   "rescan_interval = 12.5\n"
					   "interval = 3600\n");
	char *argv[] = {"rubyprofd", "--config", p, NULL};
	char *sizes[][2] = {{"2G", "2147483648"}, {"1536K", "1572864"}, {"1M", "1048576"}};
	char *ages[][2] = {{"45", "45"}, {"45s", "45"}, {"1.5h", "5400"}, {"2d", "172800"}};
	char *a2[] = {"rubyprofd", "--config",	      p,    "--spool-max-bytes",
		      NULL,	   "--spool-max-age", NULL, NULL};
	size_t i;

	parse_ok(&cfg, argv, "/nonexistent/default.conf");
	cr_assert_eq(cfg.spool_max_bytes, 1048576);
	cr_assert_float_eq(cfg.spool_max_age, 7 * 86400.0, 1e-9);
	cr_assert_str_eq(cfg.metrics_address, "[::1]:9464");
	cr_assert_float_eq(cfg.rescan_interval, 12.5, 1e-9);
	cr_assert_float_eq(cfg.interval, 3600, 1e-9);
	for (i = 0; i < 3; i++) {
		a2[4] = sizes[i][0];
		a2[6] = "1h";
		parse_ok(&cfg, a2, "/nonexistent/default.conf");
		cr_assert_eq(cfg.spool_max_bytes, strtoull(sizes[i][1], NULL, 10), "%s", a2[4]);
	}
	for (i = 0; i < 4; i++) {
		a2[4] = "1M";
		a2[6] = ages[i][0];
		parse_ok(&cfg, a2, "/nonexistent/default.conf");
		cr_assert_float_eq(cfg.spool_max_age, strtod(ages[i][1], NULL), 1e-9, "%s", a2[6]);
	}
}

Test(conffile, every_flag_wins_over_the_file)
{
	char *p = write_conf("all.conf", "frequency = 49\n"
					 "interval = 2.5\n"
					 "max_frames = 300\n"
					 "spool_dir = /srv/spool\n"
					 "spool_max_bytes = 64M\n"
					 "spool_max_age = 90m\n"
					 "metrics_address = 127.0.0.1:9464\n"
					 "rescan_interval = 0\n"
					 "hostname = web-1\n"
					 "label = env=prod\n"
					 "label = team=shop\n"
					 "log_level = debug\n"
					 "rule = comm ~ ^a$ => name=a\n");
	char *argv[] = {"rubyprofd",
			"--config",
			p,
			"-F",
			"7",
			"--interval",
			"60",
			"--max-frames",
			"100",
			"--spool-dir",
			"/tmp/s",
			"--spool-max-bytes",
			"2G",
			"--spool-max-age",
			"1h",
			"--metrics-address",
			"0.0.0.0:1",
			"--rescan-interval",
			"5",
			"--hostname",
			"web-2",
			"--label",
			"env=staging",
			"--label",
			"zone=b",
			"--log-level",
			"warn",
			"--rule",
			"comm ~ ^b$ => ignore",
			"-p",
			"42",
			NULL};

	parse_ok(&cfg, argv, "/nonexistent/default.conf");
	expect_settings(&cfg, (struct settings){7, 60, 100, "/tmp/s", 2ULL << 30, 3600, "0.0.0.0:1",
						5, "web-2"});
	cr_assert_eq(cfg.log_level, LOG_LVL_WARN);
	cr_assert_eq(cfg.npids, 1);
	cr_assert_eq(cfg.pids[0], 42);
	/* a --label replaces the file's label of that name and keeps the others */
	cr_assert_eq(cfg.nlabels, 3);
	expect_label(&cfg.labels[0], "env", "staging");
	expect_label(&cfg.labels[1], "team", "shop");
	cr_assert_str_eq(cfg.labels[2].key, "zone");
	/* a --rule comes before the file's rules: the first match wins */
	cr_assert_eq(cfg.nrules, 2);
	cr_assert_str_eq(cfg.rules[0].text, "comm ~ ^b$ => ignore");
	cr_assert_str_eq(cfg.rules[0].where, "--rule");
	cr_assert_str_eq(cfg.rules[1].text, "comm ~ ^a$ => name=a");
}

Test(conffile, verbose_and_quiet_win_over_log_level)
{
	char *p = write_conf("l.conf", "log_level = warn\n");
	char *q[] = {"rubyprofd", "--config", p, "--log-level", "debug", "-q", NULL};
	char *v[] = {"rubyprofd", "--config", p, "-v", NULL};
	char *vv[] = {"rubyprofd", "--config", p, "-vv", NULL};
	char *file[] = {"rubyprofd", "--config", p, NULL};

	parse_ok(&cfg, q, NULL);
	cr_assert_eq(cfg.log_level, LOG_LVL_ERROR);
	parse_ok(&cfg, v, NULL);
	cr_assert_eq(cfg.log_level, LOG_LVL_INFO);
	parse_ok(&cfg, vv, NULL);
	cr_assert_eq(cfg.log_level, LOG_LVL_DEBUG);
	parse_ok(&cfg, file, NULL);
	cr_assert_eq(cfg.log_level, LOG_LVL_WARN);
}

Test(conffile, defaults_of_the_service)
{
	char *def = tmpdir_path("absent.conf");
	char *argv[] = {"rubyprofd", NULL};

	/* a missing default file is no error: every default */
	parse_ok(&cfg, argv, def);
	cr_assert_not(cfg.oneshot);
	cr_assert_eq(cfg.config_file, def);
	cr_assert(cfg.config_file_missing);
	cr_assert_eq(cfg.frequency, 19);
	cr_assert_float_eq(cfg.interval, 10, 1e-9);
	cr_assert_eq(cfg.max_frames, 4096);
	cr_assert_str_eq(cfg.spool_dir, "/var/lib/rubyprofd/spool");
	cr_assert_eq(cfg.spool_max_bytes, 256ULL << 20);
	cr_assert_float_eq(cfg.spool_max_age, 86400, 1e-9);
	cr_assert_str_empty(cfg.metrics_address);
	cr_assert_float_eq(cfg.rescan_interval, 30, 1e-9);
	cr_assert_str_empty(cfg.hostname);
	cr_assert_eq(cfg.nlabels, 0);
	cr_assert_eq(cfg.nrules, 0);
	cr_assert_eq(cfg.log_level, LOG_LVL_INFO);
	cr_assert_float_eq(cfg.duration, 0, 1e-9);
	cr_assert_null(cfg.command);
	cr_assert_null(cfg.output);
}

Test(conffile, the_default_file_is_read_when_present)
{
	char *def = write_conf("rubyprofd.conf", "frequency = 3\n");
	char *argv[] = {"rubyprofd", NULL};

	parse_ok(&cfg, argv, def);
	cr_assert_eq(cfg.config_file, def);
	cr_assert_not(cfg.config_file_missing);
	cr_assert_eq(cfg.frequency, 3);
}

Test(conffile, config_parse_uses_the_etc_file)
{
	char *argv[] = {"rubyprofd", NULL};

	if (access(CONFIG_DEFAULT_FILE, F_OK) == 0)
		cr_skip_test("%s exists on this machine", CONFIG_DEFAULT_FILE);
	optind = 0;
	cr_assert_eq(config_parse(&cfg, 1, argv), CONFIG_RUN);
	cr_assert_str_eq(cfg.config_file, "/etc/rubyprofd/rubyprofd.conf");
	cr_assert(cfg.config_file_missing);
}

Test(conffile, defaults_of_oneshot_read_no_file)
{
	/* a broken default file: --oneshot must not read it */
	char *def = write_conf("rubyprofd.conf", "frequncy = 3\n");
	char *argv[] = {"rubyprofd", "--oneshot", NULL};

	parse_ok(&cfg, argv, def);
	cr_assert(cfg.oneshot);
	cr_assert_null(cfg.config_file);
	cr_assert_eq(cfg.frequency, 99);
	cr_assert_eq(cfg.log_level, LOG_LVL_WARN); /* the table's default for --oneshot */
	cr_assert_float_eq(cfg.duration, 10, 1e-9);
	cr_assert_eq(cfg.top, 15);
}

Test(conffile, oneshot_with_config_ignores_service_keys)
{
	char *p = write_conf("both.conf", "frequency = 49\n"
					  "max_frames = 200\n"
					  "interval = 5\n"
					  "spool_dir = /srv/x\n"
					  "label = env=prod\n"
					  "rule = comm ~ x => ignore\n"
					  "metrics_address = 127.0.0.1:1\n"
					  "log_level = error\n");
	char *argv[] = {"rubyprofd", "--oneshot", "--config", p, NULL};

	parse_ok(&cfg, argv, NULL);
	cr_assert_eq(cfg.config_file, p);
	cr_assert_eq(cfg.frequency, 49);
	cr_assert_eq(cfg.max_frames, 200);
	cr_assert_eq(cfg.log_level, LOG_LVL_ERROR);
	cr_assert_float_eq(cfg.interval, 10, 1e-9);
	cr_assert_str_eq(cfg.spool_dir, "/var/lib/rubyprofd/spool");
	cr_assert_eq(cfg.nlabels, 0);
	cr_assert_eq(cfg.nrules, 0);
	cr_assert_str_empty(cfg.metrics_address);
}

Test(conffile, missing_config_file_is_an_error)
{
	char *p = tmpdir_path("absent.conf");
	char *argv[] = {"rubyprofd", "--config", p, NULL};
	char *one[] = {"rubyprofd", "--oneshot", "--config", p, NULL};
	char *want;

	cr_assert_neq(
		asprintf(&want, "rubyprofd: cannot read '%s': No such file or directory\n", p), -1);
	parse_bad(argv, NULL, want);
	parse_bad(one, NULL, want);
	free(want);
}

Test(conffile, unreadable_file_is_an_error)
{
	/* a directory opens, but reading it fails (and does so for root too) */
	char *argv[] = {"rubyprofd", "--config", tmpdir, NULL};
	char *want;

	cr_assert_neq(asprintf(&want, "rubyprofd: cannot read '%s': Is a directory\n", tmpdir), -1);
	parse_bad(argv, NULL, want);
	/* the default path too: only its absence is fine */
	argv[1] = NULL;
	parse_bad(argv, tmpdir, want);
	free(want);
}

Test(conffile, error_messages)
{
	char long_line[4200];
	char long_value[300];

	file_bad("frequncy = 5\n", "1: unknown key 'frequncy'");
	file_bad("# c\n\nfrequency = 0\n", "3: frequency: '0' is not a number from 1 to 10000");
	file_bad("frequency = 10001\n", "1: frequency: '10001' is not a number from 1 to 10000");
	file_bad("frequency = -5\n", "1: frequency: '-5' is not a number from 1 to 10000");
	file_bad("frequency =\n", "1: frequency: '' is not a number from 1 to 10000");
	file_bad("\n\n\n\n\n\njust words\n", "7: line is not 'key = value'");
	file_bad("= 5\n", "1: line is not 'key = value'");
	file_bad("frequency = 5\nmax_frames = 9\n frequency = 6\n",
		 "3: frequency: given twice (first on line 1)");
	file_bad("pid = 5\n", "1: unknown key 'pid' (--pid is a command-line flag only)");
	file_bad("duration = 5\n",
		 "1: unknown key 'duration' (--duration is a command-line flag only)");
	file_bad("max-frames = 5\n", "1: unknown key 'max-frames' (did you mean 'max_frames'?)");
	file_bad("interval = 0.5\n",
		 "1: interval: '0.5' is not a number of seconds from 1 to 3600");
	file_bad("interval = 1e3\n",
		 "1: interval: '1e3' is not a number of seconds from 1 to 3600");
	file_bad("interval = 3601\n",
		 "1: interval: '3601' is not a number of seconds from 1 to 3600");
	file_bad("max_frames = 0\n",
		 "1: max_frames: '0' is not a number from 1 to " STR(RP_MAX_FRAMES_LIMIT));
	file_bad("spool_dir = spool\n", "1: spool_dir: 'spool' is not an absolute path");
	file_bad("spool_max_bytes = 1023K\n",
		 "1: spool_max_bytes: '1023K' is not a size from 1M to 1048576G (bytes, or a "
		 "number with the suffix K, M or G)");
	file_bad("spool_max_bytes = 5MB\n",
		 "1: spool_max_bytes: '5MB' is not a size from 1M to 1048576G (bytes, or a number "
		 "with the suffix K, M or G)");
	file_bad("spool_max_bytes = 99999999999999999999999G\n",
		 "1: spool_max_bytes: '99999999999999999999999G' is not a size from 1M to "
		 "1048576G (bytes, or a number with the suffix K, M or G)");
	file_bad("spool_max_age = 2w\n",
		 "1: spool_max_age: '2w' is not a duration from 1s to 3650d (a number with the "
		 "suffix s, m, h or d)");
	file_bad("spool_max_age = 0s\n",
		 "1: spool_max_age: '0s' is not a duration from 1s to 3650d (a number with the "
		 "suffix s, m, h or d)");
	file_bad("metrics_address = localhost:9464\n",
		 "1: metrics_address: 'localhost:9464' is not ADDRESS:PORT (an IPv4 address as in "
		 "127.0.0.1:9464, or an IPv6 one as in [::1]:9464)");
	file_bad("metrics_address = ::1:9464\n",
		 "1: metrics_address: '::1:9464' is not ADDRESS:PORT (an IPv4 address as in "
		 "127.0.0.1:9464, or an IPv6 one as in [::1]:9464)");
	file_bad("metrics_address = [::1]9464\n",
		 "1: metrics_address: '[::1]9464' is not ADDRESS:PORT (an IPv4 address as in "
		 "127.0.0.1:9464, or an IPv6 one as in [::1]:9464)");
	file_bad("metrics_address = 127.0.0.1:65536\n",
		 "1: metrics_address: '127.0.0.1:65536': the port must be a number from 1 to "
		 "65535");
	file_bad("metrics_address = [::1]:0\n",
		 "1: metrics_address: '[::1]:0': the port must be a number from 1 to 65535");
	file_bad("rescan_interval = 0.5\n",
		 "1: rescan_interval: '0.5' is not 0 (no rescans) or a number of seconds from 1 "
		 "to 3600");
	file_bad("hostname = a/b\n",
		 "1: hostname: 'a/b' is not a host name (at most 255 bytes, without '/', blanks or "
		 "control characters)");
	file_bad("label = 1x=y\n",
		 "1: label: '1x' is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, at most 63 bytes)");
	file_bad("label = env\n", "1: label: 'env' is not KEY=VALUE");
	file_bad("label = service_name=x\n", "1: label: the label name 'service_name' is reserved");
	file_bad("label = __name__=x\n", "1: label: the label name '__name__' is reserved");
	file_bad("label = env=\n",
		 "1: label: label 'env': the value must be 1 to 128 bytes without control "
		 "characters");
	file_bad("label = env=a\nlabel = env=b\n", "2: label: label 'env' is given twice");
	memset(long_value, 'v', sizeof(long_value));
	memcpy(long_value, "label = k=", 10);
	strcpy(long_value + 10 + 129, "\n");
	file_bad(long_value, "1: label: label 'k': the value must be 1 to 128 bytes without "
			     "control characters");
	file_bad("rule = \"\"\n", "1: rule: a rule must be 1 to 511 bytes");
	file_bad("log_level = verbose\n",
		 "1: log_level: 'verbose' is not one of error, warn, info, debug");
	file_bad("hostname = \"abc\n", "1: hostname: no closing '\"'");
	file_bad("hostname = \"a\\nb\"\n",
		 "1: hostname: unknown escape '\\n' in quotes (only \\\" and \\\\)");
	file_bad("hostname = \"a\" b\n", "1: hostname: text after the closing '\"'");
	memset(long_line, 'x', sizeof(long_line));
	memcpy(long_line, "rule = ", 7);
	strcpy(long_line + 4097, "\n");
	file_bad(long_line, "1: line longer than 4096 bytes");
	file_bad("hostname = a\nb\n", "2: line is not 'key = value'");
}

Test(conffile, a_line_of_4096_bytes_is_fine)
{
	char line[4200];
	char *p;

	/* "hostname = " and 4085 blanks before the value: 4096 bytes in all, and no newline */
	memset(line, ' ', sizeof(line));
	memcpy(line, "hostname = ", 11);
	strcpy(line + 4096 - 3, "h-1");
	p = write_conf("long.conf", line);
	{
		char *argv[] = {"rubyprofd", "--config", p, NULL};

		parse_ok(&cfg, argv, NULL);
	}
	cr_assert_str_eq(cfg.hostname, "h-1");
}

Test(conffile, a_nul_byte_is_an_error)
{
	char *p = tmpdir_path("nul.conf");
	char *argv[] = {"rubyprofd", "--config", p, NULL};
	char *want;
	FILE *f = fopen(p, "w");

	cr_assert_not_null(f);
	fwrite("hostname = a\0b\n", 1, 15, f);
	fclose(f);
	cr_assert_neq(asprintf(&want, "rubyprofd: %s:1: line with a NUL byte\n", p), -1);
	parse_bad(argv, NULL, want);
	free(want);
}

Test(conffile, comments_blanks_and_quotes)
{
	char *p = write_conf("q.conf",
			     "# a comment\n"
			     "   \t# an indented comment\n"
			     "\n"
			     "   \t  \n"
			     "  hostname\t=\t web#1  \r\n"
			     "label = note=a # b\n"
			     "label = quoted=\"  spaced \\\"and\\\\ escaped\\\" \"\n"
			     "label=tight=x\n"
			     "rule = \"cmdline ~ --queue[= ]\\\"?mail => name=mailer # q\"\n"
			     "metrics_address = \"\"\n");
	char *argv[] = {"rubyprofd", "--config", p, NULL};

	parse_ok(&cfg, argv, NULL);
	/* '#' inside a value is no comment */
	cr_assert_str_eq(cfg.hostname, "web#1");
	cr_assert_eq(cfg.nlabels, 3);
	expect_label(&cfg.labels[0], "note", "a # b");
	/* only the whole value is unquoted: here the quotes are part of it */
	expect_label(&cfg.labels[1], "quoted", "\"  spaced \\\"and\\\\ escaped\\\" \"");
	expect_label(&cfg.labels[2], "tight", "x");
	cr_assert_eq(cfg.nrules, 1);
	cr_assert_str_eq(cfg.rules[0].text, "cmdline ~ --queue[= ]\"?mail => name=mailer # q");
	cr_assert_str_empty(cfg.metrics_address);
}

Test(conffile, a_quoted_value_keeps_blanks_and_escapes)
{
	char *p = write_conf("q.conf", "label = \"k=  two  blanks \\\"quoted\\\" back\\\\slash \"\n"
				       "spool_dir = \"/srv/with space\"\n");
	char *argv[] = {"rubyprofd", "--config", p, NULL};

	parse_ok(&cfg, argv, NULL);
	expect_label(&cfg.labels[0], "k", "  two  blanks \"quoted\" back\\slash ");
	cr_assert_str_eq(cfg.spool_dir, "/srv/with space");
}

Test(conffile, repeatable_keys_keep_their_order_and_place)
{
	char *p = write_conf("r.conf", "label = a=1\n"
				       "rule = comm ~ ^a => name=a\n"
				       "label = b=2\n"
				       "\n"
				       "rule = exe ~ /b$ => ignore\n"
				       "rule = env:APP ~ (.+) => name=$1 team=$1\n");
	char *argv[] = {"rubyprofd", "--config", p, NULL};
	char *where;

	parse_ok(&cfg, argv, NULL);
	cr_assert_eq(cfg.nlabels, 2);
	cr_assert_str_eq(cfg.labels[0].key, "a");
	cr_assert_str_eq(cfg.labels[1].value, "2");
	cr_assert_eq(cfg.nrules, 3);
	cr_assert_str_eq(cfg.rules[0].text, "comm ~ ^a => name=a");
	cr_assert_str_eq(cfg.rules[2].text, "env:APP ~ (.+) => name=$1 team=$1");
	cr_assert_neq(asprintf(&where, "%s:2", p), -1);
	cr_assert_str_eq(cfg.rules[0].where, where);
	free(where);
	cr_assert_neq(asprintf(&where, "%s:6", p), -1);
	cr_assert_str_eq(cfg.rules[2].where, where);
	free(where);
}

/*
 * A repeated key's bound counts the file and the flags together: a file of max lines (head, the
 * line's number from 0, tail) is taken, one flag more is refused, and a file of max + 1 is refused at its
 * last line. The file of max lines, parsed into cfg, for the caller's own checks.
 */
static char *repeat_bound(const char *key, const char *head, const char *tail, int max,
			  const char *flag, const char *flagval, const char *what)
{
	char text[8192] = "", name[32], *p, *want;
	int i, n = 0;

	for (i = 0; i <= max; i++)
		n += snprintf(text + n, sizeof(text) - n, "%s%d%s\n", head, i, tail);
	cr_assert_lt(n, sizeof(text));
	snprintf(name, sizeof(name), "%d.conf", max + 1);
	p = write_conf(name, text);
	{
		char *argv[] = {"rubyprofd", "--config", p, NULL};

		cr_assert_neq(asprintf(&want,
				       "rubyprofd: %s:%d: %s: more than %d %s (file and flags)\n",
				       p, max + 1, key, max, what),
			      -1);
		parse_bad(argv, NULL, want);
		free(want);
	}
	/* the same text without its last line */
	*strrchr(text, '\n') = '\0';
	*(strrchr(text, '\n') + 1) = '\0';
	snprintf(name, sizeof(name), "%d.conf", max);
	p = write_conf(name, text);
	{
		char *argv[] = {"rubyprofd", "--config", p, NULL};
		char *more[] = {"rubyprofd", "--config", p, (char *)flag, (char *)flagval, NULL};

		cr_assert_neq(asprintf(&want, "rubyprofd: %s: more than %d %s (file and flags)\n",
				       flag, max, what),
			      -1);
		parse_bad(more, NULL, want);
		free(want);
		parse_ok(&cfg, argv, NULL);
	}
	return p;
}

Test(conffile, at_most_16_labels)
{
	char *p = repeat_bound("label", "label = l", "=v", 16, "--label", "x=y", "labels");
	/* replacing one of the file's is no 17th */
	char *same[] = {"rubyprofd", "--config", p, "--label", "l3=flag", NULL};

	cr_assert_eq(cfg.nlabels, 16);
	parse_ok(&cfg, same, NULL);
	cr_assert_eq(cfg.nlabels, 16);
	cr_assert_str_eq(cfg.labels[3].value, "flag");
}

Test(conffile, a_label_twice_in_the_flags)
{
	char *argv[] = {"rubyprofd", "--label", "a=1", "--label", "a=2", NULL};

	parse_bad(argv, "/nonexistent/default.conf",
		  "rubyprofd: --label: label 'a' is given twice\n");
}

Test(conffile, at_most_64_rules)
{
	repeat_bound("rule", "rule = comm ~ ^r", "$ => ignore", 64, "--rule", "comm ~ x => ignore",
		     "rules");
	cr_assert_eq(cfg.nrules, 64);
	cr_assert_str_eq(cfg.rules[63].text, "comm ~ ^r63$ => ignore");
}

Test(conffile, flag_rules_go_first_in_their_order)
{
	char *p = write_conf("r.conf", "rule = f1\nrule = f2\nrule = f3\n");
	char *argv[] = {"rubyprofd", "--config", p, "--rule", "a1", "--rule", "a2", NULL};
	const char *want[] = {"a1", "a2", "f1", "f2", "f3"};
	size_t i;

	parse_ok(&cfg, argv, NULL);
	cr_assert_eq(cfg.nrules, 5);
	for (i = 0; i < 5; i++)
		cr_assert_str_eq(cfg.rules[i].text, want[i], "rule %zu", i);
	cr_assert_str_eq(cfg.rules[1].where, "--rule");
	cr_assert_str_neq(cfg.rules[2].where, "--rule");
}

Test(conffile, reload_reads_the_new_file_and_flags_still_win)
{
	char *p = write_conf("svc.conf", "frequency = 49\n"
					 "interval = 5\n"
					 "label = env=prod\n"
					 "label = team=a\n"
					 "rule = comm ~ a => name=a\n");
	char *argv[] = {"rubyprofd", "--config",  p,	"--interval", "20",
			"--label",   "team=flag", "-v", NULL};
	char *copy[9];

	memcpy(copy, argv, sizeof(argv));
	parse_ok(&cfg, argv, NULL);
	cr_assert_eq(cfg.frequency, 49);
	cr_assert_float_eq(cfg.interval, 20, 1e-9);
	cr_assert_eq(cfg.nlabels, 2);

	write_conf("svc.conf", "frequency = 29\n"
			       "interval = 7\n"
			       "label = team=b\n"
			       "label = dc=west\n"
			       "rule = comm ~ b => name=b\n"
			       "rule = comm ~ c => ignore\n");
	/* the same argv again, as on SIGHUP; getopt's state from the first parse is gone */
	parse_ok(&cfg2, argv, NULL);
	cr_assert_eq(memcmp(copy, argv, sizeof(argv)), 0, "argv is left as it was");
	cr_assert_eq(cfg2.frequency, 29);
	cr_assert_float_eq(cfg2.interval, 20, 1e-9);
	cr_assert_eq(cfg2.log_level, LOG_LVL_INFO);
	cr_assert_eq(cfg2.nlabels, 2);
	expect_label(&cfg2.labels[0], "team", "flag");
	cr_assert_str_eq(cfg2.labels[1].key, "dc");
	cr_assert_eq(cfg2.nrules, 2);
	cr_assert_str_eq(cfg2.rules[0].text, "comm ~ b => name=b");
	/* the first result owns its data: the reload did not change it */
	cr_assert_eq(cfg.frequency, 49);
	cr_assert_str_eq(cfg.labels[0].value, "prod");
	cr_assert_str_eq(cfg.rules[0].text, "comm ~ a => name=a");

	/* a broken file on reload is an error, not a half-applied configuration */
	write_conf("svc.conf", "frequency = 29\nfrequncy = 3\n");
	{
		char *err;

		cr_assert_eq(parse_err(&cfg2, argv, NULL, &err), CONFIG_EXIT_BAD);
		free(err);
	}
}

Test(conffile, oneshot_only_flags_refused_for_the_service)
{
	const char *def = "/nonexistent/default.conf";
	char *d[] = {"rubyprofd", "-d", "5", NULL};
	char *o[] = {"rubyprofd", "--output", "x.pb.gz", NULL};
	char *top[] = {"rubyprofd", "--top", "3", NULL};
	char *cmd[] = {"rubyprofd", "--", "ruby", "x.rb", NULL};
	char *bare[] = {"rubyprofd", "ruby", NULL};

	parse_bad(d, def, "rubyprofd: --duration: only with --oneshot\n");
	parse_bad(o, def, "rubyprofd: --output: only with --oneshot\n");
	parse_bad(top, def, "rubyprofd: --top: only with --oneshot\n");
	parse_bad(cmd, def, "rubyprofd: a COMMAND ('ruby'): only with --oneshot\n");
	parse_bad(bare, def, "rubyprofd: a COMMAND ('ruby'): only with --oneshot\n");
}

Test(conffile, service_only_flags_refused_with_oneshot)
{
	char *flags[][2] = {
		{"--interval", "5"},
		{"--spool-dir", "/x"},
		{"--spool-max-bytes", "1G"},
		{"--spool-max-age", "1h"},
		{"--metrics-address", "127.0.0.1:1"},
		{"--rescan-interval", "5"},
		{"--label", "a=b"},
		{"--rule", "comm ~ x => ignore"},
	};
	char *want;
	size_t i;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		/* --oneshot after the flag: the mode is known before any flag applies */
		char *argv[] = {"rubyprofd", flags[i][0], flags[i][1], "--oneshot", NULL};

		cr_assert_neq(asprintf(&want,
				       "rubyprofd: %s: only for the service, not with --oneshot\n",
				       flags[i][0]),
			      -1);
		parse_bad(argv, NULL, want);
		free(want);
	}
}

Test(conffile, flags_in_both_modes)
{
	char *argv[] = {"rubyprofd", "--oneshot", "--hostname", "h", "--log-level",
			"debug",     "-F",	  "5",		NULL};

	parse_ok(&cfg, argv, NULL);
	cr_assert_str_eq(cfg.hostname, "h");
	cr_assert_eq(cfg.log_level, LOG_LVL_DEBUG);
	cr_assert_eq(cfg.frequency, 5);
}

Test(conffile, flag_errors)
{
	const char *def = "/nonexistent/default.conf";
	char *f[] = {"rubyprofd", "-F", "0", NULL};
	char *m[] = {"rubyprofd", "--metrics-address", "127.0.0.1", NULL};
	char *c[] = {"rubyprofd", "--config", "", NULL};
	char *u[] = {"rubyprofd", "--bogus", NULL};
	char *l[] = {"rubyprofd", "--label", "service_name=x", NULL};

	parse_bad(f, def, "rubyprofd: --frequency: '0' is not a number from 1 to 10000\n");
	parse_bad(m, def,
		  "rubyprofd: --metrics-address: '127.0.0.1' is not ADDRESS:PORT (an IPv4 address "
		  "as in 127.0.0.1:9464, or an IPv6 one as in [::1]:9464)\n");
	parse_bad(c, def, "rubyprofd: --config: the file name is empty\n");
	parse_bad(u, def,
		  "rubyprofd: unknown or incomplete option '--bogus'\n"
		  "Try 'rubyprofd --help'.\n");
	parse_bad(l, def, "rubyprofd: --label: the label name 'service_name' is reserved\n");
}

Test(conffile, help_shows_both_modes, .init = cr_redirect_stdout)
{
	char *h[] = {"rubyprofd", "--help", NULL};
	struct config *c = &cfg;
	char out[8192];
	size_t n;

	cr_assert_eq(config_parse_with_default(c, 2, h, "/nonexistent"), CONFIG_EXIT_OK);
	fflush(stdout);
	n = fread(out, 1, sizeof(out) - 1, cr_get_redirected_stdout());
	out[n] = '\0';
	cr_assert(strstr(out, "Usage: rubyprofd [OPTIONS]"), "%s", out);
	cr_assert(strstr(out, "rubyprofd --oneshot [OPTIONS] [-- COMMAND [ARGS...]]"));
	cr_assert(strstr(out, "--spool-max-bytes"));
	cr_assert(strstr(out, "--config FILE"));
}

/* ---- shipping ---------------------------------------------------------------------------------- */

Test(conffile, upload_defaults)
{
	char *argv[] = {"rubyprofd", NULL};

	parse_ok(&cfg, argv, "/nonexistent/default.conf");
	cr_assert_str_empty(cfg.upload_url);
	cr_assert_eq(cfg.upload_protocol, PROTOCOL_PYROSCOPE);
	cr_assert_str_empty(cfg.upload_token_file);
	cr_assert_str_empty(cfg.upload_basic_auth_file);
	cr_assert_str_empty(cfg.upload_tenant_id);
	cr_assert_str_empty(cfg.upload_ca_file);
	cr_assert_eq(cfg.nupload_headers, 0);
	cr_assert_float_eq(cfg.upload_connect_timeout, 5, 1e-9);
	cr_assert_float_eq(cfg.upload_timeout, 30, 1e-9);
	cr_assert_float_eq(cfg.upload_max_age, 3600, 1e-9);
	cr_assert_float_eq(cfg.upload_backoff_max, 300, 1e-9);
	cr_assert_float_eq(cfg.upload_rejected_max_age, 7 * 24 * 3600, 1e-9);
}

Test(conffile, upload_keys_from_the_file_and_flags)
{
	char *token = write_conf("token", "t0k3n\n");
	char *basic = write_conf("basic", "u:p\n");
	char *ca = write_conf("ca.pem", "-----BEGIN CERTIFICATE-----\n");
	char *text, *p, *argv[] = {"rubyprofd",	    "--config",		NULL, "--upload-header",
				   "x-team: flags", "--upload-timeout", "1m", NULL};

	cr_assert_neq(asprintf(&text,
			       "upload_url = https://pyroscope.example:4040/prefix\n"
			       "upload_protocol = parca\n"
			       "upload_token_file = %s\n"
			       "upload_basic_auth_file = %s\n"
			       "upload_tenant_id = team-a\n"
			       "upload_header = X-Team: file\n"
			       "upload_header = X-Other: 1\n"
			       "upload_ca_file = %s\n"
			       "upload_connect_timeout = 2.5\n"
			       "upload_timeout = 10\n"
			       "upload_max_age = 2h\n"
			       "upload_backoff_max = 1m\n"
			       "upload_rejected_max_age = 1d\n",
			       token, basic, ca),
		      -1);
	p = write_conf("ship.conf", text);
	argv[2] = p;
	parse_ok(&cfg, argv, "/nonexistent/default.conf");
	cr_assert_str_eq(cfg.upload_url, "https://pyroscope.example:4040/prefix");
	cr_assert_eq(cfg.upload_protocol, PROTOCOL_PARCA);
	cr_assert_str_eq(cfg.upload_token_file, token);
	cr_assert_str_eq(cfg.upload_basic_auth_file, basic);
	cr_assert_str_eq(cfg.upload_tenant_id, "team-a");
	cr_assert_str_eq(cfg.upload_ca_file, ca);
	/* the flag replaces the file's header of the same name (case-insensitive) */
	cr_assert_eq(cfg.nupload_headers, 2);
	cr_assert_str_eq(cfg.upload_headers[0], "x-team: flags");
	cr_assert_str_eq(cfg.upload_headers[1], "X-Other: 1");
	cr_assert_float_eq(cfg.upload_connect_timeout, 2.5, 1e-9);
	cr_assert_float_eq(cfg.upload_timeout, 60, 1e-9);
	cr_assert_float_eq(cfg.upload_max_age, 7200, 1e-9);
	cr_assert_float_eq(cfg.upload_backoff_max, 60, 1e-9);
	cr_assert_float_eq(cfg.upload_rejected_max_age, 86400, 1e-9);
	free(text);
}

Test(conffile, upload_errors)
{
	char *missing = tmpdir_path("no-token");
	char *msg;

	file_bad("upload_url = ftp://x\n",
		 "1: upload_url: 'ftp://x' is not an http:// or https:// URL");
	file_bad("upload_url = http:///path\n",
		 "1: upload_url: 'http:///path' is not an http:// or https:// URL with a host");
	file_bad("upload_url = https://bob:pw@host:4040\n",
		 "1: upload_url: credentials in the URL would be logged: put 'user:password' in "
		 "upload_basic_auth_file");
	file_bad("upload_protocol = grpc\n",
		 "1: upload_protocol: 'grpc' is not one of pyroscope, pyroscope-push, parca");
	file_bad("upload_token_file = token\n",
		 "1: upload_token_file: 'token' is not an absolute path");
	cr_assert_neq(asprintf(&msg,
			       "1: upload_token_file: cannot read '%s': No such file or "
			       "directory",
			       missing),
		      -1);
	{
		char *text;

		cr_assert_neq(asprintf(&text, "upload_token_file = %s\n", missing), -1);
		file_bad(text, msg);
		free(text);
	}
	file_bad("upload_header = Bad Name: x\n",
		 "1: upload_header: 'Bad Name: x' is not 'Name: value' (a header name, at most "
		 "1024 bytes, no control characters)");
	file_bad("upload_header = A: 1\nupload_header = a: 2\n",
		 "2: upload_header: header 'a' is given twice");
	file_bad("upload_timeout = 0\n",
		 "1: upload_timeout: '0' is not a duration from 1s to 1h (a number with the "
		 "suffix s, m, h or d)");
	file_bad("upload_max_age = -1\n",
		 "1: upload_max_age: '-1' is not 0 or a duration from 1s to 3650d (a number with "
		 "the suffix s, m, h or d)");
	file_bad("upload_url = http://a\nupload_url = http://b\n",
		 "2: upload_url: given twice (first on line 1)");
	free(msg);
}

Test(conffile, at_most_16_upload_headers)
{
	repeat_bound("upload_header", "upload_header = X-H", ": v", 16, "--upload-header", "X-Y: z",
		     "headers");
	cr_assert_eq(cfg.nupload_headers, 16);
}

Test(conffile, upload_keys_only_for_the_service)
{
	char *argv[] = {"rubyprofd", "--oneshot", "--upload-url", "http://x:4040", NULL};

	parse_bad(argv, "/nonexistent/default.conf",
		  "rubyprofd: --upload-url: only for the service, not with --oneshot\n");
}

/* --stacks and --ustack-bytes (docs/native-stacks.md): ruby by default, mixed by flag or key. */
Test(conffile, native_stacks_mode)
{
	char *dflt[] = {"rubyprofd", "--oneshot", NULL};
	char *flags[] = {"rubyprofd",	   "--oneshot", "--stacks", "mixed",
			 "--ustack-bytes", "32K",	NULL};
	char *p = write_conf("mixed.conf", "stacks = mixed\nustack_bytes = 8192\n");
	char *file[] = {"rubyprofd", "--config", p, NULL};

	parse_ok(&cfg, dflt, "/nonexistent/default.conf");
	cr_assert(!cfg.stacks_mixed);
	cr_assert_eq(cfg.ustack_bytes, RP_USTACK_DEFAULT);
	parse_ok(&cfg, flags, "/nonexistent/default.conf");
	cr_assert(cfg.stacks_mixed);
	cr_assert_eq(cfg.ustack_bytes, 32768);
	parse_ok(&cfg, file, "/nonexistent/default.conf");
	cr_assert(cfg.stacks_mixed);
	cr_assert_eq(cfg.ustack_bytes, 8192);
	file_bad("stacks = native\n", "1: stacks: 'native' is not ruby or mixed");
	file_bad("ustack_bytes = 4K\n",
		 "1: ustack_bytes: '4K' is not a size from 8K to 32K (bytes, or a number with the "
		 "suffix K)");
}

/* --kernel-stacks and --native-processes (docs/native-stacks.md): off by default, from the flag
 * or the key, and only with mixed stacks. */
Test(conffile, kernel_stacks_and_native_processes)
{
	char *dflt[] = {"rubyprofd", "--oneshot", "--stacks", "mixed", NULL};
	char *flags[] = {"rubyprofd",	    "--oneshot",	  "--stacks", "mixed",
			 "--kernel-stacks", "--native-processes", "all",      NULL};
	char *listed[] = {"rubyprofd",		"--oneshot",	      "--stacks", "mixed",
			  "--kernel-stacks=no", "--native-processes", "12,345",	  NULL};
	char *p = write_conf("kern.conf", "stacks = mixed\nkernel_stacks = yes\n"
					  "native_processes = 7\n");
	char *file[] = {"rubyprofd", "--config", p, NULL};
	char *ruby[] = {"rubyprofd", "--oneshot", "--kernel-stacks", NULL};
	char *ruby2[] = {"rubyprofd", "--oneshot", "--native-processes", "all", NULL};

	parse_ok(&cfg, dflt, "/nonexistent/default.conf");
	cr_assert(!cfg.kernel_stacks);
	cr_assert_eq(cfg.native_procs, RP_NATIVE_RUBY);
	parse_ok(&cfg, flags, "/nonexistent/default.conf");
	cr_assert(cfg.kernel_stacks);
	cr_assert_eq(cfg.native_procs, RP_NATIVE_ALL);
	parse_ok(&cfg, listed, "/nonexistent/default.conf");
	cr_assert(!cfg.kernel_stacks);
	cr_assert_eq(cfg.native_procs, RP_NATIVE_LISTED);
	cr_assert_eq(cfg.nnative_pids, 2);
	cr_assert_eq(cfg.native_pids[0], 12);
	cr_assert_eq(cfg.native_pids[1], 345);
	parse_ok(&cfg, file, "/nonexistent/default.conf");
	cr_assert(cfg.kernel_stacks);
	cr_assert_eq(cfg.native_procs, RP_NATIVE_LISTED);
	cr_assert_eq(cfg.nnative_pids, 1);
	cr_assert_eq(cfg.native_pids[0], 7);
	parse_bad(ruby, "/nonexistent/default.conf",
		  "rubyprofd: kernel_stacks (--kernel-stacks): only with stacks = mixed (--stacks "
		  "mixed)\n");
	parse_bad(ruby2, "/nonexistent/default.conf",
		  "rubyprofd: native_processes (--native-processes): only with stacks = mixed "
		  "(--stacks mixed)\n");
	file_bad("stacks = mixed\nkernel_stacks = maybe\n",
		 "2: kernel_stacks: 'maybe' is not yes or no");
	file_bad("stacks = mixed\nnative_processes = 1,,2\n",
		 "2: native_processes: '1,,2' is not ruby, all or a list of process ids (1,2,3)");
	file_bad("stacks = mixed\nnative_processes = 1,x\n",
		 "2: native_processes: 'x' in '1,x' is not a process id");
}

/* --clock: cpu by default, wall from the flag or the file (the flag wins), anything else refused
 * with the key named. */
Test(conffile, clock)
{
	char *p = write_conf("clock.conf", "clock = wall\n");
	char *argv_def[] = {"rubyprofd", "--oneshot", NULL};
	char *argv_file[] = {"rubyprofd", "--oneshot", "--config", p, NULL};
	char *argv_flag[] = {"rubyprofd", "--oneshot", "--config", p, "--clock", "cpu", NULL};
	char *argv_bad[] = {"rubyprofd", "--oneshot", "--clock", "wal", NULL};
	struct config c;

	parse_ok(&c, argv_def, "/nonexistent/default.conf");
	cr_assert_not(c.clock_wall);
	parse_ok(&c, argv_file, "/nonexistent/default.conf");
	cr_assert(c.clock_wall);
	parse_ok(&c, argv_flag, "/nonexistent/default.conf");
	cr_assert_not(c.clock_wall);
	parse_bad(argv_bad, "/nonexistent/default.conf",
		  "rubyprofd: --clock: 'wal' is not cpu or wall\n");
	file_bad("clock = both\n", "1: clock: 'both' is not cpu or wall");
}

/* ---- trusted files: the configuration and the files it names (safepath.h) --------------------- */

#define NOBODY 65534

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("chown needs root");
}

/* tmpdir/name, a directory with this mode (whatever the umask). */
static char *make_dir(const char *name, mode_t mode)
{
	char *p = tmpdir_path(name);

	cr_assert_eq(mkdir(p, 0700), 0, "mkdir %s: %s", p, strerror(errno));
	cr_assert_eq(chmod(p, mode), 0);
	return p;
}

static void conf_refused(const char *conf, const char *why)
{
	char *argv[] = {"rubyprofd", "--config", (char *)conf, NULL};
	char *one[] = {"rubyprofd", "--oneshot", "--config", (char *)conf, NULL};
	char *svc[] = {"rubyprofd", NULL};
	char *want;

	cr_assert_neq(asprintf(&want, "rubyprofd: configuration file refused: %s\n", why), -1);
	parse_bad(argv, "/nonexistent/default.conf", want);
	parse_bad(one, "/nonexistent/default.conf", want);
	/* the service's default file too: only its absence is fine */
	parse_bad(svc, conf, want);
	free(want);
}

#define BY_OTHERS "can be changed by a user other than root"

/* conf_refused with the reason printf-formatted. */
static __attribute__((format(printf, 2, 3))) void conf_refusedf(const char *conf, const char *fmt,
								...)
{
	va_list ap;
	char *why;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&why, fmt, ap);
	va_end(ap);
	cr_assert_neq(n, -1);
	conf_refused(conf, why);
	free(why);
}

/* file_bad for the line "KEY = PATH", refused for this printf-formatted reason. */
static __attribute__((format(printf, 3, 4))) void key_refused(const char *key, const char *path,
							      const char *fmt, ...)
{
	char *text, *why, *msg;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&why, fmt, ap);
	va_end(ap);
	cr_assert_neq(n, -1);
	cr_assert_neq(asprintf(&text, "%s = %s\n", key, path), -1);
	cr_assert_neq(asprintf(&msg, "1: %s: refused: %s", key, why), -1);
	file_bad(text, msg);
	free(msg);
	free(text);
	free(why);
}

Test(conffile, a_configuration_others_can_write_is_refused)
{
	char *p = write_conf("w.conf", "frequency = 3\n");
	char *argv[] = {"rubyprofd", "--config", p, NULL};

	parse_ok(&cfg, argv, NULL);
	cr_assert_eq(chmod(p, 0666), 0);
	conf_refusedf(p, "'%s' (owner root, mode 0666) " BY_OTHERS, p);
	/* group-writable is refused too, whatever the group */
	cr_assert_eq(chmod(p, 0620), 0);
	conf_refusedf(p, "'%s' (owner root, mode 0620) " BY_OTHERS, p);
}

Test(conffile, a_configuration_of_another_user_is_refused)
{
	char *p = write_conf("nobody.conf", "frequency = 3\n");

	need_root();
	cr_assert_eq(chown(p, NOBODY, NOBODY), 0);
	conf_refusedf(p, "'%s' (owner nobody, mode 0644) " BY_OTHERS, p);
}

Test(conffile, a_configuration_in_a_directory_others_can_write_is_refused)
{
	char *d = make_dir("group", 0770);
	char *p = write_conf("group/rubyprofd.conf", "frequency = 3\n");

	conf_refusedf(p, "'%s': the directory '%s' (owner root, mode 0770) " BY_OTHERS, p, d);
}

Test(conffile, a_directory_of_another_user_on_the_way_is_refused)
{
	char *d = make_dir("theirs", 0755);
	char *p = write_conf("theirs/rubyprofd.conf", "frequency = 3\n");

	need_root();
	cr_assert_eq(chown(d, NOBODY, NOBODY), 0);
	conf_refusedf(p, "'%s': the directory '%s' (owner nobody, mode 0755) " BY_OTHERS, p, d);
}

/* The one exception, as /tmp: a sticky directory on the way, if what is in it is root's. */
Test(conffile, a_sticky_directory_on_the_way_is_fine)
{
	char *p = tmpdir_path("sticky/rubyprofd.conf");
	char *argv[] = {"rubyprofd", "--config", p, NULL};

	make_dir("sticky", 01777);
	write_conf("sticky/rubyprofd.conf", "frequency = 3\n");
	parse_ok(&cfg, argv, NULL);
	cr_assert_eq(cfg.frequency, 3);
	need_root();
	cr_assert_eq(chown(p, NOBODY, NOBODY), 0);
	conf_refusedf(p, "'%s' (owner nobody, mode 0644) " BY_OTHERS, p);
}

/*
 * A link is followed by the walk itself: the directories it leads through are checked (sshd's
 * realpath would check only where it ends), and so is the link, which its owner could replace
 * in a sticky directory.
 */
Test(conffile, links_are_checked_where_they_are_and_where_they_lead)
{
	char *open_dir = make_dir("open", 0777);
	char *safe = write_conf("safe.conf", "frequency = 5\n");
	char *unsafe = write_conf("open/rubyprofd.conf", "frequency = 3\n");
	char *l1 = tmpdir_path("to-safe.conf"), *l2 = tmpdir_path("to-open.conf");
	char *l3 = tmpdir_path("sticky/theirs.conf"), *l4 = tmpdir_path("via-dir");
	char *l4conf = tmpdir_path("via-dir/rubyprofd.conf");
	char *argv[] = {"rubyprofd", "--config", l1, NULL};

	make_dir("sticky", 01777);
	cr_assert_eq(symlink("safe.conf", l1), 0);
	cr_assert_eq(symlink(unsafe, l2), 0);
	cr_assert_eq(symlink(safe, l3), 0);
	cr_assert_eq(symlink("open", l4), 0);
	parse_ok(&cfg, argv, NULL);
	cr_assert_eq(cfg.frequency, 5);

	conf_refusedf(l2, "'%s': the directory '%s' (owner root, mode 0777) " BY_OTHERS, l2,
		      open_dir);
	/* a directory reached through a link, under the name it resolves to */
	conf_refusedf(l4conf, "'%s': the directory '%s' (owner root, mode 0777) " BY_OTHERS, l4conf,
		      open_dir);

	need_root();
	cr_assert_eq(lchown(l3, NOBODY, NOBODY), 0);
	conf_refusedf(l3, "'%s': the symbolic link '%s' (owner nobody) " BY_OTHERS, l3, l3);
}

Test(conffile, a_relative_path_is_checked_from_the_current_directory)
{
	char *d = make_dir("rel", 0777);
	char *argv[] = {"rubyprofd", "--config", "rel/r.conf", NULL};
	char *want;

	write_conf("rel/r.conf", "frequency = 3\n");
	cr_assert_eq(chdir(tmpdir), 0);
	cr_assert_neq(asprintf(&want,
			       "rubyprofd: configuration file refused: 'rel/r.conf': the directory "
			       "'%s' (owner root, mode 0777) can be changed by a user other than "
			       "root\n",
			       d),
		      -1);
	parse_bad(argv, NULL, want);
	cr_assert_eq(chmod(d, 0755), 0);
	parse_ok(&cfg, argv, NULL);
	free(want);
}

/* The files the configuration names decide where a secret goes and what it is: the same rule. */
Test(conffile, secret_and_ca_files_others_can_change_are_refused)
{
	char *group = make_dir("group", 0775);
	char *token = write_conf("token", "t0k3n\n");
	char *basic = write_conf("group/basic", "u:p\n");
	char *ca = write_conf("ca.pem", "-----BEGIN CERTIFICATE-----\n");
	char *flag_want;
	char *flag[] = {"rubyprofd", "--upload-token-file", token, NULL};

	cr_assert_eq(chmod(token, 0666), 0);
	key_refused("upload_token_file", token, "'%s' (owner root, mode 0666) " BY_OTHERS, token);
	/* from a flag too */
	cr_assert_neq(asprintf(&flag_want,
			       "rubyprofd: --upload-token-file: refused: '%s' (owner root, mode "
			       "0666) " BY_OTHERS "\n",
			       token),
		      -1);
	parse_bad(flag, "/nonexistent/default.conf", flag_want);
	free(flag_want);

	key_refused("upload_basic_auth_file", basic,
		    "'%s': the directory '%s' (owner root, mode 0775) " BY_OTHERS, basic, group);

	need_root();
	cr_assert_eq(chown(ca, NOBODY, 0), 0);
	key_refused("upload_ca_file", ca, "'%s' (owner nobody, mode 0644) " BY_OTHERS, ca);
}

/* SIGHUP parses into a second struct config; the service keeps the first when that fails. */
Test(conffile, a_reload_of_a_file_made_writable_fails)
{
	char *p = write_conf("svc.conf", "frequency = 49\n");
	char *argv[] = {"rubyprofd", "--config", p, NULL};
	char *err;

	parse_ok(&cfg, argv, NULL);
	cr_assert_eq(cfg.frequency, 49);
	write_conf("svc.conf", "frequency = 29\n");
	cr_assert_eq(chmod(p, 0646), 0);
	cr_assert_eq(parse_err(&cfg2, argv, NULL, &err), CONFIG_EXIT_BAD);
	cr_assert(strstr(err, "configuration file refused"), "%s", err);
	free(err);
	cr_assert_eq(cfg.frequency, 49);
}

/* ---- --check-config: the configuration in effect ------------------------------------------ */

/* config_print_effective into a malloc'd string. */
static char *effective(const struct config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	config_print_effective(c, f);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

/* The text without its comment lines. */
static char *values_only(const char *text)
{
	char *out = calloc(1, strlen(text) + 1), *o = out;
	const char *line = text, *end;

	cr_assert_not_null(out);
	for (; *line; line = end + (*end == '\n')) {
		end = strchrnul(line, '\n');
		if (*line == '#')
			continue;
		memcpy(o, line, (size_t)(end - line));
		o += end - line;
		*o++ = '\n';
	}
	return out;
}

Test(conffile, the_configuration_in_effect_says_where_each_value_comes_from)
{
	char *p = write_conf("eff.conf", "frequency = 49\n"
					 "interval = 5\n"
					 "label = team=checkout\n"
					 "label = tier=web\n"
					 "rule = cmdline ~ sidekiq => service=sidekiq\n"
					 "hostname = \"web-1\"\n"
					 "upload_url = https://collector.example:4040\n"
					 "upload_header = X-Scope-OrgID: s3cr3t\n");
	char *argv[] = {"rubyprofd",	  "--config", p,	 "-F",	     "19",
			"--thread-names", "no",	      "--label", "tier=api", "--upload-header",
			"X-Extra: other", NULL};
	char *text, *line, want[512];

	parse_ok(&cfg, argv, "/nonexistent/default.conf");
	text = effective(&cfg);
	snprintf(want, sizeof(want), "\n# %s:2\ninterval = 5\n", p);
	cr_expect_not_null(strstr(text, want), "no '%s' in:\n%s", want + 1, text);
	cr_expect_not_null(strstr(text, "\n# --frequency\nfrequency = 19\n"), "%s", text);
	cr_expect_not_null(strstr(text, "\n# --thread-names\nthread_names = no\n"), "%s", text);
	cr_expect_not_null(strstr(text, "\n# default\nspool_max_bytes = 256M\n"), "%s", text);
	snprintf(want, sizeof(want), "\n# %s:6\nhostname = web-1\n", p);
	cr_expect_not_null(strstr(text, want), "%s", text);
	/* each label and header with its origin too, as a rule has: the file's line, or the flag
	 * that replaced the file's value */
	snprintf(want, sizeof(want),
		 "\n# %s:3\nlabel = team=checkout\n# --label\nlabel = tier=api\n", p);
	cr_expect_not_null(strstr(text, want), "no '%s' in:\n%s", want + 1, text);
	cr_expect_null(strstr(text, "tier=web"), "%s", text);
	snprintf(want, sizeof(want), "\n# %s:8\nupload_header = X-Scope-OrgID: (value not shown)\n",
		 p);
	cr_expect_not_null(strstr(text, want), "no '%s' in:\n%s", want + 1, text);
	cr_expect_not_null(
		strstr(text, "\n# --upload-header\nupload_header = X-Extra: (value not shown)\n"),
		"%s", text);
	snprintf(want, sizeof(want), "\n# %s:5\nrule = cmdline ~ sidekiq => service=sidekiq\n", p);
	cr_expect_not_null(strstr(text, want), "%s", text);
	/* a header's value may be a secret */
	cr_expect_null(strstr(text, "s3cr3t"), "%s", text);
	cr_expect_null(strstr(text, "other"), "%s", text);
	/* an empty default says what it means */
	line = strstr(text, "\n# default: no endpoint\nmetrics_address = \"\"\n");
	cr_expect_not_null(line, "%s", text);
	free(text);
}

/*
 * What it prints is a configuration file: read back (without the flags), it prints the same
 * values. The headers' values are not printed, so the headers are left out of the round trip.
 */
Test(conffile, the_configuration_in_effect_reads_back_as_itself)
{
	char *p = write_conf("rt.conf", "frequency = 49\n"
					"spool_max_bytes = 10M\n"
					"upload_timeout = 1m\n"
					"label = team=checkout\n"
					"label = \"note=two words \"\n"
					"rule = env RAILS_ENV == production => env=prod\n");
	char *argv[] = {"rubyprofd", "--config", p, "--clock", "wall", "--label", "x=y", NULL};
	char *argv2[] = {"rubyprofd", "--config", NULL, NULL};
	char *first, *second, *v1, *v2;

	parse_ok(&cfg, argv, "/nonexistent/default.conf");
	first = effective(&cfg);
	argv2[2] = write_conf("back.conf", first);
	parse_ok(&cfg2, argv2, "/nonexistent/default.conf");
	second = effective(&cfg2);
	v1 = values_only(first);
	v2 = values_only(second);
	cr_expect_str_eq(v2, v1);
	cr_expect_not_null(strstr(v1, "\nclock = wall\n"), "%s", v1);
	cr_expect_not_null(strstr(v1, "\nlabel = x=y\n"),
			   "the flag's label replaces the file's: %s", v1);
	/* a value that ends with a blank is quoted, or it would not read back */
	cr_expect_not_null(strstr(v1, "\nlabel = \"note=two words \"\n"), "%s", v1);
	cr_expect_eq(cfg2.nlabels, 3);
	cr_expect_str_eq(cfg2.labels[1].value, "two words ");
	free(first);
	free(second);
	free(v1);
	free(v2);
}

Test(conffile, check_config_is_the_services)
{
	char *argv[] = {"rubyprofd", "--check-config", "--oneshot", NULL};
	char *err;

	cr_assert_eq(parse_err(&cfg, argv, "/nonexistent/default.conf", &err), CONFIG_EXIT_BAD);
	cr_expect_str_eq(err, "rubyprofd: --check-config: checks the service's configuration, not "
			      "with --oneshot\n");
	free(err);
}
