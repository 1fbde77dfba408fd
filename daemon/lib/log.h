/* SPDX-License-Identifier: GPL-2.0-only */
/* log.h - the one logger: levels, printf-checked formats, stderr (the journal's priorities there). */
#ifndef RP_LOG_H
#define RP_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/clock.h"

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

/*
 * A budget of lines for what the processes on the host make the daemon say (one per process:
 * "pid N: not profiled: ...", a refused file): LOG_LIMIT_LINES per LOG_LIMIT_WINDOW_NS, so that
 * a churn of hostile processes cannot flood the journal. Past it lines are counted, not
 * written, and the first line of a later window is preceded by "N <what> suppressed in the
 * last minute (at most 20 a minute)".
 * Zeroed by its owner.
 */
#define LOG_LIMIT_LINES	    20
#define LOG_LIMIT_WINDOW_NS (60LL * 1000000000LL)
struct log_limit {
	int64_t window_start; /* CLOCK_MONOTONIC ns */
	unsigned int lines;   /* written in this window */
	uint64_t suppressed;  /* not written since the last notice */
	uint64_t suppressed_total;
};
/* Whether one more line may be written at `now` (CLOCK_MONOTONIC ns); what: the lines' kind
 * for the notice ("per-process lines"). */
bool log_limit_take(struct log_limit *l, int64_t now, const char *what);
/* The lines about processes (found, named, refused, slow to look at), of every module: one
 * budget for the daemon, so that a churn of short processes cannot flood the journal. */
extern struct log_limit log_process_lines;

/* log_msg within the budget of l; past it, at debug level (`-v` shows every line). */
#define log_limited(l, level, ...)                                                                 \
	log_msg(log_limit_take((l), clock_mono_ns(), "per-process lines") ? (level)                \
									  : LOG_LVL_DEBUG,         \
		__VA_ARGS__)

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
