/* SPDX-License-Identifier: GPL-2.0-only */
/* service.h - the always-on service: interval profiles per service into the spool. */
#ifndef RP_SERVICE_H
#define RP_SERVICE_H

#include "cmd/config.h"

/*
 * Runs until SIGTERM or SIGINT (then writes the interval in progress and returns 0). argc/argv
 * are parsed again on SIGHUP. cfg must be heap-allocated or static and outlive the call.
 */
int service_run(struct config *cfg, int argc, char **argv);

/*
 * --check-config: cfg (parsed) checked as the service's start would check it — its naming rules
 * compiled, its secret and CA files read, its spool directory's modes — without starting
 * anything; then the configuration in effect on stdout (config_print_effective). 0 when valid,
 * 2 when not, the errors on stderr.
 */
int service_check_config(const struct config *cfg);

#endif
