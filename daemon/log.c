// SPDX-License-Identifier: GPL-2.0-only
/* log.c - leveled logging to stderr, prefixed with the program name and level. */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

/* The logger's level is process-wide configuration, set once from the parsed options. */
static enum log_level log_level = LOG_LVL_INFO;

static const char *const level_names[] = {
	[LOG_LVL_ERROR] = "error",
	[LOG_LVL_WARN] = "warning",
	[LOG_LVL_INFO] = "info",
	[LOG_LVL_DEBUG] = "debug",
};

void log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level log_get_level(void)
{
	return log_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	fprintf(stderr, "rubyprofd: %s: ", level_names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
