/* SPDX-License-Identifier: GPL-2.0-only */
/* oneshot.h - `rubyprofd --oneshot`: profile for a while, write one pprof, print a summary. */
#ifndef RP_ONESHOT_H
#define RP_ONESHOT_H

#include <signal.h>

#include "cmd/config.h"

/* Set by SIGINT/SIGTERM: the run stops early and still writes its profile. */
extern volatile sig_atomic_t oneshot_stop;

/* Returns the process exit code. */
int oneshot_run(const struct config *cfg);

#endif
