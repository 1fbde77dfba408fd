/* SPDX-License-Identifier: GPL-2.0-only */
/* config.h - command-line options. */
#ifndef RP_CONFIG_H
#define RP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define CONFIG_MAX_PIDS 256

struct config {
	bool oneshot;
	double duration;	 /* seconds; 0: until the command exits (or 10 s without one) */
	unsigned int frequency;	 /* Hz */
	unsigned int max_frames; /* frames walked per stack */
	pid_t pids[CONFIG_MAX_PIDS];
	size_t npids;
	const char *output;   /* NULL: rubyprofd-HOST-TIME.pb.gz in the current directory */
	char *const *command; /* argv after "--", NULL-terminated; NULL when none */
	unsigned int top;     /* lines of the summary's top list */
	int verbose;	      /* -v: info about each process; -vv: debug */
	bool quiet;
};

enum config_result {
	CONFIG_RUN = 0,
	CONFIG_EXIT_OK,	 /* --help, --version */
	CONFIG_EXIT_BAD, /* usage error, already reported */
};

#define CONFIG_DEFAULT_DURATION	 10.0
#define CONFIG_DEFAULT_FREQUENCY 99
#define CONFIG_MAX_FREQUENCY	 10000

enum config_result config_parse(struct config *cfg, int argc, char **argv);
void config_usage(FILE *out);

#endif
