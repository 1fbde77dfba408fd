// SPDX-License-Identifier: GPL-2.0-only
/*
 * appname.c - the service name of a Ruby process. Steps, first that gives a name wins:
 *   1. config rules "FIELD ~ REGEX => ACTIONS"
 *   2. the systemd unit in the cgroup path (innermost .service that is an app's own unit)
 *   3. the container: the app inside it when steps 4-5 name one, else container-<12 hex>
 *   4. a well-known process title: Puma, Unicorn, Sidekiq, Resque (formats from their sources)
 *   5. the script ruby runs, or the embedding executable
 * The reasons for each choice are in docs/service-names.md.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/fileio.h"
#include "proc/appname.h"

/* Bounds on what is read from /proc; a file cut at its bound sets app_identity.truncated. */
#define CGROUP_READ_MAX	 (64 * 1024UL)
#define CMDLINE_READ_MAX (64 * 1024UL)
#define ENVIRON_READ_MAX (256 * 1024UL)
#define COMM_READ_MAX	 64
/* argv entries looked at for the script; options and the script come first. */
#define ARGS_MAX	 64
/* cgroup lines kept: v1 has one per hierarchy, about 13 in practice. */
#define CGROUP_LINES_MAX 32
/* $0..$9 in templates. */
#define TEMPLATE_GROUPS	 10

enum rule_field { FIELD_CGROUP, FIELD_CMDLINE, FIELD_EXE, FIELD_COMM, FIELD_ENV };

struct rule {
	enum rule_field field;
	char *env_name;
	regex_t re;
	bool re_ok;
	bool ignore;
	char *name; /* template, NULL when the rule gives no name */
	size_t nlabels;
	char *keys[APPNAME_MAX_LABELS];
	char *values[APPNAME_MAX_LABELS]; /* templates */
};

struct appname_rules {
	struct rule *v;
	size_t n;
	bool needs_env;
};

/* A string slice: argv entries and cgroup paths are not NUL-terminated where they lie. */
struct span {
	const char *p;
	size_t len;
};

/* ---- small helpers ----------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void set_msg(char *msg, size_t len, const char *fmt,
							  ...)
{
	va_list ap;

	if (!msg || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

static bool span_eq(struct span s, const char *lit)
{
	size_t n = strlen(lit);

	return s.len == n && memcmp(s.p, lit, n) == 0;
}

static bool has_suffix(const char *p, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && memcmp(p + len - n, suffix, n) == 0;
}

static struct span span_basename(struct span s)
{
	const char *slash;

	while (s.len > 1 && s.p[s.len - 1] == '/')
		s.len--;
	slash = memrchr(s.p, '/', s.len);
	if (slash && s.len > 1) {
		s.len -= (size_t)(slash + 1 - s.p);
		s.p = slash + 1;
	}
	return s;
}

static bool all_digits(const char *p, size_t len)
{
	size_t i;

	if (!len)
		return false;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)p[i]))
			return false;
	}
	return true;
}

/* "ruby", "ruby3.1", "ruby-3.3.0", "ruby31": the interpreter itself, not an app. */
static bool ruby_like(struct span s)
{
	size_t i = 4;

	if (s.len < 4 || memcmp(s.p, "ruby", 4) != 0)
		return false;
	if (s.len == 4)
		return true;
	if (s.p[i] == '-' || s.p[i] == '_')
		i++;
	if (i >= s.len || !isdigit((unsigned char)s.p[i]))
		return false;
	for (; i < s.len; i++) {
		if (!isdigit((unsigned char)s.p[i]) && s.p[i] != '.')
			return false;
	}
	return true;
}

/*
 * Drops a version suffix with at least one dot ("myapp-1.2", "tool3.1"): "app2" keeps its digit,
 * it is more likely part of the name than a version.
 */
static struct span strip_version(struct span s)
{
	size_t i = s.len, dots = 0;

	while (i > 0 && (isdigit((unsigned char)s.p[i - 1]) || s.p[i - 1] == '.')) {
		if (s.p[i - 1] == '.')
			dots++;
		i--;
	}
	if (!dots || i == s.len || !isdigit((unsigned char)s.p[i]) ||
	    !isdigit((unsigned char)s.p[s.len - 1]))
		return s;
	if (i > 0 && (s.p[i - 1] == '-' || s.p[i - 1] == '_'))
		i--;
	if (i > 0)
		s.len = i;
	return s;
}

/*
 * The service name as collectors take it: [A-Za-z0-9._-], at most APPNAME_MAX - 1 bytes, never
 * empty and never only dots (it may become a path component).
 */
static void sanitize_name(char *dst, const char *src, size_t len, bool *truncated)
{
	size_t i, n = len < APPNAME_MAX - 1 ? len : APPNAME_MAX - 1;
	bool dots_only = true;

	if (len > n)
		*truncated = true;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = (isalnum(c) && c < 0x80) || c == '.' || c == '_' || c == '-' ? (char)c
										      : '_';
		if (dst[i] != '.')
			dots_only = false;
	}
	dst[n] = '\0';
	if (!n)
		snprintf(dst, APPNAME_MAX, "ruby");
	else if (dots_only)
		memset(dst, '_', n);
}

/* ---- rules ------------------------------------------------------------------------------- */

/* Checks $N references against the regex's groups; "$$" is a literal '$'. */
static int check_template(const char *what, const char *t, size_t nsub, char *msg, size_t msglen)
{
	const char *p;

	for (p = t; *p; p++) {
		if (*p != '$')
			continue;
		if (p[1] == '$') {
			p++;
		} else if (isdigit((unsigned char)p[1])) {
			size_t g = (size_t)(p[1] - '0');

			if (g > nsub) {
				set_msg(msg, msglen, "rule: $%zu but the regex has %zu group%s", g,
					nsub, nsub == 1 ? "" : "s");
				return -EINVAL;
			}
			p++;
		} else {
			set_msg(msg, msglen,
				"rule: '$' must be followed by a digit or '$' in '%s=%s'", what, t);
			return -EINVAL;
		}
	}
	return 0;
}

static bool label_key_ok(const char *k, size_t len)
{
	size_t i;

	if (!len || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return false;
	for (i = 1; i < len; i++) {
		if (!(isalnum((unsigned char)k[i]) || k[i] == '_'))
			return false;
	}
	return true;
}

static int parse_field(struct rule *r, const char *f, size_t len, char *msg, size_t msglen)
{
	if (len == 6 && memcmp(f, "cgroup", 6) == 0)
		r->field = FIELD_CGROUP;
	else if (len == 7 && memcmp(f, "cmdline", 7) == 0)
		r->field = FIELD_CMDLINE;
	else if (len == 3 && memcmp(f, "exe", 3) == 0)
		r->field = FIELD_EXE;
	else if (len == 4 && memcmp(f, "comm", 4) == 0)
		r->field = FIELD_COMM;
	else if (len >= 4 && memcmp(f, "env:", 4) == 0) {
		if (len == 4 || memchr(f + 4, '=', len - 4)) {
			set_msg(msg, msglen, "rule: bad variable name in '%.*s'", (int)len, f);
			return -EINVAL;
		}
		r->field = FIELD_ENV;
		r->env_name = strndup(f + 4, len - 4);
		if (!r->env_name)
			return -ENOMEM;
	} else {
		set_msg(msg, msglen, "rule: unknown field '%.*s'", (int)len, f);
		return -EINVAL;
	}
	return 0;
}

static int parse_action(struct rule *r, const char *tok, size_t len, char *msg, size_t msglen)
{
	const char *eq = memchr(tok, '=', len);
	size_t klen, i;
	char *value;
	int err;

	if (len == 6 && memcmp(tok, "ignore", 6) == 0) {
		r->ignore = true;
		return 0;
	}
	if (!eq) {
		set_msg(msg, msglen, "rule: action '%.*s' is neither 'ignore' nor KEY=TEMPLATE",
			(int)len, tok);
		return -EINVAL;
	}
	klen = (size_t)(eq - tok);
	if (klen + 1 == len) {
		set_msg(msg, msglen, "rule: empty template in '%.*s'", (int)len, tok);
		return -EINVAL;
	}
	if (klen == 12 && memcmp(tok, "service_name", 12) == 0) {
		set_msg(msg, msglen, "rule: label 'service_name' is reserved, set it with name=");
		return -EINVAL;
	}
	if (!(klen == 4 && memcmp(tok, "name", 4) == 0)) {
		if (!label_key_ok(tok, klen)) {
			set_msg(msg, msglen,
				"rule: bad label name '%.*s' (want [a-zA-Z_][a-zA-Z0-9_]*)",
				(int)klen, tok);
			return -EINVAL;
		}
		if (klen >= APPNAME_LABEL_KEY_MAX) {
			set_msg(msg, msglen, "rule: label name '%.*s' longer than %d bytes",
				(int)klen, tok, APPNAME_LABEL_KEY_MAX - 1);
			return -EINVAL;
		}
		for (i = 0; i < r->nlabels; i++) {
			if (strlen(r->keys[i]) == klen && memcmp(r->keys[i], tok, klen) == 0) {
				set_msg(msg, msglen, "rule: label '%.*s' given twice", (int)klen,
					tok);
				return -EINVAL;
			}
		}
		if (r->nlabels == APPNAME_MAX_LABELS) {
			set_msg(msg, msglen, "rule: more than %d labels", APPNAME_MAX_LABELS);
			return -EINVAL;
		}
	} else if (r->name) {
		set_msg(msg, msglen, "rule: name= given twice");
		return -EINVAL;
	}
	value = strndup(eq + 1, len - klen - 1);
	if (!value)
		return -ENOMEM;
	if (klen == 4 && memcmp(tok, "name", 4) == 0) {
		r->name = value;
		return check_template("name", value, r->re.re_nsub, msg, msglen);
	}
	r->values[r->nlabels] = value;
	r->keys[r->nlabels] = strndup(tok, klen);
	r->nlabels++;
	if (!r->keys[r->nlabels - 1])
		return -ENOMEM;
	err = check_template(r->keys[r->nlabels - 1], value, r->re.re_nsub, msg, msglen);
	return err;
}

static void rule_free(struct rule *r)
{
	size_t i;

	free(r->env_name);
	if (r->re_ok)
		regfree(&r->re);
	free(r->name);
	for (i = 0; i < r->nlabels; i++) {
		free(r->keys[i]);
		free(r->values[i]);
	}
}

/* "FIELD ~ REGEX => ACTIONS"; the separator is the last " => " so a regex may hold "=>". */

/*
 * glibc's regcomp takes time and memory that double with each repetition operator in some
 * patterns (22 "+" in a row: 26 s and 3 GB, found by fuzzing). A rule names a service: a few
 * operators are plenty, so more than APPNAME_MAX_REPEATS is refused before regcomp sees it.
 * Operators inside a bracket expression or escaped are not counted.
 */
static bool too_complex(const char *re)
{
	int repeats = 0, in_bracket = 0;
	const char *p;

	for (p = re; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (in_bracket) {
			if (*p == ']' && in_bracket > 1)
				in_bracket = 0;
			else
				in_bracket++;
			continue;
		}
		if (*p == '[') {
			in_bracket = 1;
			continue;
		}
		if ((*p == '*' || *p == '+' || *p == '?' || *p == '{') &&
		    ++repeats > APPNAME_MAX_REPEATS)
			return true;
	}
	return false;
}

static int rule_compile(struct rule *r, const char *text, char *msg, size_t msglen)
{
	const char *sep = NULL, *p, *f, *fend, *tok;
	char *regex = NULL, ebuf[256];
	size_t nact = 0;
	int err = 0, rc;

	for (p = strstr(text, " => "); p; p = strstr(p + 1, " => "))
		sep = p;
	if (!sep) {
		set_msg(msg, msglen, "rule: missing ' => '");
		err = -EINVAL;
		goto cleanup;
	}
	for (f = text; f < sep && isspace((unsigned char)*f); f++)
		;
	for (p = f; p < sep && !isspace((unsigned char)*p) && *p != '~'; p++)
		;
	if (p == f) {
		set_msg(msg, msglen, "rule: missing field before '~'");
		err = -EINVAL;
		goto cleanup;
	}
	err = parse_field(r, f, (size_t)(p - f), msg, msglen);
	if (err)
		goto cleanup;
	for (fend = p; p < sep && isspace((unsigned char)*p); p++)
		;
	if (p == sep || *p != '~') {
		set_msg(msg, msglen, "rule: missing '~' after '%.*s'", (int)(fend - f), f);
		err = -EINVAL;
		goto cleanup;
	}
	for (p++; p < sep && isspace((unsigned char)*p); p++)
		;
	if (p == sep) {
		set_msg(msg, msglen, "rule: empty regular expression");
		err = -EINVAL;
		goto cleanup;
	}
	regex = strndup(p, (size_t)(sep - p));
	if (!regex) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (too_complex(regex)) {
		set_msg(msg, msglen,
			"rule: regular expression with more than %d repetition operators (*, +, ?, "
			"{}): too costly to compile",
			APPNAME_MAX_REPEATS);
		err = -EINVAL;
		goto cleanup;
	}
	rc = regcomp(&r->re, regex, REG_EXTENDED);
	if (rc) {
		regerror(rc, &r->re, ebuf, sizeof(ebuf));
		set_msg(msg, msglen, "rule: bad regular expression: %s", ebuf);
		err = -EINVAL;
		goto cleanup;
	}
	r->re_ok = true;
	for (p = sep + 4;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		for (tok = p; *p && !isspace((unsigned char)*p); p++)
			;
		nact++;
		err = parse_action(r, tok, (size_t)(p - tok), msg, msglen);
		if (err)
			goto cleanup;
	}
	if (!nact) {
		set_msg(msg, msglen, "rule: no action after ' => '");
		err = -EINVAL;
	} else if (r->ignore && nact > 1) {
		set_msg(msg, msglen, "rule: 'ignore' cannot be combined with other actions");
		err = -EINVAL;
	}
cleanup:
	free(regex);
	return err;
}

struct appname_rules *appname_rules__new(const char *const *texts, size_t n, size_t *bad, char *msg,
					 size_t msglen)
{
	struct appname_rules *r;
	size_t i;
	int err = 0;

	set_msg(msg, msglen, "%s", "");
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = -ENOMEM;
		goto cleanup;
	}
	r->v = calloc(n ? n : 1, sizeof(*r->v));
	if (!r->v) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < n; i++) {
		r->n = i + 1; /* so that __free releases the half-built rule */
		if (!texts[i]) {
			set_msg(msg, msglen, "rule: missing ' => '");
			err = -EINVAL;
		} else {
			err = rule_compile(&r->v[i], texts[i], msg, msglen);
		}
		if (err) {
			if (bad)
				*bad = i;
			if (err == -ENOMEM)
				set_msg(msg, msglen, "rule: out of memory");
			goto cleanup;
		}
		if (r->v[i].field == FIELD_ENV)
			r->needs_env = true;
	}
cleanup:
	if (err) {
		appname_rules__free(r);
		errno = -err;
		return NULL;
	}
	return r;
}

void appname_rules__free(struct appname_rules *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->n; i++)
		rule_free(&r->v[i]);
	free(r->v);
	free(r);
}

/* Expands $0..$9 and $$ from the match; returns whether the result was cut to size. */
static bool expand_template(const char *t, const char *subject, const regmatch_t *m, char *out,
			    size_t size)
{
	struct buf b;
	const char *p, *lit = t;
	size_t g;

	/* the text stays a C string in out, cut at a character (-E2BIG) */
	buf_init_fixed(&b, out, size);
	for (p = t; *p; p++) {
		if (*p != '$')
			continue;
		buf_put_cut(&b, lit, (size_t)(p - lit), size - 1);
		if (p[1] == '$') {
			buf_put_cut(&b, "$", 1, size - 1);
		} else {
			/* references were checked against re_nsub when the rule was compiled */
			g = (size_t)(p[1] - '0');
			if (m[g].rm_so >= 0)
				buf_put_cut(&b, subject + m[g].rm_so,
					    (size_t)(m[g].rm_eo - m[g].rm_so), size - 1);
		}
		p++;
		lit = p + 1;
	}
	buf_put_cut(&b, lit, (size_t)(p - lit), size - 1);
	return b.err == -E2BIG;
}

/* ---- cgroup ------------------------------------------------------------------------------ */

enum cg_kind { CG_V1, CG_V1_SYSTEMD, CG_V2 };

struct cg_line {
	struct span path;
	enum cg_kind kind;
};

static bool controllers_have(struct span c, const char *name)
{
	const char *p = c.p, *end = c.p + c.len, *comma;
	size_t n = strlen(name);

	while (p < end) {
		comma = memchr(p, ',', (size_t)(end - p));
		if (!comma)
			comma = end;
		if ((size_t)(comma - p) == n && memcmp(p, name, n) == 0)
			return true;
		p = comma + 1;
	}
	return false;
}

/* "hierarchy-id:controllers:path" lines; malformed ones are skipped. */
static size_t cgroup_lines(const char *text, struct cg_line *v, size_t max, bool *truncated)
{
	const char *line = text, *nl, *c1, *c2, *end;
	size_t n = 0;

	while (text && *line) {
		nl = strchr(line, '\n');
		end = nl ? nl : line + strlen(line);
		c1 = memchr(line, ':', (size_t)(end - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		if (c2) {
			if (n == max) {
				*truncated = true;
				break;
			}
			v[n].path = (struct span){c2 + 1, (size_t)(end - c2 - 1)};
			if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1)
				v[n].kind = CG_V2;
			else if (controllers_have((struct span){c1 + 1, (size_t)(c2 - c1 - 1)},
						  "name=systemd"))
				v[n].kind = CG_V1_SYSTEMD;
			else
				v[n].kind = CG_V1;
			n++;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return n;
}

/* The `cgroup` rule field: the v2 path, else v1 name=systemd, else the first v1 line. */
static const struct cg_line *cgroup_rule_line(const struct cg_line *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i].kind == CG_V2)
			return &v[i];
	}
	for (i = 0; i < n; i++) {
		if (v[i].kind == CG_V1_SYSTEMD)
			return &v[i];
	}
	return n ? &v[0] : NULL;
}

static bool is_user_manager(const char *c, size_t len)
{
	return len > 13 && memcmp(c, "user@", 5) == 0 && has_suffix(c, len, ".service") &&
	       all_digits(c + 5, len - 5 - 8);
}

/* Whether the rest of a path below a unit holds a container: then the unit is the runtime's. */
static bool container_below(struct span rest)
{
	char id[CONTAINER_ID_MAX], *text;
	bool found;

	if (!rest.len)
		return false;
	text = malloc(rest.len + 5);
	if (!text)
		return false;
	memcpy(text, "0::", 3);
	memcpy(text + 3, rest.p, rest.len);
	memcpy(text + 3 + rest.len, "\n", 2);
	found = container_id_parse(text, id, sizeof(id)) == 0;
	free(text);
	return found;
}

/*
 * The app's unit in one cgroup path: the innermost component that is a .service or a .scope must
 * be a .service (a scope below a service is a session or a transient group started from it, not
 * the service's own processes) and must not be the user manager user@N.service.
 */
static bool unit_of_path(struct span path, char *unit, size_t usize, char *name, size_t nsize)
{
	const char *p = path.p, *end = path.p + path.len, *slash, *last = NULL;
	size_t clen, llen = 0, i, o = 0, base;

	while (p < end) {
		slash = memchr(p, '/', (size_t)(end - p));
		clen = slash ? (size_t)(slash - p) : (size_t)(end - p);
		if (has_suffix(p, clen, ".service") || has_suffix(p, clen, ".scope")) {
			last = p;
			llen = clen;
		}
		p += clen + 1;
	}
	if (!last || !has_suffix(last, llen, ".service"))
		return false;
	if (container_below((struct span){last + llen, (size_t)(end - last - llen)}))
		return false;
	/* systemd prefixes '_' to cgroup names that could clash with kernel files */
	if (last[0] == '_') {
		last++;
		llen--;
	}
	if (llen <= 8 || llen >= usize || is_user_manager(last, llen))
		return false;
	memcpy(unit, last, llen);
	unit[llen] = '\0';
	/* the name: without ".service", systemd's \xNN escapes decoded */
	base = llen - 8;
	for (i = 0; i < base && o + 1 < nsize; i++) {
		int hi = -1, lo = -1;

		if (last[i] == '\\' && i + 3 < base && last[i + 1] == 'x') {
			hi = buf_hexval((unsigned char)last[i + 2]);
			lo = buf_hexval((unsigned char)last[i + 3]);
		}
		if (hi >= 0 && lo >= 0 && (hi || lo)) {
			name[o++] = (char)(hi * 16 + lo);
			i += 3;
		} else {
			name[o++] = last[i];
		}
	}
	name[o] = '\0';
	return o > 0;
}

/* The unit from the first informative path: v2, then name=systemd, then the other v1 lines. */
static bool cgroup_unit(const struct cg_line *v, size_t n, char *unit, size_t usize, char *name,
			size_t nsize)
{
	static const enum cg_kind order[] = {CG_V2, CG_V1_SYSTEMD, CG_V1};
	size_t i, k;

	for (k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		for (i = 0; i < n; i++) {
			if (v[i].kind != order[k] || !v[i].path.len || span_eq(v[i].path, "/"))
				continue;
			/* root paths say nothing; the first path that is not the root decides */
			return unit_of_path(v[i].path, unit, usize, name, nsize);
		}
	}
	return false;
}

/* ---- titles ------------------------------------------------------------------------------ */

/* A version token at *p ("6.4.0", "7.0.0.pre1"): digit first, then [0-9A-Za-z.]. */
static const char *skip_version(const char *p)
{
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isalnum((unsigned char)*p) || *p == '.')
		p++;
	return p;
}

static bool put_name(struct span s, char *name, size_t size)
{
	if (!s.len)
		return false;
	if (s.len >= size)
		s.len = size - 1;
	memcpy(name, s.p, s.len);
	name[s.len] = '\0';
	return true;
}

static struct span trim(struct span s)
{
	while (s.len && isspace((unsigned char)s.p[0])) {
		s.p++;
		s.len--;
	}
	while (s.len && isspace((unsigned char)s.p[s.len - 1]))
		s.len--;
	return s;
}

/*
 * Puma (lib/puma/launcher.rb, cluster/worker.rb):
 *   master  "puma VERSION (BINDS)" + " [TAG]" when a tag is set
 *   worker  "puma: cluster worker N: MASTERPID" + " [TAG]"
 * The tag defaults to the basename of the working directory.
 */
static bool title_puma(const char *t, size_t len, char *name, size_t size)
{
	const char *p, *tag, *end = t + len;

	if (strncmp(t, "puma ", 5) == 0) {
		p = skip_version(t + 5);
		if (!p || strncmp(p, " (", 2) != 0)
			return false;
		tag = strstr(p, ") [");
		if (tag && len && t[len - 1] == ']' && tag + 3 < end - 1)
			return put_name((struct span){tag + 3, (size_t)(end - 1 - tag - 3)}, name,
					size);
		return put_name((struct span){"puma", 4}, name, size);
	}
	if (strncmp(t, "puma: cluster worker ", 21) == 0) {
		p = t + 21;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		if (strncmp(p, ": ", 2) != 0 || !isdigit((unsigned char)p[2]))
			return false;
		for (p += 2; isdigit((unsigned char)*p); p++)
			;
		if (strncmp(p, " [", 2) == 0 && t[len - 1] == ']' && p + 2 < end - 1)
			return put_name((struct span){p + 2, (size_t)(end - 1 - p - 2)}, name,
					size);
		return put_name((struct span){"puma", 4}, name, size);
	}
	return false;
}

/* "[N of M busy]" at p, followed by the end or " stopping". */
static bool sidekiq_busy(const char *p)
{
	unsigned int a, b;
	int n = 0;

	if (sscanf(p, "[%u of %u busy]%n", &a, &b, &n) < 2 || !n)
		return false;
	return p[n] == '\0' || strcmp(p + n, " stopping") == 0;
}

/*
 * Sidekiq (lib/sidekiq/launcher.rb PROCTITLES joined by spaces):
 *   "sidekiq VERSION TAG [N of M busy]" + " stopping"; an empty tag leaves two spaces.
 * The tag defaults to the app directory (the Capistrano app dir for releases/<timestamp>).
 */
static bool title_sidekiq(const char *t, char *name, size_t size)
{
	const char *p, *busy = NULL, *b;

	if (strncmp(t, "sidekiq ", 8) != 0)
		return false;
	p = skip_version(t + 8);
	if (!p || *p != ' ')
		return false;
	p++;
	for (b = strchr(p, '['); b; b = strchr(b + 1, '[')) {
		if (sidekiq_busy(b))
			busy = b;
	}
	if (!busy)
		return false;
	if (!put_name(trim((struct span){p, (size_t)(busy - p)}), name, size))
		put_name((struct span){"sidekiq", 7}, name, size);
	return true;
}

/*
 * Unicorn (lib/unicorn/http_server.rb proc_name): basename of its own $0, the role ("master",
 * "master (old)", "worker[N]"), then its original arguments. It sets no app name.
 */
static bool title_unicorn(const char *t, char *name, size_t size)
{
	const char *p;

	if (strncmp(t, "unicorn ", 8) == 0)
		p = t + 8;
	else if (strncmp(t, "unicorn_rails ", 14) == 0)
		p = t + 14;
	else
		return false;
	if (strncmp(p, "master", 6) == 0 && (p[6] == '\0' || p[6] == ' ')) {
		/* "master" or "master (old)" */
	} else if (strncmp(p, "worker[", 7) == 0 && isdigit((unsigned char)p[7])) {
		for (p += 7; isdigit((unsigned char)*p); p++)
			;
		if (*p != ']' || (p[1] != '\0' && p[1] != ' '))
			return false;
	} else {
		return false;
	}
	return put_name((struct span){"unicorn", 7}, name, size);
}

/*
 * Resque (lib/resque/worker.rb procline): "$RESQUE_PROCLINE_PREFIX" "resque-VERSION: STATUS", and
 * "resque: Starting" before the first procline. The prefix is the static identifier users set to
 * tell their workers apart, so it names the app when present.
 */
static bool title_resque(const char *t, char *name, size_t size)
{
	const char *p, *v;
	struct span prefix;

	if (strncmp(t, "resque: ", 8) == 0)
		return put_name((struct span){"resque", 6}, name, size);
	for (p = strstr(t, "resque-"); p; p = strstr(p + 1, "resque-")) {
		v = skip_version(p + 7);
		if (v && strncmp(v, ": ", 2) == 0)
			break;
	}
	if (!p)
		return false;
	prefix = trim((struct span){t, (size_t)(p - t)});
	while (prefix.len && strchr(":-_/", prefix.p[prefix.len - 1]))
		prefix.len--;
	if (!put_name(trim(prefix), name, size))
		put_name((struct span){"resque", 6}, name, size);
	return true;
}

/* The title is the first argv entry (len bytes of t), copied so the parsers see it alone. */
static bool title_name(const char *t, size_t len, char *name, size_t size)
{
	char *first;
	bool found;

	if (!len)
		return false;
	first = strndup(t, len);
	if (!first)
		return false;
	found = title_puma(first, len, name, size) || title_sidekiq(first, name, size) ||
		title_unicorn(first, name, size) || title_resque(first, name, size);
	free(first);
	return found;
}

/* ---- script ------------------------------------------------------------------------------ */

/* Long options of ruby that take the next argument when written without '='. */
static bool ruby_long_takes_arg(struct span a)
{
	static const char *const with_arg[] = {"--enable",
					       "--disable",
					       "--encoding",
					       "--internal-encoding",
					       "--external-encoding",
					       "--source-encoding",
					       "--parser",
					       "--dump",
					       "--backtrace-limit",
					       "--crash-report"};
	size_t i;

	for (i = 0; i < sizeof(with_arg) / sizeof(with_arg[0]); i++) {
		if (span_eq(a, with_arg[i]))
			return true;
	}
	return false;
}

/*
 * Skips ruby's own options from args[i]; returns the index of the script. *code is set when -e
 * gave the program (then there is no script). Follows ruby.c: -e -r -I -C -X -E take the rest of
 * the word or the next argument; -i -x -F -W -K -0 -T only an attached value; "--" ends options.
 */
static size_t ruby_skip_options(const struct span *args, size_t n, size_t i, bool *code)
{
	const char *s, *end;
	bool next;

	while (i < n) {
		struct span a = args[i];

		if (a.len < 2 || a.p[0] != '-')
			break;
		if (span_eq(a, "--"))
			return i + 1;
		next = false;
		if (a.p[1] == '-') {
			next = ruby_long_takes_arg(a);
		} else {
			for (s = a.p + 1, end = a.p + a.len; s < end; s++) {
				if (strchr("erICXE", *s)) {
					if (*s == 'e')
						*code = true;
					next = s + 1 == end;
					break;
				}
				if (strchr("ixFWK0T", *s))
					break;
			}
		}
		i += next ? 2 : 1;
	}
	return i;
}

/*
 * Step 5. Returns true with a specific name, false for the bare fallback (ruby -e, a script on
 * stdin, nothing known). "bundle exec CMD" names CMD: bundler only launches it.
 */
static bool script_name(const struct span *args, size_t n, const char *exe, const char *comm,
			char *name, size_t size)
{
	struct span b;
	size_t i = 0, depth;
	bool code = false;

	if (!n) {
		b = span_basename((struct span){exe ? exe : "", exe ? strlen(exe) : 0});
		if (!b.len)
			b = (struct span){comm ? comm : "", comm ? strlen(comm) : 0};
		if (!b.len || ruby_like(b))
			return false;
		return put_name(strip_version(b), name, size);
	}
	for (depth = 0; depth < 4 && i < n; depth++) {
		b = span_basename(args[i]);
		if (ruby_like(b)) {
			i = ruby_skip_options(args, n, i + 1, &code);
			if (code || i >= n || span_eq(args[i], "-"))
				return false;
			b = span_basename(args[i]);
		}
		if ((span_eq(b, "bundle") || span_eq(b, "bundler")) && i + 1 < n &&
		    span_eq(args[i + 1], "exec")) {
			for (i += 2; i < n && args[i].len && args[i].p[0] == '-'; i++)
				;
			continue;
		}
		if (has_suffix(b.p, b.len, ".rb") && b.len > 3)
			b.len -= 3;
		return put_name(strip_version(b), name, size);
	}
	return false;
}

/*
 * argv from /proc/PID/cmdline. Trailing empty entries are dropped: Ruby pads a shorter $0 title
 * with NULs. A single entry with spaces is a title set through $0 and is split into words.
 */
static size_t split_args(const char *cmd, size_t len, struct span *args, size_t max)
{
	const char *p = cmd, *end = cmd + len, *nul;
	size_t n = 0;

	while (len && end > cmd && end[-1] == '\0')
		end--;
	while (p < end && n < max) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			nul = end;
		args[n++] = (struct span){p, (size_t)(nul - p)};
		p = nul + 1;
	}
	if (n == 1 && memchr(args[0].p, ' ', args[0].len)) {
		struct span whole = args[0];

		n = 0;
		p = whole.p;
		end = whole.p + whole.len;
		while (p < end && n < max) {
			while (p < end && *p == ' ')
				p++;
			if (p == end)
				break;
			nul = memchr(p, ' ', (size_t)(end - p));
			if (!nul)
				nul = end;
			args[n++] = (struct span){p, (size_t)(nul - p)};
			p = nul;
		}
	}
	return n;
}

/* argv joined by single spaces, trailing NULs dropped: the process title. */
static char *join_cmdline(const char *cmd, size_t len)
{
	char *s;
	size_t i;

	while (len && cmd[len - 1] == '\0')
		len--;
	s = malloc(len + 1);
	if (!s)
		return NULL;
	for (i = 0; i < len; i++)
		s[i] = cmd[i] ? cmd[i] : ' ';
	s[len] = '\0';
	return s;
}

/* ---- decision ---------------------------------------------------------------------------- */

/* The value of NAME in a NUL-separated environment block, strdup'd; NULL when absent. */
static char *env_value(const char *env, size_t len, const char *name, int *err)
{
	const char *p, *end, *nul;
	size_t nlen = strlen(name);
	char *v;

	if (!env)
		return NULL;
	for (p = env, end = env + len; p < end;) {
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul)
			nul = end;
		if ((size_t)(nul - p) > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=') {
			v = strndup(p + nlen + 1, (size_t)(nul - p - nlen - 1));
			if (!v)
				*err = -ENOMEM;
			return v;
		}
		p = nul + 1;
	}
	return NULL;
}

/* Control characters would corrupt the line protocols labels travel in. */
static void clean_label(char *v)
{
	for (; *v; v++) {
		if ((unsigned char)*v < 0x20 || *v == 0x7f)
			*v = '_';
	}
}

/* Step 1: the first rule whose regex matches decides. 1 when one matched, 0 if none, -errno. */
static int apply_rules(const struct appname_rules *rules, const struct appname_input *in,
		       const char *cgroup_path, const char *title, struct app_identity *out,
		       char *name, size_t nsize)
{
	regmatch_t m[TEMPLATE_GROUPS];
	const struct rule *r;
	char *owned = NULL;
	const char *subject;
	size_t i, k;
	int err = 0;

	for (i = 0; i < rules->n; i++) {
		r = &rules->v[i];
		switch (r->field) {
		case FIELD_CGROUP:
			subject = cgroup_path;
			break;
		case FIELD_CMDLINE:
			subject = title;
			break;
		case FIELD_EXE:
			subject = in->exe ? in->exe : "";
			break;
		case FIELD_COMM:
			subject = in->comm ? in->comm : "";
			break;
		default:
			owned = env_value(in->environ, in->environ ? in->environ_len : 0,
					  r->env_name, &err);
			if (err)
				return err;
			subject = owned;
			break;
		}
		if (subject && regexec(&r->re, subject, TEMPLATE_GROUPS, m, 0) == 0) {
			out->rule = (int)i;
			out->ignore = r->ignore;
			for (k = 0; k < r->nlabels; k++) {
				snprintf(out->labels[k].key, sizeof(out->labels[k].key), "%s",
					 r->keys[k]);
				if (expand_template(r->values[k], subject, m, out->labels[k].value,
						    sizeof(out->labels[k].value)))
					out->truncated = true;
				clean_label(out->labels[k].value);
			}
			out->nlabels = r->nlabels;
			name[0] = '\0';
			/* the name is cut by sanitize_name, which counts it */
			if (r->name && expand_template(r->name, subject, m, name, nsize))
				out->truncated = true;
			free(owned);
			return 1;
		}
		free(owned);
		owned = NULL;
	}
	return 0;
}

int appname_identify_from(const struct appname_input *in, const struct appname_rules *rules,
			  struct app_identity *out)
{
	struct cg_line lines[CGROUP_LINES_MAX];
	const struct cg_line *rl;
	struct span args[ARGS_MAX];
	char raw[APPNAME_MAX + 1], unit_name[256], tname[APPNAME_MAX + 1];
	char *title = NULL, *cgroup_path = NULL;
	const char *chosen = NULL, *source = NULL;
	size_t nlines, nargs;
	bool have_unit, have_title, have_script;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->rule = -1;
	title = join_cmdline(in->cmdline ? in->cmdline : "", in->cmdline ? in->cmdline_len : 0);
	if (!title) {
		err = -ENOMEM;
		goto cleanup;
	}
	nargs = split_args(in->cmdline ? in->cmdline : "", in->cmdline ? in->cmdline_len : 0, args,
			   ARGS_MAX);
	nlines = cgroup_lines(in->cgroup_text, lines, CGROUP_LINES_MAX, &out->truncated);
	if (in->cgroup_text &&
	    container_id_parse(in->cgroup_text, out->container_id, sizeof(out->container_id)))
		out->container_id[0] = '\0';
	have_unit = cgroup_unit(lines, nlines, out->unit, sizeof(out->unit), unit_name,
				sizeof(unit_name));
	if (!have_unit)
		out->unit[0] = '\0';

	raw[0] = '\0';
	if (rules && rules->n) {
		rl = cgroup_rule_line(lines, nlines);
		cgroup_path = rl ? strndup(rl->path.p, rl->path.len) : strdup("");
		if (!cgroup_path) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = apply_rules(rules, in, cgroup_path, title, out, raw, sizeof(raw));
		if (err < 0)
			goto cleanup;
		err = 0;
		/* a rule that names nothing (labels only, ignore, an empty expansion) goes on */
		if (raw[0]) {
			chosen = raw;
			source = "rule";
		}
	}
	/* what the app says it is, through OpenTelemetry (procctx.h): after the rules (which can
	 * override anything), before what is guessed from outside it */
	if (!chosen && in->otel_service && in->otel_service[0]) {
		chosen = in->otel_service;
		source = "otel";
	}
	if (!chosen && have_unit) {
		chosen = unit_name;
		source = "systemd";
	}
	if (!chosen) {
		/* programs set their title through $0, which Ruby writes as one argv entry */
		have_title = title_name(
			title,
			strnlen(in->cmdline ? in->cmdline : "", in->cmdline ? in->cmdline_len : 0),
			tname, sizeof(tname));
		have_script = !have_title &&
			      script_name(args, nargs, in->exe, in->comm, tname, sizeof(tname));
		if (have_title || have_script) {
			/* the app inside a container names it better than the container id: it
			 * stays the same across deploys; the id remains a field of its own */
			chosen = tname;
			source = have_title ? "title" : "script";
		} else if (out->container_id[0]) {
			snprintf(tname, sizeof(tname), "container-%.*s",
				 strlen(out->container_id) == 64 ? 12 : APPNAME_MAX,
				 out->container_id);
			chosen = tname;
			source = "container";
		} else {
			chosen = "ruby";
			source = "script";
		}
	}
	sanitize_name(out->service, chosen, strlen(chosen), &out->truncated);
	out->source = source;
cleanup:
	free(title);
	free(cgroup_path);
	return err;
}

/* ---- /proc ------------------------------------------------------------------------------- */

/* Reads at most max bytes of /proc/PID/file, NUL-terminated; sets *cut when more was there. */
static int read_proc(pid_t pid, const char *file, size_t max, char **buf, size_t *len, bool *cut)
{
	char path[64];
	uint8_t *b = NULL;
	int fd, err;

	*buf = NULL;
	*len = 0;
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = fileio_read_fd(fd, 4096, max, &b, len, cut);
	close(fd);
	if (!err)
		*buf = (char *)b;
	return err;
}

static bool gone(int err)
{
	return err == -ENOENT || err == -ESRCH;
}

int appname_identify(pid_t pid, const struct appname_rules *rules, struct app_identity *out)
{
	return appname_identify_with(pid, rules, NULL, out);
}

int appname_identify_with(pid_t pid, const struct appname_rules *rules, const char *otel_service,
			  struct app_identity *out)
{
	struct appname_input in = {0};
	char *cgroup = NULL, *cmdline = NULL, *comm = NULL, *environ_buf = NULL;
	char path[64], exe[PATH_MAX];
	size_t len, clen = 0, elen = 0;
	bool cut = false;
	ssize_t n;
	int err, env_err = 0;

	err = read_proc(pid, "cgroup", CGROUP_READ_MAX, &cgroup, &len, &cut);
	if (err)
		goto cleanup;
	err = read_proc(pid, "cmdline", CMDLINE_READ_MAX, &cmdline, &clen, &cut);
	if (err)
		goto cleanup;
	/* comm and exe are optional (kernel threads have no exe, unprivileged readers may not
	 * resolve it), unless the process is gone */
	err = read_proc(pid, "comm", COMM_READ_MAX, &comm, &len, &cut);
	if (gone(err))
		goto cleanup;
	if (comm)
		comm[strcspn(comm, "\n")] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0 && (errno == ESRCH)) {
		err = -ESRCH;
		goto cleanup;
	}
	exe[n < 0 ? 0 : n] = '\0';
	/* a binary replaced by a deploy still names the same program */
	if (n > 10 && strcmp(exe + n - 10, " (deleted)") == 0)
		exe[n - 10] = '\0';
	if (rules && rules->needs_env) {
		env_err = read_proc(pid, "environ", ENVIRON_READ_MAX, &environ_buf, &elen, &cut);
		if (gone(env_err)) {
			err = env_err;
			goto cleanup;
		}
	}
	in.cgroup_text = cgroup;
	in.cmdline = cmdline;
	in.cmdline_len = clen;
	in.exe = exe;
	in.comm = comm ? comm : "";
	in.environ = environ_buf;
	in.environ_len = elen;
	in.otel_service = otel_service;
	err = appname_identify_from(&in, rules, out);
	if (!err) {
		out->environ_err = env_err;
		out->truncated = out->truncated || cut;
	}
cleanup:
	free(cgroup);
	free(cmdline);
	free(comm);
	free(environ_buf);
	return err;
}
