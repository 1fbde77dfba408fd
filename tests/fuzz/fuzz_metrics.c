// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the metrics endpoint's request reader, metrics_parse_request (daemon/cmd/metrics.c): any
 * local user may connect to the port and send anything. The input is what a client sent, read
 * as the endpoint reads it (at most METRICS_MAX_REQUEST bytes), whole and in the pieces its
 * first byte picks, as recv() may hand them over. Each answer is checked against RFC 9112's
 * request line worked out here another way (the line's spaces counted, its three parts
 * compared): the route, a head not yet ended, a head too large.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/metrics.h"
#include "fuzz_common.h"

static bool is_version(const char *v, size_t len)
{
	return len == 8 && (!memcmp(v, "HTTP/1.1", 8) || !memcmp(v, "HTTP/1.0", 8));
}

/* The route of req[0, len), from the request line's definition. */
static enum metrics_route expect(const char *req, size_t len)
{
	const char *line = req, *nl, *sp1, *sp2, *end, *q;
	size_t llen, spaces = 0, i, plen;

	if (!memmem(req, len, "\n\n", 2) && !memmem(req, len, "\n\r\n", 3))
		return len >= METRICS_MAX_REQUEST ? METRICS_ROUTE_TOO_LARGE : METRICS_ROUTE_PARTIAL;
	nl = memchr(req, '\n', len);
	llen = nl - line;
	if (llen && line[llen - 1] == '\r')
		llen--;
	for (i = 0; i < llen; i++)
		spaces += line[i] == ' ';
	if (spaces != 2)
		return METRICS_ROUTE_BAD;
	end = line + llen;
	sp1 = memchr(line, ' ', llen);
	sp2 = memrchr(line, ' ', llen);
	if (sp1 == line || sp2 == sp1 + 1 || sp1[1] != '/' || !is_version(sp2 + 1, end - sp2 - 1))
		return METRICS_ROUTE_BAD;
	if (sp1 - line != 3 || memcmp(line, "GET", 3))
		return METRICS_ROUTE_METHOD;
	q = memchr(sp1 + 1, '?', sp2 - sp1 - 1);
	plen = (q ? q : sp2) - (sp1 + 1);
	if (plen == 8 && !memcmp(sp1 + 1, "/metrics", 8))
		return METRICS_ROUTE_METRICS;
	return plen == 1 ? METRICS_ROUTE_INDEX : METRICS_ROUTE_NOT_FOUND;
}

static void check(const char *req, size_t len)
{
	enum metrics_route got = metrics_parse_request(req, len), want = expect(req, len);

	if (got != want) {
		fprintf(stderr, "fuzz_metrics: %zu bytes routed %d, the request line says %d\n",
			len, got, want);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum metrics_route whole, r = METRICS_ROUTE_PARTIAL;
	size_t len, step, at;
	char *req;

	if (size < 1)
		return 0;
	step = data[0] % 64 + 1;
	len = size - 1 < METRICS_MAX_REQUEST ? size - 1 : METRICS_MAX_REQUEST;
	/* at most 32 pieces: each check reads the whole prefix */
	if (len / step > 32)
		step = len / 32 + 1;
	/* an exact copy: a read past the client's bytes is ASan's to see */
	req = malloc(len ? len : 1);
	if (!req)
		return 0;
	memcpy(req, data + 1, len);
	check(req, len);
	whole = metrics_parse_request(req, len);
	/* piece by piece, as the endpoint reads: the first answer that is not "read on" is final */
	for (at = 0; at < len && r == METRICS_ROUTE_PARTIAL;) {
		at = at + step < len ? at + step : len;
		check(req, at);
		r = metrics_parse_request(req, at);
	}
	if (len && r != whole)
		abort();
	free(req);
	return 0;
}
