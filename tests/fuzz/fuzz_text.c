// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fuzzes the text sinks: what a profiled process names (functions, files, threads, its
 * service) on its way to a terminal, JSON, SVG, HTML and the metrics endpoint. The input is
 * fields separated by 0x1e: two frames' names and a file, a thread name, a Ruby thread name,
 * a service, a title. They go into the aggregate as the collector puts them, out through the
 * oneshot summaries (toptable_write, toptable_wall), into a pprof, back through pprofread into a
 * view, and out through `rubyprofd report`'s writers; the service also into a Prometheus label.
 * Each output is checked for its format's property with code that is not the writers':
 *   terminal (summaries, `top`): valid UTF-8 (decoded here), no control character but '\n'
 *   JSON (speedscope): a valid JSON document (RFC 8259, parsed here), in valid UTF-8
 *   SVG: well-formed XML for libxml2's parser (no raw '<' or '&' in text, no control bytes)
 *   HTML (flamegraph): no '<' or '&' other than the page's own (their count is the same as for
 *   plain names), so no name can close the <script> element that holds them
 *   Prometheus label: escaped as the format says, and read back the same when valid UTF-8.
 */
#include <errno.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <string.h>

#include "cmd/metrics.h"
#include "fuzz_common.h"
#include "profile/aggregate.h"
#include "profile/pprof.h"
#include "view/pprofread.h"
#include "view/toptable.h"
#include "view/view.h"

enum { F_NAME1, F_FILE1, F_NAME2, F_THREAD, F_RTHREAD, F_SERVICE, F_TITLE, F_N };

static void fail(const char *what, const char *out, size_t len)
{
	fprintf(stderr, "fuzz_text: %s: %.*s\n", what, (int)(len < 400 ? len : 400), out);
	abort();
}

/*
 * The code point at s (n bytes left) and its length, RFC 3629 decoded the long way (the value
 * first, then its range checked: no overlong form, no surrogate, nothing past U+10FFFF); 0 when
 * it is not UTF-8. glibc's decoder is no judge: it takes F4 90 80 80 (U+110000).
 */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
	size_t len, i;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	if (!len || len > n || (len == 4 && s[0] > 0xf7))
		return 0;
	c = s[0] & (0x7f >> len);
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Whether s[0, len) is UTF-8; each code point to fn (may be NULL). */
static bool utf8_ok(const char *s, size_t len, bool (*fn)(uint32_t c))
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t c;
	size_t k;

	while (len) {
		k = utf8_decode(p, len, &c);
		if (!k || (fn && !fn(c)))
			return false;
		p += k;
		len -= k;
	}
	return true;
}

static bool terminal_char(uint32_t c)
{
	return c == '\n' || !(c < 0x20 || (c >= 0x7f && c <= 0x9f));
}

static void check_terminal(const char *what, const char *out, size_t len)
{
	if (!utf8_ok(out, len, terminal_char))
		fail(what, out, len);
}

/* ---- a JSON parser (RFC 8259), for the check ------------------------------------------------ */

struct rfc8259 {
	const char *p, *end;
	int depth;
};

static void rfc8259_ws(struct rfc8259 *j)
{
	while (j->p < j->end && strchr(" \t\n\r", *j->p) && *j->p)
		j->p++;
}

static bool rfc8259_value(struct rfc8259 *j);

static bool rfc8259_string(struct rfc8259 *j)
{
	if (j->p >= j->end || *j->p++ != '"')
		return false;
	while (j->p < j->end && *j->p != '"') {
		if ((unsigned char)*j->p < 0x20)
			return false;
		if (*j->p++ != '\\')
			continue;
		if (j->p >= j->end)
			return false;
		if (*j->p == 'u') {
			if (j->end - j->p < 5 || strspn(j->p + 1, "0123456789abcdefABCDEF") < 4)
				return false;
			j->p += 5;
		} else if (strchr("\"\\/bfnrt", *j->p) && *j->p) {
			j->p++;
		} else {
			return false;
		}
	}
	return j->p++ < j->end;
}

static bool rfc8259_number(struct rfc8259 *j)
{
	const char *s = j->p;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return false;
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return false;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	return j->p > s;
}

/* An object (open '{', close '}', with keys) or an array. */
static bool rfc8259_items(struct rfc8259 *j, char close, bool keys)
{
	j->p++;
	rfc8259_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return true;
	}
	for (;;) {
		rfc8259_ws(j);
		if (keys) {
			if (!rfc8259_string(j))
				return false;
			rfc8259_ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return false;
		}
		if (!rfc8259_value(j))
			return false;
		rfc8259_ws(j);
		if (j->p >= j->end)
			return false;
		if (*j->p == close) {
			j->p++;
			return true;
		}
		if (*j->p++ != ',')
			return false;
	}
}

static bool rfc8259_value(struct rfc8259 *j)
{
	bool ok;

	rfc8259_ws(j);
	if (j->p >= j->end || ++j->depth > 64)
		return false;
	switch (*j->p) {
	case '{':
		ok = rfc8259_items(j, '}', true);
		break;
	case '[':
		ok = rfc8259_items(j, ']', false);
		break;
	case '"':
		ok = rfc8259_string(j);
		break;
	default:
		if ((size_t)(j->end - j->p) >= 4 &&
		    (!memcmp(j->p, "true", 4) || !memcmp(j->p, "null", 4))) {
			j->p += 4;
			ok = true;
		} else if ((size_t)(j->end - j->p) >= 5 && !memcmp(j->p, "false", 5)) {
			j->p += 5;
			ok = true;
		} else {
			ok = rfc8259_number(j);
		}
	}
	j->depth--;
	return ok;
}

static void check_json(const char *out, size_t len)
{
	struct rfc8259 j = {.p = out, .end = out + len};

	if (!utf8_ok(out, len, NULL) || !rfc8259_value(&j))
		fail("speedscope: not JSON", out, len);
	rfc8259_ws(&j);
	if (j.p != j.end)
		fail("speedscope: bytes after the document", j.p, j.end - j.p);
}

static void check_svg(const char *out, size_t len)
{
	xmlDocPtr doc = xmlReadMemory(out, (int)len, "fuzz.svg", "UTF-8",
				      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);

	if (!doc)
		fail("svg: not well-formed XML", out, len);
	xmlFreeDoc(doc);
}

static size_t count(const char *s, size_t len, char c)
{
	size_t n = 0;

	while (len--)
		n += *s++ == c;
	return n;
}

/* ---- the Prometheus label ------------------------------------------------------------------- */

/* key="value" read back: the escapes undone into out (as large as the label). */
static void check_label(const char *value)
{
	char dst[512], back[512];
	size_t i, n = 0, vlen;
	const char *v;

	dst[0] = '\0';
	if (metrics_buf_label(dst, sizeof(dst), "service", value))
		return;
	vlen = strlen(dst);
	if (strncmp(dst, "service=\"", 9) || vlen < 10 || dst[vlen - 1] != '"' ||
	    !utf8_ok(dst, vlen, NULL) || strchr(dst, '\n'))
		fail("label: not key=\"value\" in UTF-8 on one line", dst, vlen);
	for (v = dst + 9, i = 0; i < vlen - 10; i++) {
		if (v[i] == '"')
			fail("label: a raw quote", dst, vlen);
		if (v[i] != '\\') {
			back[n++] = v[i];
			continue;
		}
		if (++i >= vlen - 10 || !strchr("\\\"n", v[i]) || !v[i])
			fail("label: a bad escape", dst, vlen);
		back[n++] = v[i] == 'n' ? '\n' : v[i];
	}
	back[n] = '\0';
	if (utf8_ok(value, strlen(value), NULL) && strcmp(back, value) != 0)
		fail("label: read back differs", dst, vlen);
}

/* ---- the pipeline --------------------------------------------------------------------------- */

struct mem {
	char *buf;
	size_t len;
	FILE *f;
};

static bool mem_open(struct mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	return m->f != NULL;
}

static void mem_close(struct mem *m)
{
	fclose(m->f);
}

/* Closes m after a writer that returned rc: true when it wrote (m->buf then is the caller's). */
static bool mem_wrote(struct mem *m, int rc)
{
	mem_close(m);
	if (rc == 0)
		return true;
	free(m->buf);
	return false;
}

/* The aggregate of one sample of f's frames and threads. */
static struct aggregate *aggregate(char **f)
{
	struct aggregate_proc_info info = {
		.pid = 42, .nspid = 7, .service = f[F_SERVICE], .ruby_version = "3.3.8"};
	struct aggregate_thread th = {.tid = 43,
				      .name = f[F_THREAD],
				      .ruby_thread = "0x10",
				      .ruby_thread_name = f[F_RTHREAD],
				      .state = "sleeping"};
	const int64_t values[2] = {1, 10000000};
	struct aggregate *a = aggregate__new(2, 16);
	uint32_t ids[3];
	struct aggregate_proc *p;

	p = a ? aggregate_proc__new(a, &info) : NULL;
	if (!p)
		goto fail;
	ids[0] = aggregate_frame_id(p, AGG_FRAME_RUBY, f[F_NAME1], f[F_FILE1], 3, 5);
	ids[1] = aggregate_frame_id(p, AGG_FRAME_CFUNC, f[F_NAME2], "", 0, 0);
	ids[2] = aggregate_native_frame_id(p, f[F_NAME2], f[F_FILE1], "00ff");
	if (!ids[0] || !ids[1] || !ids[2] || aggregate_add_thread(a, p, &th, ids, 3, values))
		goto fail;
	return a;
fail:
	aggregate__free(a);
	return NULL;
}

/* The aggregate as a pprof, read back as `rubyprofd report` reads it. */
static struct view *view_of(const struct aggregate *a)
{
	struct view_filter filter = {.want_top = true};
	struct pprofread *r = NULL;
	struct pprof *pp = pprof__new();
	struct view *v = NULL;
	uint8_t *bytes = NULL;
	size_t len = 0;
	char err[256];

	if (!pp || aggregate_to_pprof(a, pp, NULL, 0) || pprof_encode(pp, 0, &bytes, &len))
		goto cleanup;
	r = pprofread__new(bytes, len, "fuzz", err, sizeof(err));
	v = r ? view__new(&filter, err, sizeof(err)) : NULL;
	if (v && (view_add_profile(v, r, "fuzz", err, sizeof(err)) < 0 || view_finish(v))) {
		view__free(v);
		v = NULL;
	}
cleanup:
	pprofread__free(r);
	free(bytes);
	pprof__free(pp);
	return v;
}

/* '<' and '&' of the flamegraph page for names without them, counted once. */
static void page_counts(size_t *lt, size_t *amp)
{
	static char plain[] = "a";
	static size_t n_lt, n_amp;
	static bool done;
	char *f[F_N] = {plain, plain, plain, plain, plain, plain, plain};
	struct aggregate *a;
	struct view *v;
	struct mem m;

	if (!done && (a = aggregate(f)) && (v = view_of(a)) && mem_open(&m)) {
		if (mem_wrote(&m, view_write_flamegraph(v, m.f, plain))) {
			n_lt = count(m.buf, m.len, '<');
			n_amp = count(m.buf, m.len, '&');
			done = true;
			free(m.buf);
		}
		view__free(v);
		aggregate__free(a);
	}
	if (!done)
		abort(); /* plain names must make a page */
	*lt = n_lt;
	*amp = n_amp;
}

static void writers(const struct view *v, const char *title)
{
	size_t lt, amp;
	struct mem m;

	if (mem_open(&m) && mem_wrote(&m, view_write_top(v, m.f, 10))) {
		check_terminal("report -f top", m.buf, m.len);
		free(m.buf);
	}
	if (mem_open(&m) && mem_wrote(&m, view_write_speedscope(v, m.f, title))) {
		check_json(m.buf, m.len);
		free(m.buf);
	}
	if (mem_open(&m) && mem_wrote(&m, view_write_svg(v, m.f, title))) {
		check_svg(m.buf, m.len);
		free(m.buf);
	}
	page_counts(&lt, &amp);
	if (mem_open(&m) && mem_wrote(&m, view_write_flamegraph(v, m.f, title))) {
		if (count(m.buf, m.len, '<') != lt || count(m.buf, m.len, '&') != amp)
			fail("flamegraph: a '<' or '&' not the page's", m.buf, m.len);
		free(m.buf);
	}
}

static void summaries(const struct aggregate *a)
{
	struct mem m;

	if (mem_open(&m) && mem_wrote(&m, toptable_write(m.f, a, 10))) {
		check_terminal("toptable_write", m.buf, m.len);
		free(m.buf);
	}
	if (mem_open(&m)) {
		toptable_wall(m.f, a);
		mem_close(&m);
		check_terminal("toptable_wall", m.buf, m.len);
		free(m.buf);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	char *text, *f[F_N], *p, empty[] = "";
	struct aggregate *a;
	struct view *v;
	int i;

	if (!init) {
		xmlInitParser();
		init = true;
	}
	text = fuzz_strndup(data, size);
	if (!text)
		return 0;
	for (i = 0, p = text; i < F_N; i++) {
		f[i] = p ? p : empty;
		p = p ? strchr(p, 0x1e) : NULL;
		if (p)
			*p++ = '\0';
	}
	check_label(f[F_SERVICE]);
	a = aggregate(f);
	if (a) {
		summaries(a);
		v = view_of(a);
		if (v) {
			writers(v, f[F_TITLE]);
			view__free(v);
		}
		aggregate__free(a);
	}
	free(text);
	return 0;
}
