// SPDX-License-Identifier: GPL-2.0-only
/* log.c - leveled logging to stderr, prefixed with the program name and level. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"

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

/* syslog priorities (sd-daemon(3): SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG) */
static const char *const journal_prefixes[] = {
	[LOG_LVL_ERROR] = "<3>",
	[LOG_LVL_WARN] = "<4>",
	[LOG_LVL_INFO] = "<6>",
	[LOG_LVL_DEBUG] = "<7>",
};

/*
 * Whether stderr is the journal: systemd sets JOURNAL_STREAM to "DEVICE:INODE" of the stream it
 * connects a service's stdout and stderr to. Checked on every line (lines are rare), so a stderr
 * redirected later, or a child's, is judged as it is; a terminal or a file never gets the prefix.
 */
bool log_to_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	if (!env || sscanf(env, "%llu:%llu%c", &dev, &ino, &tail) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/*
 * In the journal each line starts with its priority, which journald strips and stores as
 * PRIORITY= (without it every line of a service is info): `journalctl -p err -u rubyprofd`.
 * journald stores each line of a message as an entry of its own, so every line of a message of
 * several (the verifier log's tail under its error) gets the prefix: else the reason a load
 * failed would be stored as info, and `journalctl -p err` would show the error without it.
 */
static void log_vline(enum log_level level, const char *word, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
static void log_vline(enum log_level level, const char *word, const char *fmt, va_list ap)
{
	const char *prefix = log_to_journal() ? journal_prefixes[level] : "";
	const char *p, *nl;
	char *msg = NULL;
	va_list aq;

	fputs(prefix, stderr);
	fputs("rubyprofd: ", stderr);
	if (word)
		fprintf(stderr, "%s: ", word);
	va_copy(aq, ap);
	if (!*prefix || vasprintf(&msg, fmt, aq) < 0) {
		/* no journal, or no memory: the message as it is */
		msg = NULL;
		vfprintf(stderr, fmt, ap);
	} else {
		for (p = msg; (nl = strchr(p, '\n')) && nl[1]; p = nl + 1) {
			fwrite(p, 1, (size_t)(nl - p + 1), stderr);
			fputs(prefix, stderr);
		}
		fputs(p, stderr);
	}
	va_end(aq);
	free(msg);
	fputc('\n', stderr);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	log_vline(level, level_names[level], fmt, ap);
	va_end(ap);
}

void log_line(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vline(level, NULL, fmt, ap);
	va_end(ap);
}

struct log_limit log_process_lines;

bool log_limit_take(struct log_limit *l, int64_t now, const char *what)
{
	if (!l->window_start || now - l->window_start >= LOG_LIMIT_WINDOW_NS) {
		if (l->suppressed)
			log_msg(LOG_LVL_WARN,
				"%llu %s suppressed in the last minute (at most %d a minute)",
				(unsigned long long)l->suppressed, what, LOG_LIMIT_LINES);
		l->window_start = now ? now : 1;
		l->lines = 0;
		l->suppressed = 0;
	}
	if (l->lines < LOG_LIMIT_LINES) {
		l->lines++;
		return true;
	}
	l->suppressed++;
	l->suppressed_total++;
	return false;
}
