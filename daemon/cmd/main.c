// SPDX-License-Identifier: GPL-2.0-only
/* main.c - rubyprofd: parse the options, then run the service or a --oneshot profile. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd/config.h"
#include "cmd/oneshot.h"
#include "cmd/service.h"
#include "lib/log.h"
#include "native/checksum.h"
#include "view/report.h"

static void on_signal(int sig)
{
	oneshot_stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	static struct config cfg; /* about 300 KiB: not on the stack */
	int ret;

	/* `rubyprofd report FILE...`: reads profiles, needs no privileges and no configuration */
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		return report_main(argc - 1, argv + 1);
	switch (config_parse(&cfg, argc, argv)) {
	case CONFIG_EXIT_OK:
		return 0;
	case CONFIG_EXIT_BAD:
		return 2;
	case CONFIG_RUN:
		break;
	}
	if (cfg.check_config)
		return service_check_config(&cfg);
	signal(SIGPIPE, SIG_IGN);
	if (!cfg.oneshot) {
		ret = service_run(&cfg, argc, argv);
		checksum_stop();
		return ret;
	}
	/* --oneshot is quiet by default (the key table's default): its output is the summary */
	log_set_level((enum log_level)cfg.log_level);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	ret = oneshot_run(&cfg);
	checksum_stop();
	return ret;
}
