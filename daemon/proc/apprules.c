// SPDX-License-Identifier: GPL-2.0-only
/*
 * apprules.c - the configuration's naming rules ("FIELD ~ REGEX => ACTIONS", apprules.h): parsed
 * and compiled once, matched against a process's cgroup path, title, exe, comm or environment,
 * their templates expanded from the match. docs/service-names.md describes them.
 */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "proc/appname.h"
#include "proc/apprules.h"

/* $0..$9 in templates. */
#define TEMPLATE_GROUPS 10

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

struct apprules {
	struct rule *v;
	size_t n;
	bool needs_env;
};

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

struct apprules *apprules__new(const char *const *texts, size_t n, size_t *bad, char *msg,
			       size_t msglen)
{
	struct apprules *r;
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
		apprules__free(r);
		errno = -err;
		return NULL;
	}
	return r;
}

void apprules__free(struct apprules *r)
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

size_t apprules_count(const struct apprules *r)
{
	return r->n;
}

bool apprules_needs_env(const struct apprules *r)
{
	return r->needs_env;
}

int apprules_apply(const struct apprules *rules, const struct appname_input *in,
		   const char *cgroup_path, const char *title, struct app_identity *out, char *name,
		   size_t nsize)
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
