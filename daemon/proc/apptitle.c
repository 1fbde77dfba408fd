// SPDX-License-Identifier: GPL-2.0-only
/*
 * apptitle.c - the service a well-known process title names (apptitle.h): Puma, Sidekiq, Unicorn
 * and Resque set their title through $0, in formats read here from their own sources.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/apptitle.h"
#include "proc/span.h"

/* A version token at *p ("6.4.0", "7.0.0.pre1"): digit first, then [0-9A-Za-z.]. */
static const char *skip_version(const char *p)
{
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isalnum((unsigned char)*p) || *p == '.')
		p++;
	return p;
}

/*
 * Puma (lib/puma/launcher.rb, cluster/worker.rb):
 *   master  "puma VERSION (BINDS)" + " [TAG]" when a tag is set
 *   worker  "puma: cluster worker N: MASTERPID" + " [TAG]"
 * The tag defaults to the basename of the working directory.
 */
static bool title_puma(const char *t, size_t len, char *name, size_t size)
{
	const char *p, *tag, *end = t + len;

	if (strncmp(t, "puma ", 5) == 0) {
		p = skip_version(t + 5);
		if (!p || strncmp(p, " (", 2) != 0)
			return false;
		tag = strstr(p, ") [");
		if (tag && len && t[len - 1] == ']' && tag + 3 < end - 1)
			return span_copy((struct span){tag + 3, (size_t)(end - 1 - tag - 3)}, name,
					 size);
		return span_copy((struct span){"puma", 4}, name, size);
	}
	if (strncmp(t, "puma: cluster worker ", 21) == 0) {
		p = t + 21;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		if (strncmp(p, ": ", 2) != 0 || !isdigit((unsigned char)p[2]))
			return false;
		for (p += 2; isdigit((unsigned char)*p); p++)
			;
		if (strncmp(p, " [", 2) == 0 && t[len - 1] == ']' && p + 2 < end - 1)
			return span_copy((struct span){p + 2, (size_t)(end - 1 - p - 2)}, name,
					 size);
		return span_copy((struct span){"puma", 4}, name, size);
	}
	return false;
}

/* "[N of M busy]" at p, followed by the end or " stopping". */
static bool sidekiq_busy(const char *p)
{
	unsigned int a, b;
	int n = 0;

	if (sscanf(p, "[%u of %u busy]%n", &a, &b, &n) < 2 || !n)
		return false;
	return p[n] == '\0' || strcmp(p + n, " stopping") == 0;
}

/*
 * Sidekiq (lib/sidekiq/launcher.rb PROCTITLES joined by spaces):
 *   "sidekiq VERSION TAG [N of M busy]" + " stopping"; an empty tag leaves two spaces.
 * The tag defaults to the app directory (the Capistrano app dir for releases/<timestamp>).
 */
static bool title_sidekiq(const char *t, char *name, size_t size)
{
	const char *p, *busy = NULL, *b;

	if (strncmp(t, "sidekiq ", 8) != 0)
		return false;
	p = skip_version(t + 8);
	if (!p || *p != ' ')
		return false;
	p++;
	for (b = strchr(p, '['); b; b = strchr(b + 1, '[')) {
		if (sidekiq_busy(b))
			busy = b;
	}
	if (!busy)
		return false;
	if (!span_copy(span_trim((struct span){p, (size_t)(busy - p)}), name, size))
		span_copy((struct span){"sidekiq", 7}, name, size);
	return true;
}

/*
 * Unicorn (lib/unicorn/http_server.rb proc_name): basename of its own $0, the role ("master",
 * "master (old)", "worker[N]"), then its original arguments. It sets no app name.
 */
static bool title_unicorn(const char *t, char *name, size_t size)
{
	const char *p;

	if (strncmp(t, "unicorn ", 8) == 0)
		p = t + 8;
	else if (strncmp(t, "unicorn_rails ", 14) == 0)
		p = t + 14;
	else
		return false;
	if (strncmp(p, "master", 6) == 0 && (p[6] == '\0' || p[6] == ' ')) {
		/* "master" or "master (old)" */
	} else if (strncmp(p, "worker[", 7) == 0 && isdigit((unsigned char)p[7])) {
		for (p += 7; isdigit((unsigned char)*p); p++)
			;
		if (*p != ']' || (p[1] != '\0' && p[1] != ' '))
			return false;
	} else {
		return false;
	}
	return span_copy((struct span){"unicorn", 7}, name, size);
}

/*
 * Resque (lib/resque/worker.rb procline): "$RESQUE_PROCLINE_PREFIX" "resque-VERSION: STATUS", and
 * "resque: Starting" before the first procline. The prefix is the static identifier users set to
 * tell their workers apart, so it names the app when present.
 */
static bool title_resque(const char *t, char *name, size_t size)
{
	const char *p, *v;
	struct span prefix;

	if (strncmp(t, "resque: ", 8) == 0)
		return span_copy((struct span){"resque", 6}, name, size);
	for (p = strstr(t, "resque-"); p; p = strstr(p + 1, "resque-")) {
		v = skip_version(p + 7);
		if (v && strncmp(v, ": ", 2) == 0)
			break;
	}
	if (!p)
		return false;
	prefix = span_trim((struct span){t, (size_t)(p - t)});
	while (prefix.len && strchr(":-_/", prefix.p[prefix.len - 1]))
		prefix.len--;
	if (!span_copy(span_trim(prefix), name, size))
		span_copy((struct span){"resque", 6}, name, size);
	return true;
}

/* The title is copied so the parsers see it alone. */
bool apptitle_name(const char *t, size_t len, char *name, size_t size)
{
	char *first;
	bool found;

	if (!len)
		return false;
	first = strndup(t, len);
	if (!first)
		return false;
	found = title_puma(first, len, name, size) || title_sidekiq(first, name, size) ||
		title_unicorn(first, name, size) || title_resque(first, name, size);
	free(first);
	return found;
}

char *apptitle_of_cmdline(const char *cmd, size_t len)
{
	char *s;
	size_t i;

	while (len && cmd[len - 1] == '\0')
		len--;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	for (i = 0; i < len; i++)
		s[i] = cmd[i] ? cmd[i] : ' ';
	s[len] = '\0';
	return s;
}
