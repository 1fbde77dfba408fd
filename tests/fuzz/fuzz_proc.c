// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the parsers of /proc texts, which a process controls in part (its name in stat, the
 * paths it maps, its cgroup names inside a container): container_id_parse on the whole input as
 * /proc/PID/cgroup, and procs_parse_maps_line, procs_parse_start_ticks and the /proc/PID/status
 * readers (procs_parse_status_line for PPid and NSpid, procs_parse_ppid, procs_parse_nspid) on
 * each of its lines and on the whole input. A pid they accept is checked against the digits
 * read here with sscanf: the value's last number, within [0, INT_MAX] (NSpid's > 0).
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "proc/container.h"
#include "proc/procs.h"

/* The last of the numbers in value, read with sscanf; -1 when there is none. */
static long long last_number(const char *value)
{
	long long v, last = -1;
	int used;

	while (sscanf(value, "%lld%n", &v, &used) == 1) {
		last = v;
		value += used;
	}
	return last;
}

static void fuzz_status_line(const char *line)
{
	char value[512];
	pid_t pid;

	if (!procs_parse_status_line(line, "NSpid", value, sizeof(value)) &&
	    !procs_parse_nspid(value, &pid) && (pid <= 0 || pid != last_number(value)))
		abort();
	if (!procs_parse_status_line(line, "PPid", value, 8) && !procs_parse_ppid(value, &pid) &&
	    (pid < 0 || pid != last_number(value)))
		abort();
	if (!procs_parse_nspid(line, &pid) && (pid <= 0 || pid != last_number(line)))
		abort();
	if (!procs_parse_ppid(line, &pid) && (pid < 0 || pid != last_number(line)))
		abort();
}

static void fuzz_proc_line(const char *line)
{
	struct proc_map m;
	uint64_t ticks;

	memset(&m, 0, sizeof(m));
	if (!procs_parse_maps_line(line, &m)) {
		if (m.path && strlen(m.path) > strlen(line))
			abort(); /* a path longer than its line */
		free(m.path);
	}
	(void)procs_parse_start_ticks(line, &ticks);
	fuzz_status_line(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[CONTAINER_ID_MAX], small[8];
	char *text, *line, *save = NULL;

	text = fuzz_strndup(data, size);
	if (!text)
		return 0;
	if (!container_id_parse(text, id, sizeof(id)) && strnlen(id, sizeof(id)) == sizeof(id))
		abort(); /* not terminated */
	(void)container_id_parse(text, small, sizeof(small));
	fuzz_proc_line(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		fuzz_proc_line(line);
	free(text);
	return 0;
}
