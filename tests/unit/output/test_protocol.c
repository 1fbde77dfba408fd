// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_protocol.c - sidecars written by the real spool (hostile labels included) read back, the
 * strict JSON reader refusing malformed documents, and the collectors' requests decoded by
 * independent readers: protoc --decode_raw (Debian's protobuf-compiler) for the protobuf bodies,
 * a percent-decoder here for Pyroscope's query.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/protocol.h"
#include "output/spool.h"
#include "../tmpdir.h"

static void setup(void)
{
	tmpdir_make("test_protocol");
}

static void teardown(void)
{
	tmpdir_remove();
}

TestSuite(ingest, .init = setup, .fini = teardown);

#define T0 1700000000123456789LL /* 2023-11-14 22:13:20.123456789 UTC */

/* Writes one pair with the real spool and reads its sidecar back. */
static struct sidecar *spool_roundtrip(const struct spool_meta *m, char *sidecar_path, size_t n)
{
	static const unsigned char profile[] = {0x1f, 0x8b, 8, 0, 1, 2, 3};
	char spooldir[300], path[512], err[256];
	struct sidecar *sc;
	struct spool *s;
	size_t len;

	snprintf(spooldir, sizeof(spooldir), "%s/spool", tmpdir);
	s = spool__new(spooldir, 0, 0, NULL, 0);
	cr_assert_not_null(s, "spool__new: %s", strerror(errno));
	cr_assert_eq(spool_write(s, m, profile, sizeof(profile), path, sizeof(path)), 0);
	spool__free(s);
	len = strlen(path);
	cr_assert(len > 6 && !strcmp(path + len - 6, ".pb.gz"), "profile path %s", path);
	snprintf(sidecar_path, n, "%.*s.json", (int)(len - 6), path);
	sc = sidecar__read(sidecar_path, err, sizeof(err));
	cr_assert_not_null(sc, "sidecar__read: %s (errno %d)", err, errno);
	cr_assert_str_eq(sc->profile, strrchr(path, '/') + 1);
	cr_assert_eq(sc->bytes, sizeof(profile));
	return sc;
}

Test(ingest, spool_sidecar_roundtrip_hostile_labels)
{
	/* Quotes, backslashes, every escape, control bytes, DEL, UTF-8 of every length, and bytes
	 * that are not UTF-8 (a stray continuation, an overlong, a surrogate, a cut sequence). */
	static const struct spool_label labels[] = {
		{"service_name", "sh\"op\\"},
		{"host", "web-1"},
		{"ctl", "a\x01\x02\x1f\x7f\b\f\n\r\t/z"},
		{"utf8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"},
		{"bad", "a\x80"
			"b\xc0\xaf"
			"c\xed\xa0\x80"
			"d\xe2\x82"},
		{"quote\"key\\", "v"},
		{"empty", ""},
	};
	static const char *const want[] = {
		"sh\"op\\",
		"web-1",
		"a\x01\x02\x1f\x7f\b\f\n\r\t/z",
		"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
		/* one U+FFFD per byte that is not part of well-formed UTF-8 */
		"a\xef\xbf\xbd"
		"b\xef\xbf\xbd\xef\xbf\xbd"
		"c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		"d\xef\xbf\xbd\xef\xbf\xbd",
		"v",
		"",
	};
	struct spool_meta m = {
		.service = "sh\"op \xff/x",
		.from_ns = T0,
		.until_ns = T0 + 10000000000LL,
		.sample_rate = 19,
		.period_ns = 52631578,
		.labels = labels,
		.nlabels = sizeof(labels) / sizeof(labels[0]),
	};
	char path[600];
	struct sidecar *sc = spool_roundtrip(&m, path, sizeof(path));
	size_t i;

	cr_assert_eq(sc->version, 1);
	cr_assert_str_eq(sc->service, "sh\"op \xef\xbf\xbd/x");
	cr_assert_eq(sc->from_ns, T0);
	cr_assert_eq(sc->until_ns, T0 + 10000000000LL);
	cr_assert_eq(sc->sample_rate, 19);
	cr_assert_eq(sc->period_ns, 52631578);
	cr_assert_str_eq(sc->spy_name, "rubyprofd");
	cr_assert_eq(sc->nlabels, m.nlabels);
	for (i = 0; i < sc->nlabels; i++) {
		cr_assert_str_eq(sc->labels[i].key, labels[i].key, "label %zu", i);
		cr_assert_str_eq(sc->labels[i].value, want[i], "label %zu (%s)", i, labels[i].key);
	}
	sidecar__free(sc);
}

Test(ingest, spool_sidecar_roundtrip_limits)
{
	static char big[4097];
	struct spool_label labels[64];
	char keys[64][8], path[600];
	struct spool_meta m = {
		.service = "s",
		.from_ns = 0,
		.until_ns = INT64_MAX,
		.sample_rate = UINT_MAX,
		.period_ns = INT64_MAX,
		.spy_name = "spy",
		.labels = labels,
		.nlabels = 64,
	};
	struct sidecar *sc;
	size_t i;

	memset(big, '\\', 4096); /* escaped: the sidecar holds 8192 bytes for it */
	for (i = 0; i < 64; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
		labels[i] = (struct spool_label){keys[i], big};
	}
	sc = spool_roundtrip(&m, path, sizeof(path));
	cr_assert_eq(sc->from_ns, 0);
	cr_assert_eq(sc->until_ns, INT64_MAX);
	cr_assert_eq(sc->sample_rate, UINT_MAX);
	cr_assert_eq(sc->period_ns, INT64_MAX);
	cr_assert_str_eq(sc->spy_name, "spy");
	cr_assert_eq(sc->nlabels, 64);
	cr_assert_str_eq(sc->labels[63].key, "k63");
	cr_assert_str_eq(sc->labels[63].value, big);
	cr_assert_null(sc->profile_name); /* not written: a CPU profile */
	sidecar__free(sc);
}

#define GOOD_HEAD_FOR_NAME                                                                         \
	"{\"version\":1,\"service\":\"shop\",\"from_ns\":1,\"until_ns\":2,\"sample_rate\":19,"     \
	"\"period_ns\":5,\"spy_name\":\"rubyprofd\",\"labels\":{},\"profile\":\"x.pb.gz\","        \
	"\"bytes\":7,"
#define GOOD_FIELDS "\"version\":1,\"service\":\"shop\",\"from_ns\":1,\"until_ns\":2,"
#define GOOD_HEAD   "{" GOOD_FIELDS
#define GOOD_TAIL                                                                                  \
	"\"sample_rate\":19,\"period_ns\":5,\"spy_name\":\"rubyprofd\",\"labels\":{\"a\":\"b\"},"  \
	"\"profile\":\"x.pb.gz\",\"bytes\":7}"

static struct sidecar *parse(const char *json, char *err, size_t errlen)
{
	return sidecar__parse(json, strlen(json), err, errlen);
}

Test(ingest, parse_skips_unknown_fields)
{
	char err[256];
	struct sidecar *sc = parse(" \n{\"future\":{\"a\":[1,-2.5e+3,true,false,null,{\"b\":"
				   "\"\\u00e9\"},[]],\"c\":{}},"
				   "\"z\":[]," GOOD_FIELDS "\"n\":0.5," GOOD_TAIL "\r\n\t",
				   err, sizeof(err));

	cr_assert_not_null(sc, "%s", err);
	cr_assert_str_eq(sc->service, "shop");
	cr_assert_eq(sc->bytes, 7);
	cr_assert_eq(sc->nlabels, 1);
	cr_assert_str_eq(sc->labels[0].key, "a");
	cr_assert_str_eq(sc->labels[0].value, "b");
	sidecar__free(sc);
}

Test(ingest, parse_unescapes)
{
	char err[256];
	struct sidecar *sc =
		parse("{\"version\":1,\"service\":\"\\ud83d\\ude00\\u00e9\\u20ac\\/\\b\\f"
		      "\\n\\r\\t\\\"\\\\\\u0041\",\"from_ns\":-0,\"until_ns\":0," GOOD_TAIL,
		      err, sizeof(err));

	cr_assert_not_null(sc, "%s", err);
	cr_assert_str_eq(sc->service, "\xf0\x9f\x98\x80\xc3\xa9\xe2\x82\xac/\b\f\n\r\t\"\\A");
	sidecar__free(sc);
}

Test(ingest, parse_integer_bounds)
{
	char err[256];
	struct sidecar *sc;

	sc = parse("{\"version\":1,\"service\":\"s\",\"from_ns\":9223372036854775807,\"until_ns\":"
		   "9223372036854775807,\"sample_rate\":4294967295,\"period_ns\":0,\"spy_name\":"
		   "\"r\",\"labels\":{},\"profile\":\"p\",\"bytes\":18446744073709551615}",
		   err, sizeof(err));
	cr_assert_not_null(sc, "%s", err);
	cr_assert_eq(sc->from_ns, INT64_MAX);
	cr_assert_eq(sc->sample_rate, UINT_MAX);
	cr_assert_eq(sc->bytes, UINT64_MAX);
	cr_assert_eq(sc->nlabels, 0);
	sidecar__free(sc);
}

struct bad_case {
	const char *json;
	const char *reason; /* a substring of err */
};

Test(ingest, parse_refuses_malformed)
{
	static const struct bad_case cases[] = {
		{"", "at byte 0: expected '{', found the end"},
		{"[]", "at byte 0: expected '{'"},
		{GOOD_HEAD GOOD_TAIL "x", "data after the object"},
		{GOOD_HEAD GOOD_TAIL "{}", "data after the object"},
		{GOOD_HEAD GOOD_TAIL ",", "data after the object"},
		{"{\"version\":1,\"version\":1}", "duplicate field \"version\""},
		{"{\"x\":1,\"x\":2}", "duplicate field \"x\""},
		{"{\"version\":1 \"service\":\"s\"}", "expected '}'"},
		{"{\"version\" 1}", "expected ':'"},
		{"{\"version\":1,}", "expected a string"},
		{"{version:1}", "expected a string"},
		{"{\"version\":2}", "field \"version\": 2 is not a version this reader knows (1)"},
		{"{\"version\":1}", "missing field \"service\""},
		{"{\"version\":\"1\"}", "field \"version\": not an integer"},
		{"{\"version\":1.0}", "field \"version\": not an integer"},
		{"{\"version\":1e0}", "field \"version\": not an integer"},
		{"{\"version\":01}", "leading zero"},
		{"{\"version\":-}", "malformed number"},
		{"{\"version\":1,\"bytes\":-1}", "field \"bytes\": negative"},
		{"{\"version\":1,\"bytes\":18446744073709551616}", "field \"bytes\": out of range"},
		{"{\"version\":1,\"from_ns\":9223372036854775808}",
		 "field \"from_ns\": out of range"},
		{"{\"version\":1,\"sample_rate\":4294967296}",
		 "field \"sample_rate\": out of range"},
		{"{\"service\":1}", "field \"service\": not a string"},
		{"{\"labels\":[]}", "field \"labels\": not an object"},
		{"{\"labels\":{\"a\":1}}", "the value of \"a\" is not a string"},
		{"{\"labels\":{\"a\":\"1\",\"a\":\"2\"}}", "field \"labels\": duplicate key \"a\""},
		{"{\"service\":\"a\\u0000b\"}", "\\u0000 (a NUL) in a string"},
		{"{\"service\":\"\\ud800\"}", "without its low half"},
		{"{\"service\":\"\\ud800\\u0041\"}", "followed by \\u0041"},
		{"{\"service\":\"\\udc00\"}", "lone low surrogate"},
		{"{\"service\":\"\\u12\"}", "non-hex digit"},
		{"{\"service\":\"\\u12", "unterminated string"},
		{"{\"service\":\"\\u1\"", "\\u escape cut short"},
		{"{\"service\":\"\\x\"}", "unknown escape '\\x'"},
		{"{\"service\":\"a\tb\"}", "control character 0x09 in a string"},
		{"{\"service\":\"\x80\"}", "invalid UTF-8 byte 0x80"},
		{"{\"service\":\"\xc3\"}", "invalid UTF-8 byte 0xc3"},
		{"{\"service\":\"\xed\xa0\x80\"}", "invalid UTF-8 byte 0xed"},
		{"{\"service\":\"abc", "unterminated string"},
		{"{\"x\":tru}", "expected a value"},
		{"{\"x\":[1,]}", "expected a value"},
		{"{\"x\":[1 2]}", "expected ']'"},
		{"{\"x\":1.}", "malformed number"},
		{"{\"x\":1e}", "malformed number"},
		{"{\"x\":", "expected a value, found the end"},
		{GOOD_HEAD "\"sample_rate\":19,\"period_ns\":5,\"spy_name\":\"r\",\"labels\":{},"
			   "\"profile\":\"../etc/passwd\",\"bytes\":7}",
		 "field \"profile\": not a plain file name"},
		{"{\"version\":1,\"service\":\"\",\"from_ns\":1,\"until_ns\":2," GOOD_TAIL,
		 "field \"service\": empty"},
		{"{\"version\":1,\"service\":\"s\",\"from_ns\":3,\"until_ns\":2," GOOD_TAIL,
		 "field \"until_ns\": before from_ns"},
		{"{\"version\":1,\"service\":\"s\",\"from_ns\":-3,\"until_ns\":2," GOOD_TAIL,
		 "field \"from_ns\": negative"},
	};
	char err[256];
	struct sidecar *sc;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		errno = 0;
		sc = parse(cases[i].json, err, sizeof(err));
		cr_assert_null(sc, "case %zu accepted: %s", i, cases[i].json);
		cr_assert_eq(errno, EINVAL, "case %zu: errno %d", i, errno);
		cr_assert(strstr(err, cases[i].reason), "case %zu: \"%s\" lacks \"%s\"", i, err,
			  cases[i].reason);
	}
}

Test(ingest, parse_refuses_nul_byte_and_deep_nesting)
{
	static const char good[] = GOOD_HEAD GOOD_TAIL;
	char doc[512], deep[200], err[256];
	struct sidecar *sc;
	size_t n = strlen(good), i;

	memcpy(doc, good, n);
	doc[n] = '\0';
	cr_assert_null(sidecar__parse(doc, n + 1, err, sizeof(err)));
	cr_assert(strstr(err, "data after the object"), "%s", err);
	/* a NUL inside a string: the length says it is part of the document */
	memcpy(doc, "{\"service\":\"a\0b\"}", 18);
	cr_assert_null(sidecar__parse(doc, 17, err, sizeof(err)));
	cr_assert(strstr(err, "control character 0x00"), "%s", err);

	/* 31 arrays inside the unknown field (depth 32 with the object) pass, 32 do not */
	for (n = 31; n <= 32; n++) {
		i = (size_t)snprintf(deep, sizeof(deep), "{\"x\":");
		memset(deep + i, '[', n);
		memset(deep + i + n, ']', n);
		deep[i + 2 * n] = '\0';
		/* the good document after it, without its '{' */
		snprintf(doc, sizeof(doc), "%s,%s", deep, GOOD_HEAD GOOD_TAIL + 1);
		sc = parse(doc, err, sizeof(err));
		if (n == 31) {
			cr_assert_not_null(sc, "%s", err);
			sidecar__free(sc);
		} else {
			cr_assert_null(sc);
			cr_assert(strstr(err, "nested deeper than 32"), "%s", err);
		}
	}
}

Test(ingest, read_errors)
{
	char path[400], err[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/missing.json", tmpdir);
	cr_assert_null(sidecar__read(path, err, sizeof(err)));
	cr_assert_eq(errno, ENOENT);
	cr_assert(strstr(err, path), "%s", err);

	snprintf(path, sizeof(path), "%s/big.json", tmpdir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(ftruncate(fileno(f), SIDECAR_MAX_BYTES + 1), 0);
	fclose(f);
	cr_assert_null(sidecar__read(path, err, sizeof(err)));
	cr_assert_eq(errno, EFBIG);

	snprintf(path, sizeof(path), "%s/bad.json", tmpdir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("{\"version\":1}\n", f);
	fclose(f);
	cr_assert_null(sidecar__read(path, err, sizeof(err)));
	cr_assert_eq(errno, EINVAL);
	cr_assert(strstr(err, "bad.json\": missing field \"service\""), "%s", err);

	cr_assert_null(sidecar__read(tmpdir, err, sizeof(err)));
}

/* ---- requests ---------------------------------------------------------------------------------- */

static const unsigned char profile_bytes[] = {0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef};

static struct sidecar_label test_labels[] = {
	{"service_name", "shop"}, {"host", "web-1"}, {"k8s.pod-name", "a,b}c=d e"},
	{"__private", "dropped"}, {"0lead", "x"},
};

static struct sidecar test_sc = {
	.version = 1,
	.service = "shop{x}",
	.from_ns = 1709648100500000000LL,
	.until_ns = 1709648110000000001LL,
	.sample_rate = 19,
	.period_ns = 52631578,
	.spy_name = "rubyprofd",
	.labels = test_labels,
	.nlabels = 5,
	.profile = "20240305T141500.500Z-shop-0.pb.gz",
	.bytes = sizeof(profile_bytes),
};

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The value of key in a query (percent-decoded, '+' as a space, as Go's url.ParseQuery). */
static bool query_get(const char *url, const char *key, char *out, size_t outlen)
{
	const char *q = strchr(url, '?'), *p, *end;
	size_t klen = strlen(key), o = 0;

	cr_assert_not_null(q);
	for (p = q + 1; *p; p = *end ? end + 1 : end) {
		end = p + strcspn(p, "&");
		if ((size_t)(end - p) > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			for (p += klen + 1; p < end && o + 1 < outlen; p++) {
				if (*p == '%') {
					cr_assert(unhex(p[1]) >= 0 && unhex(p[2]) >= 0,
						  "bad escape");
					out[o++] = (char)(unhex(p[1]) << 4 | unhex(p[2]));
					p += 2;
				} else {
					out[o++] = *p == '+' ? ' ' : *p;
				}
			}
			out[o] = '\0';
			return true;
		}
	}
	return false;
}

Test(ingest, pyroscope_ingest_request)
{
	struct protocol_request r;
	char v[512];
	const char *p;

	cr_assert_eq(protocol_build(PROTOCOL_PYROSCOPE, "https://pyro.example:4040/base/", &test_sc,
				    profile_bytes, sizeof(profile_bytes), &r),
		     0);
	cr_assert(!strncmp(r.url, "https://pyro.example:4040/base/ingest?name=", 43), "%s", r.url);
	/* only unreserved characters, '%', '=' and '&' in the query: nothing for Go to misread */
	for (p = strchr(r.url, '?') + 1; *p; p++)
		cr_assert(strchr("%=&-._~", *p) || (*p >= '0' && *p <= '9') ||
				  (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z'),
			  "'%c' in %s", *p, r.url);
	cr_assert(query_get(r.url, "name", v, sizeof(v)));
	cr_assert_str_eq(v,
			 "shop_x_{_0lead=x,host=web-1,k8s_pod_name=a_b_c=d e,service_name=shop}");
	cr_assert(query_get(r.url, "from", v, sizeof(v)));
	cr_assert_str_eq(v, "1709648100"); /* 100.5 s: floored */
	cr_assert(query_get(r.url, "until", v, sizeof(v)));
	cr_assert_str_eq(v, "1709648111"); /* 110.000000001 s: rounded up */
	cr_assert(query_get(r.url, "sampleRate", v, sizeof(v)));
	cr_assert_str_eq(v, "19");
	cr_assert(query_get(r.url, "spyName", v, sizeof(v)));
	cr_assert_str_eq(v, "rubyprofd");
	cr_assert(query_get(r.url, "format", v, sizeof(v)));
	cr_assert_str_eq(v, "pprof");
	cr_assert_str_eq(r.content_type, "application/octet-stream");
	cr_assert_null(r.headers[0]);
	cr_assert_eq(r.len, sizeof(profile_bytes));
	cr_assert_eq(memcmp(r.body, profile_bytes, r.len), 0);
	protocol_request_release(&r);
	cr_assert_null(r.url);
}

/*
 * The request messages as the servers define them, reduced to the fields rubyprofd sends with the
 * servers' field numbers: tests/proto/push.proto (grafana/pyroscope) and
 * tests/proto/profilestore.proto (parca-dev/parca), which tests/collector/test_collector.py also
 * encodes its requests from. Paths from the source tree's top, where the unit tests run.
 */
static const char push_proto[] = "push.proto";
static const char parca_proto[] = "profilestore.proto";

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(data, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
}

/*
 * Runs protoc on data: --decode_raw when schema is NULL (the wire format alone), else --decode
 * with that schema (a file of tests/proto). Its output, malloc'd.
 */
static char *protoc(const char *schema, const char *type, const void *data, size_t len)
{
	char in[400], cmd[1400], *out = NULL;
	size_t cap = 0, n = 0, k;
	FILE *p;

	snprintf(in, sizeof(in), "%s/body.pb", tmpdir);
	write_file(in, data, len);
	if (schema) {
		snprintf(cmd, sizeof(cmd), "protoc -I tests/proto --decode=%s '%s' < '%s' 2>&1",
			 type, schema, in);
	} else {
		snprintf(cmd, sizeof(cmd), "protoc --decode_raw < '%s' 2>&1", in);
	}
	p = popen(cmd, "r");
	cr_assert_not_null(p, "popen: %s", strerror(errno));
	do {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			out = realloc(out, cap);
			cr_assert_not_null(out);
		}
		k = fread(out + n, 1, 4096, p);
		n += k;
	} while (k);
	out[n] = '\0';
	cr_assert_eq(pclose(p), 0, "%s failed (scripts/deps.sh installs protobuf-compiler): %s",
		     cmd, out);
	return out;
}

Test(ingest, pyroscope_push_request)
{
	struct protocol_request r, r2;
	struct sidecar sc = test_sc;
	struct sidecar_label rev[5];
	const char *id;
	char *text;
	size_t i;

	cr_assert_eq(protocol_build(PROTOCOL_PYROSCOPE_PUSH, "http://127.0.0.1:4040", &sc,
				    profile_bytes, sizeof(profile_bytes), &r),
		     0);
	cr_assert_str_eq(r.url, "http://127.0.0.1:4040/push.v1.PusherService/Push");
	cr_assert_str_eq(r.content_type, "application/proto");
	cr_assert_str_eq(r.headers[0], "Connect-Protocol-Version: 1");
	cr_assert_null(r.headers[1]);
	/* the wire format alone: the profile is one length-delimited field, byte for byte */
	text = protoc(NULL, NULL, r.body, r.len);
	cr_assert(strstr(text, "1: \"\\037\\213\\010\\000\\336\\255\\276\\357\"\n"), "%s", text);
	free(text);
	text = protoc(push_proto, "push.v1.PushRequest", r.body, r.len);
	id = strstr(text, "  ID: \"");
	cr_assert_not_null(id, "%s", text);
	id += 7;
	/* a UUID: 8-4-4-4-12 lowercase hex, version 8, variant 10 */
	for (i = 0; i < 36; i++)
		cr_assert(i == 8 || i == 13 || i == 18 || i == 23
				  ? id[i] == '-'
				  : strchr("0123456789abcdef", id[i]) != NULL,
			  "id %.36s", id);
	cr_assert_eq(id[36], '"');
	cr_assert_eq(id[14], '8');
	cr_assert(strchr("89ab", id[19]));
	{
		char want[2048];

		snprintf(want, sizeof(want),
			 "series {\n"
			 "  labels {\n    name: \"_0lead\"\n    value: \"x\"\n  }\n"
			 "  labels {\n    name: \"__name__\"\n    value: \"process_cpu\"\n  }\n"
			 "  labels {\n    name: \"host\"\n    value: \"web-1\"\n  }\n"
			 "  labels {\n    name: \"k8s_pod_name\"\n    value: \"a,b}c=d e\"\n  }\n"
			 "  labels {\n    name: \"pyroscope_spy\"\n    value: \"rubyprofd\"\n  }\n"
			 "  labels {\n    name: \"service_name\"\n    value: \"shop\"\n  }\n"
			 "  samples {\n"
			 "    raw_profile: \"\\037\\213\\010\\000\\336\\255\\276\\357\"\n"
			 "    ID: \"%.36s\"\n  }\n"
			 "}\n",
			 id);
		cr_assert_str_eq(text, want);
	}
	/* A resend, from the labels in another order, is byte for byte the same request. */
	for (i = 0; i < 5; i++)
		rev[i] = test_labels[4 - i];
	sc.labels = rev;
	cr_assert_eq(protocol_build(PROTOCOL_PYROSCOPE_PUSH, "http://127.0.0.1:4040/", &sc,
				    profile_bytes, sizeof(profile_bytes), &r2),
		     0);
	cr_assert_str_eq(r2.url, r.url);
	cr_assert_eq(r2.len, r.len);
	cr_assert_eq(memcmp(r2.body, r.body, r.len), 0);
	protocol_request_release(&r2);
	/* another interval: another ID */
	sc.from_ns++;
	cr_assert_eq(protocol_build(PROTOCOL_PYROSCOPE_PUSH, "http://h", &sc, profile_bytes,
				    sizeof(profile_bytes), &r2),
		     0);
	cr_assert(r2.len == r.len && memcmp(r2.body, r.body, r.len));
	protocol_request_release(&r2);
	free(text);
	protocol_request_release(&r);
}

/* Over Pyroscope's default limits: a series it would refuse whole is fitted, and said so. */
Test(ingest, pyroscope_series_fits_default_limits)
{
	static struct sidecar_label many[41];
	static char keys[40][16], big[3001];
	struct sidecar sc = test_sc;
	struct protocol_request r;
	char *text, *p;
	size_t i, n = 0;

	for (i = 0; i < 40; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%02zu", i);
		many[i] = (struct sidecar_label){keys[i], "v"};
	}
	/* 'a' and 1499 two-byte characters: byte 2048 is the second of one */
	big[0] = 'a';
	for (i = 0; i < 1499; i++)
		memcpy(big + 1 + 2 * i, "\xc3\xa9", 2);
	big[2999] = '\0';
	many[0].value = big;
	many[40] = (struct sidecar_label){"service_name", "shop"};
	sc.labels = many;
	sc.nlabels = 41;
	cr_assert_eq(protocol_build(PROTOCOL_PYROSCOPE_PUSH, "http://h", &sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     0);
	text = protoc(push_proto, "push.v1.PushRequest", r.body, r.len);
	for (p = text; (p = strstr(p, "  labels {")); p++)
		n++;
	/* 26 of the sidecar's own, service_name, pyroscope_spy, __name__ (+ __delta__ on the
	 * server): 30 */
	cr_assert_eq(n, 29, "%zu labels:\n%s", n, text);
	cr_assert_eq(r.labels_trimmed, 14 + 1);
	cr_assert(strstr(text, "name: \"k25\"") && !strstr(text, "name: \"k26\""), "%s", text);
	cr_assert(strstr(text, "name: \"service_name\"") &&
		  strstr(text, "name: \"pyroscope_spy\""));
	free(text);
	protocol_request_release(&r);

	/* the value cut at 2048 bytes or fewer, at a character boundary */
	cr_assert_eq(protocol_build(PROTOCOL_PYROSCOPE, "http://h", &sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     0);
	{
		char v[8192];

		cr_assert(query_get(r.url, "name", v, sizeof(v)));
		p = strstr(v, "k00=");
		cr_assert_not_null(p, "%s", v);
		cr_assert_eq(strcspn(p + 4, ",}"), 2047, "%.60s", p);
	}
	protocol_request_release(&r);
	/* Parca has no such limits: everything goes */
	cr_assert_eq(protocol_build(PROTOCOL_PARCA, "http://h", &sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     0);
	cr_assert_eq(r.labels_trimmed, 0);
	protocol_request_release(&r);
}

Test(ingest, parca_request)
{
	struct protocol_request r;
	size_t n;
	char *text;

	cr_assert_eq(protocol_build(PROTOCOL_PARCA, "http://parca:7070", &test_sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     0);
	cr_assert_str_eq(
		r.url,
		"http://parca:7070/parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw");
	cr_assert_str_eq(r.content_type, "application/grpc-web+proto");
	cr_assert_str_eq(r.headers[0], "X-Grpc-Web: 1");
	cr_assert_null(r.headers[1]);
	cr_assert(r.len > 5);
	cr_assert_eq(r.body[0], 0, "an uncompressed message frame");
	n = (size_t)r.body[1] << 24 | (size_t)r.body[2] << 16 | (size_t)r.body[3] << 8 | r.body[4];
	cr_assert_eq(n, r.len - 5, "the frame's length is the message's");
	text = protoc(NULL, NULL, r.body + 5, n);
	cr_assert(strstr(text, "\n3: 1\n"), "normalized: %s", text);
	free(text);
	text = protoc(parca_proto, "parca.profilestore.v1alpha1.WriteRawRequest", r.body + 5, n);
	cr_assert_str_eq(
		text,
		"series {\n"
		"  labels {\n"
		"    labels {\n      name: \"_0lead\"\n      value: \"x\"\n    }\n"
		"    labels {\n      name: \"__name__\"\n      value: \"process_cpu\"\n    }\n"
		"    labels {\n      name: \"host\"\n      value: \"web-1\"\n    }\n"
		"    labels {\n      name: \"k8s_pod_name\"\n      value: \"a,b}c=d e\"\n    }\n"
		"    labels {\n      name: \"service_name\"\n      value: \"shop\"\n    }\n"
		"  }\n"
		"  samples {\n    raw_profile: \"\\037\\213\\010\\000\\336\\255\\276\\357\"\n  }\n"
		"}\n"
		"normalized: true\n");
	free(text);
	protocol_request_release(&r);
}

Test(ingest, build_refuses)
{
	struct sidecar_label clash[] = {{"a.b", "1"}, {"a-b", "2"}};
	struct sidecar_label empty[] = {{"", "1"}};
	struct sidecar sc = test_sc;
	struct protocol_request r;
	static const char *const bad_urls[] = {
		"ftp://h", "h:4040", "http://", "https:///x", "http://h/?q=1", "http://h/#f", "",
	};
	size_t i;

	for (i = 0; i < sizeof(bad_urls) / sizeof(bad_urls[0]); i++)
		cr_assert_eq(protocol_build(PROTOCOL_PYROSCOPE, bad_urls[i], &sc, profile_bytes,
					    sizeof(profile_bytes), &r),
			     -EINVAL, "%s", bad_urls[i]);
	cr_assert_null(r.url);
	sc.labels = clash;
	sc.nlabels = 2;
	cr_assert_eq(protocol_build(PROTOCOL_PARCA, "http://h", &sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     -EINVAL);
	sc.labels = empty;
	sc.nlabels = 1;
	cr_assert_eq(protocol_build(PROTOCOL_PARCA, "http://h", &sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     -EINVAL);
	sc.nlabels = 0;
	cr_assert_eq(protocol_build((enum protocol)7, "http://h", &sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     -EINVAL);
	cr_assert_eq(protocol_build(PROTOCOL_PARCA, "http://h", &sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     0);
	protocol_request_release(&r);
}

/* ---- responses ------------------------------------------------------------------------------- */

static size_t frame(unsigned char *out, unsigned char flag, const char *payload)
{
	size_t n = strlen(payload);

	out[0] = flag;
	out[1] = (unsigned char)(n >> 24);
	out[2] = (unsigned char)(n >> 16);
	out[3] = (unsigned char)(n >> 8);
	out[4] = (unsigned char)n;
	memcpy(out + 5, payload, n);
	return n + 5;
}

/* A gRPC-web answer with no body: the status among the HTTP headers (the length is the text's). */
#define TRAILERS_ONLY                                                                              \
	"HTTP/1.1 200 OK\r\ncontent-type: application/grpc-web+proto\r\n"                          \
	"grpc-status: 16\r\ngrpc-message: no token\r\n"

Test(ingest, grpcweb_responses)
{
	unsigned char body[512];
	char err[256];
	size_t n;

	/* an empty WriteRawResponse, then the trailers */
	n = frame(body, 0, "");
	n += frame(body + n, 0x80, "grpc-status:0\r\ngrpc-message:\r\n");
	cr_assert_eq(protocol_check_response(PROTOCOL_PARCA, body, n, err, sizeof(err)), 0, "%s",
		     err);

	n = frame(body, 0x80, "Grpc-Status: 3\r\nGrpc-Message: invalid label name: a%2Fb%0A\r\n");
	cr_assert_eq(protocol_check_response(PROTOCOL_PARCA, body, n, err, sizeof(err)), -EPROTO);
	cr_assert_str_eq(err, "grpc-status 3: invalid label name: a/b");

	/* Trailers-Only: the status among the HTTP headers, an empty body */
	cr_assert_eq(protocol_check_response(PROTOCOL_PARCA, "", 0, err, sizeof(err)), -EPROTO);
	cr_assert(strstr(err, "without a grpc-status"), "%s", err);
	cr_assert_eq(protocol_check_reply(PROTOCOL_PARCA, TRAILERS_ONLY, strlen(TRAILERS_ONLY), "",
					  0, err, sizeof(err)),
		     -EPROTO);
	cr_assert_str_eq(err, "grpc-status 16: no token");
	cr_assert_eq(protocol_check_reply(PROTOCOL_PARCA, "grpc-status: 0\n", 15, "", 0, err,
					  sizeof(err)),
		     0);
	/* the body's trailer wins over the headers */
	n = frame(body, 0x80, "grpc-status: 0\r\n");
	cr_assert_eq(protocol_check_reply(PROTOCOL_PARCA, "grpc-status: 5\n", 15, body, n, err,
					  sizeof(err)),
		     0);

	/* malformed bodies */
	n = frame(body, 0x80, "grpc-status: 0\r\n");
	cr_assert_eq(protocol_check_response(PROTOCOL_PARCA, body, n - 1, err, sizeof(err)),
		     -EPROTO);
	cr_assert(strstr(err, "cut short"), "%s", err);
	cr_assert_eq(protocol_check_response(PROTOCOL_PARCA, body, 3, err, sizeof(err)), -EPROTO);
	n = frame(body, 0x81, "grpc-status: 0\r\n");
	cr_assert_eq(protocol_check_response(PROTOCOL_PARCA, body, n, err, sizeof(err)), -EPROTO);
	n = frame(body, 0x80, "grpc-status: zero\r\n");
	cr_assert_eq(protocol_check_response(PROTOCOL_PARCA, body, n, err, sizeof(err)), -EPROTO);

	/* Pyroscope answers in its status code */
	cr_assert_eq(protocol_check_response(PROTOCOL_PYROSCOPE, "", 0, err, sizeof(err)), 0);
	cr_assert_eq(protocol_check_response(PROTOCOL_PYROSCOPE_PUSH, "", 0, err, sizeof(err)), 0);
}

Test(ingest, protocol_names)
{
	enum protocol p;

	cr_assert_eq(protocol_parse("pyroscope", &p), 0);
	cr_assert_eq(p, PROTOCOL_PYROSCOPE);
	cr_assert_eq(protocol_parse("pyroscope-push", &p), 0);
	cr_assert_eq(p, PROTOCOL_PYROSCOPE_PUSH);
	cr_assert_eq(protocol_parse("parca", &p), 0);
	cr_assert_eq(p, PROTOCOL_PARCA);
	cr_assert_eq(protocol_parse("Parca", &p), -EINVAL);
	cr_assert_eq(protocol_parse("", &p), -EINVAL);
	cr_assert_str_eq(protocol_name(PROTOCOL_PYROSCOPE_PUSH), "pyroscope-push");
	cr_assert_str_eq(protocol_name(PROTOCOL_PARCA), "parca");
}

Test(ingest, error_reasons)
{
	static const char pyro[] =
		"{\"code\":\"invalid_argument\",\"message\":\"name: invalid service "
		"name: a b: character is not allowed: ' '\"}\n";
	static const char connect[] = "{\"message\":\"no \\\"org\\\"\",\"details\":[{\"x\":1}],"
				      "\"code\":\"unauthenticated\"}";
	unsigned char body[256];
	char out[128];
	size_t n;

	cr_assert_eq(protocol_error_reason(PROTOCOL_PYROSCOPE, NULL, 0, pyro, strlen(pyro), out,
					   sizeof(out)),
		     0);
	cr_assert_str_eq(out, "invalid_argument: name: invalid service name: a b: character is not "
			      "allowed: ' '");
	cr_assert_eq(protocol_error_reason(PROTOCOL_PYROSCOPE_PUSH, NULL, 0, connect,
					   strlen(connect), out, sizeof(out)),
		     0);
	cr_assert_str_eq(out, "unauthenticated: no \"org\"");
	cr_assert_eq(protocol_error_reason(PROTOCOL_PYROSCOPE, NULL, 0, "upstream\r\ntimed out\n",
					   20, out, sizeof(out)),
		     0);
	cr_assert_str_eq(out, "upstream timed out");
	cr_assert_eq(
		protocol_error_reason(PROTOCOL_PYROSCOPE, NULL, 0, "<html>", 6, out, sizeof(out)),
		-ENOENT);
	cr_assert_str_eq(out, "");
	cr_assert_eq(protocol_error_reason(PROTOCOL_PARCA,
					   "grpc-status: 7\r\ngrpc-message: denied\r\n", 38, "", 0,
					   out, sizeof(out)),
		     0);
	cr_assert_str_eq(out, "grpc-status 7: denied");
	n = frame(body, 0x80, "grpc-status: 8\r\n");
	cr_assert_eq(protocol_error_reason(PROTOCOL_PARCA, NULL, 0, body, n, out, 10), 0);
	cr_assert_str_eq(out, "grpc-stat", "cut to outlen");
}

/* A wall-clock profile's sidecar names its series "wall"; push and Parca send that __name__. */
Test(ingest, wall_profiles_ship_as_wall)
{
	struct spool_meta m = {.service = "shop",
			       .from_ns = 1,
			       .until_ns = 2,
			       .sample_rate = 19,
			       .period_ns = 5,
			       .profile_name = "wall"};
	struct protocol_request r;
	struct sidecar *sc;
	char path[600], err[128], *text;
	static const char bad[] = GOOD_HEAD_FOR_NAME "\"profile_name\":\"wall time\"}";

	sc = spool_roundtrip(&m, path, sizeof(path));
	cr_assert_str_eq(sc->profile_name, "wall");
	cr_assert_eq(protocol_build(PROTOCOL_PYROSCOPE_PUSH, "http://h", sc, profile_bytes,
				    sizeof(profile_bytes), &r),
		     0);
	text = protoc(push_proto, "push.v1.PushRequest", r.body, r.len);
	cr_assert_not_null(strstr(text, "name: \"__name__\"\n    value: \"wall\""), "%s", text);
	free(text);
	protocol_request_release(&r);
	sidecar__free(sc);
	/* it becomes a metric name: anything else is refused with the reason */
	cr_assert_null(sidecar__parse(bad, strlen(bad), err, sizeof(err)));
	cr_assert_str_eq(err, "field \"profile_name\": not a metric name");
}
