// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the service naming (daemon/proc/appname.c): rule text (from the configuration) compiled by
 * apprules__new, then matched against a process's cgroup, cmdline, exe, comm and environ,
 * which the process controls. The input's fields are separated by 0x1e (ASCII record separator):
 *   rules (one per line, at most 8) 0x1e cgroup 0x1e cmdline 0x1e exe 0x1e comm 0x1e environ
 * cmdline and environ keep their NULs; missing fields are NULL.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "proc/appname.h"
#include "proc/apprules.h"

#define FUZZ_FIELDS    6
#define FUZZ_MAX_RULES 8

/*
 * A known finding, left out so that runs go on past it (docs/fuzzing.md): glibc's regcomp copies
 * the subtree for each repetition operator, so adjacent ones ("a++++...") cost time and memory
 * exponential in their number. Rule text is the administrator's, not a profiled process's.
 */
static bool fuzz_adjacent_repeats(const char *text)
{
	size_t i;

	for (i = 0; text[i] && text[i + 1]; i++) {
		if (strchr("*+?}", text[i]) && strchr("*+?{", text[i + 1]))
			return true;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *f[FUZZ_FIELDS] = {NULL};
	size_t flen[FUZZ_FIELDS] = {0};
	const char *texts[FUZZ_MAX_RULES];
	struct apprules *rules = NULL;
	struct appname_input in;
	struct app_identity id;
	char msg[256], *line, *save = NULL;
	size_t i, start = 0, nf = 0, nrules = 0, bad;

	for (i = 0; i <= size && nf < FUZZ_FIELDS; i++) {
		if (i == size || data[i] == 0x1e) {
			f[nf] = fuzz_strndup(data + start, i - start);
			if (!f[nf])
				goto cleanup;
			flen[nf++] = i - start;
			start = i + 1;
		}
	}
	if (f[0]) {
		for (line = strtok_r(f[0], "\n", &save); line && nrules < FUZZ_MAX_RULES;
		     line = strtok_r(NULL, "\n", &save)) {
			if (fuzz_adjacent_repeats(line))
				goto cleanup;
			texts[nrules++] = line;
		}
	}
	if (nrules) {
		rules = apprules__new(texts, nrules, &bad, msg, sizeof(msg));
		if (!rules && strnlen(msg, sizeof(msg)) == sizeof(msg))
			abort(); /* the message is not terminated */
	}
	memset(&in, 0, sizeof(in));
	in.cgroup_text = f[1];
	in.cmdline = f[2];
	in.cmdline_len = flen[2];
	in.exe = f[3];
	in.comm = f[4];
	in.environ = f[5];
	in.environ_len = flen[5];
	if (!appname_identify_from(&in, rules, &id)) {
		if (!id.service[0] || strnlen(id.service, sizeof(id.service)) == sizeof(id.service))
			abort(); /* the name is never empty, always terminated */
		if (id.nlabels > APPNAME_MAX_LABELS)
			abort();
	}
cleanup:
	apprules__free(rules);
	for (i = 0; i < FUZZ_FIELDS; i++)
		free(f[i]);
	return 0;
}
