// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the spool sidecar reader (sidecar__parse, daemon/ingest.c): the input is the JSON text,
 * exactly sized (not NUL-terminated), so that a read past its end is an ASan report. A sidecar
 * that parses is then turned into the request of each collector protocol; the same bytes also go
 * to the answer readers (ingest_check_reply, ingest_error_reason), as body and as header block.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "ingest.h"

/* What the reader promises of a sidecar it accepts (ingest.h, docs/spool.md). */
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
	struct ingest_request r;
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
		for (proto = INGEST_PYROSCOPE; proto <= INGEST_PARCA; proto++) {
			ret = ingest_build((enum ingest_protocol)proto, "http://127.0.0.1:4040/p",
					   sc, profile, sizeof(profile), &r);
			if (ret && ret != -EINVAL && ret != -ENOMEM)
				abort();
			if (!ret && (!r.url || !r.content_type || !r.body))
				abort();
			ingest_request_release(&r);
		}
		sidecar__free(sc);
	}
	ret = ingest_check_reply(INGEST_PARCA, (const char *)data, size, data, size, err,
				 sizeof(err));
	if ((ret && ret != -EPROTO) || strnlen(err, sizeof(err)) == sizeof(err))
		abort();
	ret = ingest_check_reply(INGEST_PARCA, (const char *)data, size, NULL, 0, err, sizeof(err));
	if (ret && ret != -EPROTO)
		abort();
	for (proto = INGEST_PYROSCOPE; proto <= INGEST_PARCA; proto++) {
		ret = ingest_error_reason((enum ingest_protocol)proto, (const char *)data, size,
					  data, size, err, sizeof(err));
		if ((ret && ret != -ENOENT) || strnlen(err, sizeof(err)) == sizeof(err))
			abort();
	}
	return 0;
}
