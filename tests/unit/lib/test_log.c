// SPDX-License-Identifier: GPL-2.0-only
/*
 * The logger's lines as they land: in the journal (stderr is the stream JOURNAL_STREAM names)
 * each starts with its syslog priority, elsewhere never.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"

static char path[] = "/tmp/rp-test-log-XXXXXX";

/* stderr into a new file; JOURNAL_STREAM names it when journal, else another file. */
static void stderr_to_file(bool journal)
{
	char env[64];
	struct stat st;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
	setvbuf(stderr, NULL, _IONBF, 0);
	cr_assert_eq(journal ? fstat(STDERR_FILENO, &st) : stat("/", &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
}

static char *written(void)
{
	static char buf[512];
	FILE *f = fopen(path, "r");
	size_t n;

	cr_assert_not_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	unlink(path);
	return buf;
}

Test(log, journal_lines_carry_their_priority)
{
	stderr_to_file(true);
	cr_assert(log_to_journal());
	log_set_level(LOG_LVL_DEBUG);
	log_error("cannot attach: %s", "no BPF");
	log_warn("w");
	log_info("i");
	log_debug("d");
	log_line(LOG_LVL_ERROR, "%s:%u: frequency: not a number", "/etc/rubyprofd/rubyprofd.conf",
		 3);
	cr_assert_str_eq(
		written(),
		"<3>rubyprofd: error: cannot attach: no BPF\n"
		"<4>rubyprofd: warning: w\n"
		"<6>rubyprofd: info: i\n"
		"<7>rubyprofd: debug: d\n"
		"<3>rubyprofd: /etc/rubyprofd/rubyprofd.conf:3: frequency: not a number\n");
}

Test(log, other_streams_get_plain_lines)
{
	stderr_to_file(false);
	cr_assert_not(log_to_journal());
	log_error("e");
	log_line(LOG_LVL_INFO, "x");
	cr_assert_str_eq(written(), "rubyprofd: error: e\nrubyprofd: x\n");
}

/* journald stores each line apart: every line of a message of several carries its priority (the
 * verifier log's tail under the error that a load failed), and only in the journal. */
Test(log, every_line_of_a_message_carries_its_priority)
{
	stderr_to_file(true);
	log_error("BPF verifier log (tail):\n%s", "12: (85) call 1\nBPF program is too large\n");
	log_warn("a\n\nb");
	cr_assert_str_eq(written(), "<3>rubyprofd: error: BPF verifier log (tail):\n"
				    "<3>12: (85) call 1\n"
				    "<3>BPF program is too large\n\n"
				    "<4>rubyprofd: warning: a\n"
				    "<4>\n"
				    "<4>b\n");
	strcpy(path, "/tmp/rp-test-log-XXXXXX");
	stderr_to_file(false);
	log_error("two\nlines");
	cr_assert_str_eq(written(), "rubyprofd: error: two\nlines\n");
}

Test(log, malformed_journal_stream_is_not_the_journal)
{
	stderr_to_file(true);
	setenv("JOURNAL_STREAM", "12:34x", 1);
	cr_assert_not(log_to_journal());
	unsetenv("JOURNAL_STREAM");
	cr_assert_not(log_to_journal());
	unlink(path);
}

/* Lines about processes within their budget: 20 a minute, then a count of the rest before the
 * first line of a later minute. */
Test(log, limited_lines_keep_their_budget_and_say_what_was_suppressed)
{
	struct log_limit l = {0};
	int64_t t0 = 1000000000LL;
	int i, taken = 0;

	stderr_to_file(false);
	for (i = 0; i < 25; i++)
		taken += log_limit_take(&l, t0 + i, "per-process lines");
	cr_assert_eq(taken, LOG_LIMIT_LINES);
	cr_assert_eq(l.suppressed, 5);
	/* still the same minute */
	cr_assert(!log_limit_take(&l, t0 + LOG_LIMIT_WINDOW_NS - 1, "per-process lines"));
	cr_assert(log_limit_take(&l, t0 + LOG_LIMIT_WINDOW_NS, "per-process lines"));
	cr_assert_eq(l.suppressed, 0);
	cr_assert_eq(l.suppressed_total, 6);
	cr_assert_str_eq(written(),
			 "rubyprofd: warning: 6 per-process lines suppressed in the last "
			 "minute (at most 20 a minute)\n");
}
