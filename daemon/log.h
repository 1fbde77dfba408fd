/* SPDX-License-Identifier: GPL-2.0-only */
/* log.h - the one logger: levels, printf-checked formats, stderr (the journal's priorities there). */
#ifndef RP_LOG_H
#define RP_LOG_H

#include <stdbool.h>

enum log_level {
	LOG_LVL_ERROR = 0,
	LOG_LVL_WARN,
	LOG_LVL_INFO,
	LOG_LVL_DEBUG,
};

/* Messages above this level are dropped. Default: LOG_LVL_INFO. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* "rubyprofd: LEVEL: message" on stderr, when level is not above the logger's. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * "rubyprofd: message", whatever the logger's level: what names its own place, such as a
 * configuration file's "FILE:LINE: ..." errors, which read as a compiler's do.
 */
void log_line(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* stderr is the journal (JOURNAL_STREAM names it): lines carry a syslog priority, "<3>" for errors. */
bool log_to_journal(void);

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
