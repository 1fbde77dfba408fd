// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the configuration file parser (daemon/cmd/config.c): the input is the service's file, read
 * by config_parse_with_default as the default file (no arguments). Its error messages go to
 * stderr: tests/fuzz/run.sh passes -close_fd_mask=3, which closes the target's stdout and stderr
 * while libFuzzer and the sanitizers keep reporting on a copy.
 */
#include <fcntl.h>
#include <stdint.h>

#include "cmd/config.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct config cfg;
	char path[64], prog[] = "rubyprofd";
	char *argv[] = {prog, NULL};
	int fd;

	fd = fuzz_memfile(data, size, path, sizeof(path));
	if (fd < 0)
		return 0;
	memset(&cfg, 0, sizeof(cfg));
	(void)config_parse_with_default(&cfg, 1, argv, path);
	if (cfg.nlabels > CONFIG_MAX_LABELS || cfg.nrules > CONFIG_MAX_RULES)
		abort();
	close(fd);
	return 0;
}
