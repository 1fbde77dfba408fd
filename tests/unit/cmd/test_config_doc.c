// SPDX-License-Identifier: GPL-2.0-only
/*
 * The key table (daemon/cmd/config_keys.c) and what is made of it: the documents in the tree hold
 * what the table gives now (else: make gen), every default passes its own key's checks, every
 * flag of the table is one the parser takes, and the values the table lists for a key are those
 * the module behind it knows.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/config.h"
#include "cmd/config_doc.h"
#include "cmd/config_keys.h"
#include "cmd/gendoc.h"
#include "output/protocol.h"
#include "view/view.h"

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	cr_assert_not_null(f, "cannot read %s (the tests run from the tree's top)", path);
	for (;;) {
		if (n + 4097 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			cr_assert_not_null(buf);
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		if (!r)
			break;
		n += r;
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* The first line where a and b differ, for the message. */
static unsigned int first_diff(const char *a, const char *b)
{
	unsigned int line = 1;

	for (; *a && *a == *b; a++, b++)
		if (*a == '\n')
			line++;
	return line;
}

Test(config_doc, documents_hold_what_the_table_gives)
{
	const struct gendoc *d;

	for (d = gendocs; d->path; d++) {
		char *want = gendoc_splice(d, "."), *have = read_all(d->path);

		cr_assert_not_null(want, "%s: its markers are missing", d->path);
		cr_expect_str_eq(have, want,
				 "%s differs from the tables from line %u: run make gen", d->path,
				 first_diff(have, want));
		free(want);
		free(have);
	}
}

/* A default that its own key refused would be reported on stderr at every start. */
Test(config_doc, defaults_pass_their_checks, .init = cr_redirect_stderr)
{
	char *service[] = {"rubyprofd", NULL};
	char *oneshot[] = {"rubyprofd", "--oneshot", NULL};
	static struct config cfg;
	char err[256] = "";
	size_t n;

	cr_assert_eq(config_parse_with_default(&cfg, 1, service, "/nonexistent"), CONFIG_RUN);
	cr_assert_eq(config_parse_with_default(&cfg, 2, oneshot, "/nonexistent"), CONFIG_RUN);
	fflush(stderr);
	n = fread(err, 1, sizeof(err) - 1, cr_get_redirected_stderr());
	err[n] = '\0';
	cr_assert_str_empty(err);
}

/* Each key's flag with its default (or a value of its type) is taken by the parser. */
Test(config_doc, every_flag_of_the_table_parses)
{
	static struct config cfg;
	char flag[48];
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];
		char *argv[4] = {"rubyprofd", NULL, NULL, NULL};
		char arg[128];
		int argc = 1;

		/* the switches that end the parse, and the keys without a default to give */
		if (i == KEY_HELP || i == KEY_VERSION || i == KEY_CONFIG || !k->arg || !k->def ||
		    !k->def[0])
			continue;
		if (k->flags & K_ONESHOT)
			argv[argc++] = "--oneshot";
		config_keys_flag((enum config_key_id)i, flag, sizeof(flag));
		/* --flag=value: the form an optional value needs */
		snprintf(arg, sizeof(arg), "%s=%s", flag, k->def);
		argv[argc++] = arg;
		cr_expect_eq(config_parse_with_default(&cfg, argc, argv, "/nonexistent"),
			     CONFIG_RUN, "%s", arg);
	}
}

Test(config_doc, listed_values_are_the_modules_own)
{
	const struct config_key *p = &config_keys[KEY_UPLOAD_PROTOCOL];
	const struct config_key *f = &config_keys[KEY_FORMAT];
	enum protocol proto;
	size_t i;

	for (i = 0; p->values[i]; i++)
		cr_expect_eq(protocol_parse(p->values[i], &proto), 0, "%s", p->values[i]);
	for (i = 0; f->values[i]; i++)
		cr_expect_not_null(view_format_ext(f->values[i]), "%s", f->values[i]);
}

/* The installed file with every key's line uncommented is a file the service starts with. */
Test(config_doc, the_default_file_uncommented_parses)
{
	char *conf = read_all("systemd/rubyprofd.conf"), *line, *save = NULL;
	char path[] = "/tmp/rp-test-conf-XXXXXX";
	static struct config cfg;
	char *argv[4] = {"rubyprofd", "--config", path, NULL};
	size_t keys = 0;
	FILE *f;
	int fd;

	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	for (line = strtok_r(conf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* "#key = value", not "# a comment" */
		if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z' && strstr(line, " = ")) {
			fprintf(f, "%s\n", line + 1);
			keys++;
		}
	}
	fclose(f);
	cr_assert_eq(config_parse_with_default(&cfg, 3, argv, "/nonexistent"), CONFIG_RUN);
	cr_assert_geq(keys, 30, "only %zu keys in systemd/rubyprofd.conf", keys);
	unlink(path);
	free(conf);
}

/* key_set stores a value where its entry says (CONFIG_FIELD): the member must be of the size
 * its type writes, and a list that sets a bool names one of its values as the true one. */
Test(config_doc, stored_fields_fit_their_types)
{
	size_t i, j, stored = 0;

	for (i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];

		if (!k->field_size) {
			cr_assert_null(k->truth, "%s: truth without a field", k->name);
			continue;
		}
		stored++;
		cr_assert(k->field + k->field_size <= sizeof(struct config), "%s", k->name);
		switch (k->type) {
		case KT_UINT:
			cr_assert_eq(k->field_size, sizeof(unsigned int), "%s", k->name);
			cr_assert(k->max <= UINT_MAX, "%s", k->name);
			break;
		case KT_SIZE:
			cr_assert(k->field_size == sizeof(uint64_t) ||
					  (k->field_size == sizeof(unsigned int) &&
					   k->max <= UINT_MAX),
				  "%s", k->name);
			break;
		case KT_SECONDS:
		case KT_DURATION:
			cr_assert_eq(k->field_size, sizeof(double), "%s", k->name);
			break;
		case KT_ENUM:
			if (!k->truth) {
				cr_assert_eq(k->field_size, sizeof(int), "%s", k->name);
				break;
			}
			cr_assert_eq(k->field_size, sizeof(bool), "%s", k->name);
			for (j = 0; k->values[j] && strcmp(k->values[j], k->truth); j++)
				;
			cr_assert_not_null(k->values[j], "%s: truth '%s' is none of its values",
					   k->name, k->truth);
			break;
		case KT_TEXT:
			cr_assert(k->flags & K_READABLE, "%s: a text with a field but no check",
				  k->name);
			cr_assert_geq(k->field_size, 256, "%s", k->name);
			break;
		default:
			cr_assert_fail("%s: a field for a type key_set does not store", k->name);
		}
	}
	cr_assert_gt(stored, 10);
}
