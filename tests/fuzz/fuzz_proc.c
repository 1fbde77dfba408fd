// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the parsers of /proc texts, which a process controls in part (its name in stat, the
 * paths it maps, its cgroup names inside a container): container_id_parse on the whole input as
 * /proc/PID/cgroup, and procs_parse_maps_line and procs_parse_start_ticks on each of its lines and
 * on the whole input.
 */
#include <stdint.h>
#include <string.h>

#include "container.h"
#include "fuzz_common.h"
#include "procs.h"

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
