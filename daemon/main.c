// SPDX-License-Identifier: GPL-2.0-only
/* main.c - rubyprofd: parse the options, install signal handlers, run. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "oneshot.h"

static void on_signal(int sig)
{
	oneshot_stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct config cfg;

	switch (config_parse(&cfg, argc, argv)) {
	case CONFIG_EXIT_OK:
		return 0;
	case CONFIG_EXIT_BAD:
		return 2;
	case CONFIG_RUN:
		break;
	}
	if (cfg.quiet)
		log_set_level(LOG_LVL_ERROR);
	else if (cfg.verbose > 1)
		log_set_level(LOG_LVL_DEBUG);
	else if (cfg.verbose)
		log_set_level(LOG_LVL_INFO);
	else
		log_set_level(LOG_LVL_WARN);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	return oneshot_run(&cfg);
}
