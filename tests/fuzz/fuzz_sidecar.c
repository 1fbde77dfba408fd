// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the spool sidecar reader (sidecar__parse, daemon/output/protocol.c): the input is the JSON text,
 * exactly sized (not NUL-terminated), so that a read past its end is an ASan report. A sidecar
 * that parses is then turned into the request of each collector protocol; the same bytes also go
 * to the answer readers (protocol_check_reply, protocol_error_reason), as body and as header block.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "output/protocol.h"

/* What the reader promises of a sidecar it accepts (protocol.h, docs/spool.md). */
static void fuzz_check(const struct sidecar *sc)
{
	size_t i;

	if (sc->version != 1 || !sc->service || !sc->service[0] || !sc->spy_name || !sc->profile)
		abort();
	if (sc->from_ns < 0 || sc->until_ns < sc->from_ns || sc->period_ns < 0)
		abort();
	if (!sc->profile[0] || sc->profile[0] == '.' || strchr(sc->profile, '/'))
		abort();
	for (i = 0; i < sc->nlabels; i++) {
		if (!sc->labels[i].key || !sc->labels[i].value)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t profile[] = {0x1f, 0x8b, 0x08, 0x00};
	struct protocol_request r;
	struct sidecar *sc;
	char err[256];
	int proto, ret;

	sc = sidecar__parse((const char *)data, size, err, sizeof(err));
	if (!sc) {
		if (errno != EINVAL && errno != ENOMEM)
			abort();
		if (errno == EINVAL && (!err[0] || strnlen(err, sizeof(err)) == sizeof(err)))
			abort(); /* a refusal always says why, terminated */
	} else {
		fuzz_check(sc);
		for (proto = PROTOCOL_PYROSCOPE; proto <= PROTOCOL_PARCA; proto++) {
			ret = protocol_build((enum protocol)proto, "http://127.0.0.1:4040/p", sc,
					     profile, sizeof(profile), &r);
			if (ret && ret != -EINVAL && ret != -ENOMEM)
				abort();
			if (!ret && (!r.url || !r.content_type || !r.body))
				abort();
			protocol_request_release(&r);
		}
		sidecar__free(sc);
	}
	ret = protocol_check_reply(PROTOCOL_PARCA, (const char *)data, size, data, size, err,
				   sizeof(err));
	if ((ret && ret != -EPROTO) || strnlen(err, sizeof(err)) == sizeof(err))
		abort();
	ret = protocol_check_reply(PROTOCOL_PARCA, (const char *)data, size, NULL, 0, err,
				   sizeof(err));
	if (ret && ret != -EPROTO)
		abort();
	for (proto = PROTOCOL_PYROSCOPE; proto <= PROTOCOL_PARCA; proto++) {
		ret = protocol_error_reason((enum protocol)proto, (const char *)data, size, data,
					    size, err, sizeof(err));
		if ((ret && ret != -ENOENT) || strnlen(err, sizeof(err)) == sizeof(err))
			abort();
	}
	return 0;
}
