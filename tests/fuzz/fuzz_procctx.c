// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the OpenTelemetry process context reader (daemon/proc/procctx.c): the input is what a
 * process would hold in its OTEL_CTX mapping, a 32-byte header and then the payload. The header
 * is parsed as it is; the payload decoded alone; then the reading protocol runs on a copy in
 * this process's memory (procmem_read of our own pid) with the header's pointer set to the
 * payload (and its size as the input says, to a bound of what is there). Whatever is kept must
 * be what a label may hold: clean UTF-8, within PROCCTX_VALUE_MAX, at most PROCCTX_KEYS_MAX keys.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "lib/text.h"
#include "proc/procctx.h"

static void check_value(const char *v)
{
	if (strlen(v) > PROCCTX_VALUE_MAX || !text_utf8_valid(v) || !text_is_clean(v))
		abort();
}

static void check(const struct procctx_attrs *a)
{
	unsigned int i;

	check_value(a->service_name);
	check_value(a->service_version);
	check_value(a->environment);
	check_value(a->instance_id);
	check_value(a->schema_version);
	if (a->nkeys > PROCCTX_KEYS_MAX)
		abort();
	for (i = 0; i < a->nkeys; i++)
		check_value(procctx_key(a, i));
	if (procctx_key(a, a->nkeys))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t hdr[PROCCTX_HEADER_SIZE];
	struct procctx_attrs a = {0};
	struct procctx_header h;
	struct procctx pc = {0};
	struct procctx_stats st = {0};
	const uint8_t *payload;
	uint64_t ptr;
	uint32_t n;
	char why[200];
	int err;

	if (size < PROCCTX_HEADER_SIZE)
		return 0;
	payload = data + PROCCTX_HEADER_SIZE;
	n = (uint32_t)(size - PROCCTX_HEADER_SIZE);
	err = procctx_decode(payload, n, &a, why, sizeof(why));
	if (err == 0)
		check(&a);
	else if (err != -EINVAL || !why[0] || strnlen(why, sizeof(why)) == sizeof(why))
		abort(); /* a refusal says why */
	procctx_attrs_release(&a);

	memcpy(hdr, data, sizeof(hdr));
	if (procctx_parse_header(hdr, &h) == 0) {
		/* within what is there, or past the bound (refused before it is read) */
		if (h.payload_size <= PROCCTX_PAYLOAD_MAX && h.payload_size > n)
			h.payload_size = n;
		ptr = (uint64_t)(uintptr_t)payload;
		memcpy(hdr + 12, &h.payload_size, 4);
		memcpy(hdr + 24, &ptr, 8);
	}
	switch (procctx_read_at(&pc, getpid(), (uint64_t)(uintptr_t)hdr, &st)) {
	case PROCCTX_CHANGED:
		check(&pc.attrs);
		if (!pc.published_at_ns || st.reads != 1)
			abort();
		break;
	case PROCCTX_REFUSED:
		if (pc.last >= PROCCTX_REFUSED_MAX || st.refused[pc.last] != 1 || pc.attrs.keys)
			abort();
		break;
	default:
		abort(); /* a first read is never "unchanged" */
	}
	procctx_release(&pc);
	return 0;
}
