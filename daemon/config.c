// SPDX-License-Identifier: GPL-2.0-only
/* config.c - command-line parsing with strict number checks. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "rubyprof.h"

void config_usage(FILE *out)
{
	fprintf(out,
		"Usage: rubyprofd --oneshot [OPTIONS] [-- COMMAND [ARGS...]]\n"
		"\n"
		"Profiles the CPU time of Ruby processes with eBPF, without stopping or changing "
		"them,\n"
		"and writes a pprof profile (gzip'd perftools.profiles.Profile).\n"
		"\n"
		"  --oneshot             profile for a while, write one profile, print a summary\n"
		"  -d, --duration S      seconds to profile (default %g; with a COMMAND: until it "
		"exits)\n"
		"  -F, --frequency HZ    samples per second per CPU (default %d, at most %d)\n"
		"  -p, --pid PID         profile only this process (repeatable); default: every "
		"Ruby\n"
		"  -o, --output FILE     where to write the profile\n"
		"                        (default: ./rubyprofd-HOST-YYYYMMDD-HHMMSS.pb.gz)\n"
		"      --max-frames N    Ruby frames kept per stack (default %d, at most %d);\n"
		"                        deeper stacks keep their leaf frames and a truncation "
		"frame\n"
		"      --top N           lines in the summary's top list (default 15)\n"
		"  -v, --verbose         say what was found in each process (-vv: debug)\n"
		"  -q, --quiet           print only errors\n"
		"  -h, --help            this help\n"
		"  -V, --version         version\n"
		"\n"
		"With a COMMAND, rubyprofd starts it and profiles it and the Ruby processes it "
		"starts.\n"
		"Needs root, or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH.\n",
		CONFIG_DEFAULT_DURATION, CONFIG_DEFAULT_FREQUENCY, CONFIG_MAX_FREQUENCY,
		RP_MAX_FRAMES_DEFAULT, RP_MAX_FRAMES_LIMIT);
}

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > 31 * 24 * 3600.0)
		return -EINVAL;
	*out = v;
	return 0;
}

enum { OPT_ONESHOT = 256, OPT_MAX_FRAMES, OPT_TOP };

enum config_result config_parse(struct config *cfg, int argc, char **argv)
{
	static const struct option opts[] = {
		{"oneshot", no_argument, NULL, OPT_ONESHOT},
		{"duration", required_argument, NULL, 'd'},
		{"frequency", required_argument, NULL, 'F'},
		{"pid", required_argument, NULL, 'p'},
		{"output", required_argument, NULL, 'o'},
		{"max-frames", required_argument, NULL, OPT_MAX_FRAMES},
		{"top", required_argument, NULL, OPT_TOP},
		{"verbose", no_argument, NULL, 'v'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	unsigned long v;
	int c;

	memset(cfg, 0, sizeof(*cfg));
	cfg->frequency = CONFIG_DEFAULT_FREQUENCY;
	cfg->max_frames = RP_MAX_FRAMES_DEFAULT;
	cfg->top = 15;
	opterr = 0;
	/* "+": stop at the first non-option, so that a COMMAND's own options stay its own */
	while ((c = getopt_long(argc, argv, "+d:F:p:o:vqhV", opts, NULL)) != -1) {
		switch (c) {
		case OPT_ONESHOT:
			cfg->oneshot = true;
			break;
		case 'd':
			if (parse_seconds(optarg, &cfg->duration)) {
				fprintf(stderr,
					"rubyprofd: --duration: '%s' is not a positive number "
					"of seconds\n",
					optarg);
				return CONFIG_EXIT_BAD;
			}
			break;
		case 'F':
			if (parse_uint(optarg, 1, CONFIG_MAX_FREQUENCY, &v)) {
				fprintf(stderr,
					"rubyprofd: --frequency: '%s' is not a number from 1 "
					"to %d\n",
					optarg, CONFIG_MAX_FREQUENCY);
				return CONFIG_EXIT_BAD;
			}
			cfg->frequency = (unsigned int)v;
			break;
		case 'p':
			if (parse_uint(optarg, 1, INT_MAX, &v)) {
				fprintf(stderr, "rubyprofd: --pid: '%s' is not a process id\n",
					optarg);
				return CONFIG_EXIT_BAD;
			}
			if (cfg->npids == CONFIG_MAX_PIDS) {
				fprintf(stderr, "rubyprofd: at most %d --pid options\n",
					CONFIG_MAX_PIDS);
				return CONFIG_EXIT_BAD;
			}
			cfg->pids[cfg->npids++] = (pid_t)v;
			break;
		case 'o':
			cfg->output = optarg;
			break;
		case OPT_MAX_FRAMES:
			if (parse_uint(optarg, 1, RP_MAX_FRAMES_LIMIT, &v)) {
				fprintf(stderr,
					"rubyprofd: --max-frames: '%s' is not a number from 1 "
					"to %d\n",
					optarg, RP_MAX_FRAMES_LIMIT);
				return CONFIG_EXIT_BAD;
			}
			cfg->max_frames = (unsigned int)v;
			break;
		case OPT_TOP:
			if (parse_uint(optarg, 0, 10000, &v)) {
				fprintf(stderr, "rubyprofd: --top: '%s' is not a number\n", optarg);
				return CONFIG_EXIT_BAD;
			}
			cfg->top = (unsigned int)v;
			break;
		case 'v':
			cfg->verbose++;
			break;
		case 'q':
			cfg->quiet = true;
			break;
		case 'h':
			config_usage(stdout);
			return CONFIG_EXIT_OK;
		case 'V':
			printf("rubyprofd %s\n", RUBYPROF_VERSION);
			return CONFIG_EXIT_OK;
		default:
			if (optopt && optopt < 256)
				fprintf(stderr, "rubyprofd: unknown or incomplete option '-%c'\n",
					optopt);
			else
				fprintf(stderr, "rubyprofd: unknown or incomplete option '%s'\n",
					argv[optind - 1]);
			fprintf(stderr, "Try 'rubyprofd --help'.\n");
			return CONFIG_EXIT_BAD;
		}
	}
	if (optind < argc)
		cfg->command = &argv[optind];
	if (cfg->command && cfg->npids) {
		fprintf(stderr, "rubyprofd: give either --pid or a COMMAND, not both\n");
		return CONFIG_EXIT_BAD;
	}
	if (!cfg->oneshot) {
		fprintf(stderr, "rubyprofd: this version runs only as 'rubyprofd --oneshot' (the "
				"service mode is not part of it yet)\nTry 'rubyprofd --help'.\n");
		return CONFIG_EXIT_BAD;
	}
	if (!cfg->duration && !cfg->command)
		cfg->duration = CONFIG_DEFAULT_DURATION;
	return CONFIG_RUN;
}
