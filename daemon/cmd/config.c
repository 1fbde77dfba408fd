// SPDX-License-Identifier: GPL-2.0-only
/*
 * config.c - the configuration: command-line flags over a key = value file, strict value checks.
 *
 * Every key and flag is an entry of the one table in config_keys.c: the option parser is built
 * from it, its defaults are applied through the setter below, and its type and bounds check the
 * values (with the same words in every error). Order: a first pass over argv finds the mode
 * (--oneshot), the file (--config), --help and unknown options; then the mode's defaults, then
 * the file, then a second pass applies the flags over it. Both the file's keys and the flags go
 * through one setter (key_set), so a key means the same in both places and its errors read the
 * same. No state outlives a call: the service calls config_parse() again on SIGHUP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cmd/config.h"
#include "cmd/config_doc.h"
#include "cmd/config_keys.h"
#include "lib/lines.h"
#include "lib/log.h"
#include "lib/safepath.h"
#include "lib/text.h"
#include "output/protocol.h"
#include "output/upload.h"
#include "rubyprof.h"
#include "view/view.h"

/* getopt values: a key's id above every char (a short option is its own char). */
enum { OPT_KEY = 256 };

/* getopt's tables, from the key table: long options (one per entry) and the short ones. */
struct opts {
	struct option longs[NKEYS + 1];
	char names[NKEYS][40]; /* the flags: "--frequency" (getopt takes them from +2) */
	char shorts[2 * NKEYS + 2];
};

static void build_opts(struct opts *o)
{
	size_t i, n = 0;

	memset(o, 0, sizeof(*o));
	/* "+": stop at the first non-option, so that a COMMAND's own options stay its own. */
	o->shorts[n++] = '+';
	for (i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];

		config_keys_flag((enum config_key_id)i, o->names[i], sizeof(o->names[i]));
		o->longs[i].name = o->names[i] + 2;
		o->longs[i].has_arg = !k->arg		    ? no_argument
				      : k->flags & K_OPTARG ? optional_argument
							    : required_argument;
		o->longs[i].val = k->short_opt ? k->short_opt : OPT_KEY + (int)i;
		if (k->short_opt) {
			o->shorts[n++] = k->short_opt;
			if (k->arg)
				o->shorts[n++] = ':';
		}
	}
}

/* The key a getopt value stands for; -1 for none. */
static int opt_key(int c)
{
	size_t i;

	if (c >= OPT_KEY && c < OPT_KEY + NKEYS)
		return c - OPT_KEY;
	for (i = 0; i < NKEYS; i++)
		if (c > 0 && config_keys[i].short_opt == c)
			return (int)i;
	return -1;
}

/* ---- values ------------------------------------------------------------------------------- */

/* Digits only: strtoul alone would take blanks, signs and wrap "-5" around. */
static bool all_digits(const char *s, size_t n)
{
	size_t i;

	if (!n)
		return false;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	uint64_t v;

	if (text_parse_u64(s, min, max, &v))
		return -EINVAL;
	*out = (unsigned long)v;
	return 0;
}

/* --duration, as it always was: anything strtod takes that is finite, positive, at most 31 days. */
static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > 31 * 24 * 3600.0)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * A plain decimal ("2.5", "10", "0.5"): no sign, exponent, hex, "inf" or blanks, which strtod
 * would all take. n: how many bytes of s to read.
 */
static int parse_decimal(const char *s, size_t n, double *out)
{
	char buf[64];
	size_t i, digits = 0, dots = 0;
	char *end;

	if (!n || n >= sizeof(buf))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] == '.')
			dots++;
		else if (s[i] >= '0' && s[i] <= '9')
			digits++;
		else
			return -EINVAL;
	}
	if (!digits || dots > 1)
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	*out = strtod(buf, &end);
	if (errno || *end || !isfinite(*out))
		return -EINVAL;
	return 0;
}

/* A byte count with an optional K, M or G (powers of 1024). */
static int parse_size(const char *s, uint64_t *out)
{
	size_t n = strlen(s);
	unsigned int shift = 0;
	unsigned long long v;
	char buf[32];

	if (n && (s[n - 1] == 'K' || s[n - 1] == 'M' || s[n - 1] == 'G')) {
		shift = s[n - 1] == 'K' ? 10 : s[n - 1] == 'M' ? 20 : 30;
		n--;
	}
	if (!all_digits(s, n) || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, NULL, 10);
	if (errno || v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

/* A duration: a decimal with an optional s, m, h or d; a bare number is seconds. */
static int parse_duration(const char *s, double *out)
{
	size_t n = strlen(s);
	double unit = 1, v;

	if (n) {
		switch (s[n - 1]) {
		case 's':
			n--;
			break;
		case 'm':
			unit = 60;
			n--;
			break;
		case 'h':
			unit = 3600;
			n--;
			break;
		case 'd':
			unit = 24 * 3600;
			n--;
			break;
		}
	}
	if (parse_decimal(s, n, &v))
		return -EINVAL;
	*out = v * unit;
	return 0;
}

/* "A.B.C.D:PORT" or "[V6]:PORT", numeric addresses only: the endpoint binds, it does not resolve. */
static int check_address(const char *s, char *err, size_t errlen)
{
	const char *colon, *host = s;
	unsigned long port;
	size_t hostlen;
	char buf[64];
	char addr[16];
	int family = AF_INET;

	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			goto bad;
		host = s + 1;
		hostlen = (size_t)(close - host);
		colon = close + 1;
		family = AF_INET6;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			goto bad;
		hostlen = (size_t)(colon - s);
	}
	if (!hostlen || hostlen >= sizeof(buf))
		goto bad;
	memcpy(buf, host, hostlen);
	buf[hostlen] = '\0';
	if (inet_pton(family, buf, addr) != 1)
		goto bad;
	if (parse_uint(colon + 1, 1, 65535, &port)) {
		snprintf(err, errlen, "'%s': the port must be a number from 1 to 65535", s);
		return -EINVAL;
	}
	return 0;
bad:
	snprintf(err, errlen,
		 "'%s' is not ADDRESS:PORT (an IPv4 address as in 127.0.0.1:9464, or an IPv6 one "
		 "as in [::1]:9464)",
		 s);
	return -EINVAL;
}

static bool is_label_key(const char *s, size_t n)
{
	size_t i;

	if (!n || n >= sizeof(((struct config_label *)0)->key))
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		      (i && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* ---- setting a key, from the file or a flag ------------------------------------------------ */

/* A text key's value into dst when it fits and holds no control character nor one of bad; else
 * "'VAL' is not WHAT (at most N bytes, RULE)". */
static int set_text(char *dst, size_t size, const char *val, const char *bad, const char *what,
		    const char *rule, char *err, size_t errlen)
{
	size_t n = strlen(val);

	if (n >= size || strpbrk(val, bad) || has_control(val)) {
		snprintf(err, errlen, "'%s' is not %s (at most %zu bytes, %s)", val, what, size - 1,
			 rule);
		return -EINVAL;
	}
	memcpy(dst, val, n + 1);
	return 0;
}

/*
 * http:// or https://, a host, no blanks or control characters, and no user:password@ (it
 * would end up in the log: the credentials belong in upload_basic_auth_file).
 */
static int check_url(const char *val, char *err, size_t errlen)
{
	const char *host, *end;
	size_t n = strlen(val);

	if (n >= CONFIG_MAX_URL) {
		snprintf(err, errlen, "'%s' is longer than %d bytes", val, CONFIG_MAX_URL - 1);
		return -EINVAL;
	}
	if (!strncmp(val, "http://", 7))
		host = val + 7;
	else if (!strncmp(val, "https://", 8))
		host = val + 8;
	else {
		snprintf(err, errlen, "'%s' is not an http:// or https:// URL", val);
		return -EINVAL;
	}
	end = host + strcspn(host, "/?#");
	if (end == host || has_control(val) || strpbrk(val, " \t")) {
		snprintf(err, errlen, "'%s' is not an http:// or https:// URL with a host", val);
		return -EINVAL;
	}
	if (memchr(host, '@', (size_t)(end - host))) {
		snprintf(err, errlen,
			 "credentials in the URL would be logged: put 'user:password' in "
			 "upload_basic_auth_file");
		return -EINVAL;
	}
	return 0;
}

/*
 * An absolute path that can be opened for reading now (a secret or CA file), that no one but
 * root or the daemon's user can change (safepath.h): its text decides what is sent, and where.
 */
static int check_readable(const char *val, char *dst, size_t dstlen, char *err, size_t errlen)
{
	char why[CONFIG_MAX_LINE];
	size_t n = strlen(val);
	int fd, r;

	if (!n) {
		dst[0] = '\0'; /* none */
		return 0;
	}
	if (val[0] != '/' || n >= dstlen || has_control(val)) {
		snprintf(err, errlen, "'%s' is not an absolute path", val);
		return -EINVAL;
	}
	r = safepath_check(val, why, sizeof(why));
	if (r == -EPERM) {
		snprintf(err, errlen, "refused: %s", why);
		return -EINVAL;
	}
	fd = r ? -1 : open(val, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot read '%s': %s", val, strerror(r ? -r : errno));
		return -EINVAL;
	}
	close(fd);
	memcpy(dst, val, n + 1);
	return 0;
}

struct parse_ctx {
	struct config *cfg;
	bool from_flags;
	size_t nfile_labels; /* labels[0..nfile_labels) came from the file: a --label replaces them */
	size_t nfile_rules;   /* rules[0..nfile_rules) came from the file */
	size_t nfile_headers; /* upload_headers[0..nfile_headers) came from the file */
	char err[CONFIG_MAX_LINE + 256];
};

/* where: "FILE:LINE" (of config_file), else the flag (or "default") as it is. */
static void set_at(struct config_at *at, const char *where)
{
	const char *colon = strrchr(where, ':');

	at->line = where[0] != '-' && colon ? (unsigned int)strtoul(colon + 1, NULL, 10) : 0;
	snprintf(at->flag, sizeof(at->flag), "%s", at->line ? "" : where);
}

static int set_label(struct parse_ctx *ctx, const char *val, const char *where)
{
	static const char *const reserved[] = {"service_name", "__name__"};
	struct config *cfg = ctx->cfg;
	struct config_label *l = NULL;
	const char *eq = strchr(val, '=');
	size_t klen, vlen, i;

	if (!eq) {
		snprintf(ctx->err, sizeof(ctx->err), "'%s' is not KEY=VALUE", val);
		return -EINVAL;
	}
	klen = (size_t)(eq - val);
	vlen = strlen(eq + 1);
	if (!is_label_key(val, klen)) {
		snprintf(ctx->err, sizeof(ctx->err),
			 "'%.*s' is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, at most %zu bytes)",
			 (int)klen, val, sizeof(l->key) - 1);
		return -EINVAL;
	}
	for (i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		if (strlen(reserved[i]) == klen && !memcmp(val, reserved[i], klen)) {
			snprintf(ctx->err, sizeof(ctx->err), "the label name '%s' is reserved",
				 reserved[i]);
			return -EINVAL;
		}
	}
	if (!vlen || vlen >= sizeof(l->value) || has_control(eq + 1)) {
		snprintf(ctx->err, sizeof(ctx->err),
			 "label '%.*s': the value must be 1 to %zu bytes without control "
			 "characters",
			 (int)klen, val, sizeof(l->value) - 1);
		return -EINVAL;
	}
	for (i = 0; i < cfg->nlabels; i++) {
		if (strlen(cfg->labels[i].key) != klen || memcmp(cfg->labels[i].key, val, klen))
			continue;
		/* a flag wins over the file; twice in one place is a mistake */
		if (!ctx->from_flags || i >= ctx->nfile_labels) {
			snprintf(ctx->err, sizeof(ctx->err), "label '%.*s' is given twice",
				 (int)klen, val);
			return -EINVAL;
		}
		l = &cfg->labels[i];
		break;
	}
	if (!l) {
		if (cfg->nlabels == CONFIG_MAX_LABELS) {
			snprintf(ctx->err, sizeof(ctx->err), "more than %d labels (file and flags)",
				 CONFIG_MAX_LABELS);
			return -E2BIG;
		}
		l = &cfg->labels[cfg->nlabels++];
	}
	memcpy(l->key, val, klen);
	l->key[klen] = '\0';
	memcpy(l->value, eq + 1, vlen + 1);
	set_at(&l->at, where);
	return 0;
}

static int set_rule(struct parse_ctx *ctx, const char *val, const char *where)
{
	struct config *cfg = ctx->cfg;
	struct config_rule *r;
	size_t n = strlen(val);

	if (!n || n >= sizeof(r->text)) {
		snprintf(ctx->err, sizeof(ctx->err), "a rule must be 1 to %zu bytes",
			 sizeof(r->text) - 1);
		return -EINVAL;
	}
	if (cfg->nrules == CONFIG_MAX_RULES) {
		snprintf(ctx->err, sizeof(ctx->err), "more than %d rules (file and flags)",
			 CONFIG_MAX_RULES);
		return -E2BIG;
	}
	r = &cfg->rules[cfg->nrules++];
	memcpy(r->text, val, n + 1);
	snprintf(r->where, sizeof(r->where), "%s", where);
	return 0;
}

static int set_upload_header(struct parse_ctx *ctx, const char *val, const char *where)
{
	struct config *cfg = ctx->cfg;
	size_t n = strlen(val), namelen, i;
	char *h;

	if (n >= CONFIG_MAX_UPLOAD_HEADER || !upload_header_valid(val)) {
		snprintf(ctx->err, sizeof(ctx->err),
			 "'%s' is not 'Name: value' (a header name, at most %d bytes, no control "
			 "characters)",
			 val, CONFIG_MAX_UPLOAD_HEADER - 1);
		return -EINVAL;
	}
	namelen = (size_t)(strchr(val, ':') - val);
	for (i = 0; i < cfg->nupload_headers; i++) {
		const char *o = cfg->upload_headers[i];

		if (strncasecmp(o, val, namelen) || o[namelen] != ':')
			continue;
		/* a flag wins over the file; twice in one place is a mistake */
		if (!ctx->from_flags || i >= ctx->nfile_headers) {
			snprintf(ctx->err, sizeof(ctx->err), "header '%.*s' is given twice",
				 (int)namelen, val);
			return -EINVAL;
		}
		break;
	}
	if (i == cfg->nupload_headers) {
		if (cfg->nupload_headers == CONFIG_MAX_UPLOAD_HEADERS) {
			snprintf(ctx->err, sizeof(ctx->err),
				 "more than %d headers (file and flags)",
				 CONFIG_MAX_UPLOAD_HEADERS);
			return -E2BIG;
		}
		cfg->nupload_headers++;
	}
	h = cfg->upload_headers[i];
	memcpy(h, val, n + 1);
	set_at(&cfg->upload_headers_at[i], where);
	return 0;
}

/* native_processes: "ruby", "all", or a comma-separated list of process ids. 0 or -errno. */
static int set_native_processes(struct config *cfg, const char *val, char *err, size_t errlen)
{
	char buf[64];
	const char *p = val;
	unsigned long v;
	size_t len;

	cfg->nnative_pids = 0;
	if (strcmp(val, "ruby") == 0 || strcmp(val, "all") == 0) {
		cfg->native_procs = strcmp(val, "all") == 0 ? RP_NATIVE_ALL : RP_NATIVE_RUBY;
		return 0;
	}
	for (;;) {
		len = strcspn(p, ",");
		if (!len || len >= sizeof(buf)) {
			snprintf(err, errlen,
				 "'%s' is not ruby, all or a list of process ids (1,2,3)", val);
			return -EINVAL;
		}
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (parse_uint(buf, 1, INT_MAX, &v)) {
			snprintf(err, errlen, "'%s' in '%s' is not a process id", buf, val);
			return -EINVAL;
		}
		if (cfg->nnative_pids == CONFIG_MAX_PIDS) {
			snprintf(err, errlen, "more than %d process ids", CONFIG_MAX_PIDS);
			return -E2BIG;
		}
		cfg->native_pids[cfg->nnative_pids++] = (uint32_t)v;
		if (!p[len])
			break;
		p += len + 1;
	}
	cfg->native_procs = RP_NATIVE_LISTED;
	return 0;
}

/*
 * The checks a key's type and bounds make (config_keys.c), with one wording per type. Fills the
 * value that fits the type: v->u (KT_UINT, KT_ENUM: the value's index), v->d (KT_SECONDS,
 * KT_DURATION) or v->size (KT_SIZE). KT_TEXT and KT_SWITCH: nothing to check here.
 */
union key_value {
	unsigned long u;
	double d;
	uint64_t size;
};

static int key_check(const struct config_key *k, const char *val, union key_value *v, char *err,
		     size_t errlen)
{
	char lo[32], hi[32], list[256];
	size_t i, n = 0;

	switch (k->type) {
	case KT_UINT:
		if (parse_uint(val, (unsigned long)k->min, (unsigned long)k->max, &v->u))
			break;
		return 0;
	case KT_SECONDS:
		if (!parse_decimal(val, strlen(val), &v->d) &&
		    ((v->d >= k->min && v->d <= k->max) || (k->zero && v->d == 0)))
			return 0;
		break;
	case KT_SIZE:
		if (!parse_size(val, &v->size) && v->size >= k->min && v->size <= k->max)
			return 0;
		break;
	case KT_DURATION:
		if (!parse_duration(val, &v->d) &&
		    ((v->d >= k->min && v->d <= k->max) || (k->zero && v->d == 0)))
			return 0;
		break;
	case KT_ENUM:
		for (i = 0; k->values[i]; i++) {
			if (!strcmp(val, k->values[i])) {
				v->u = i;
				return 0;
			}
		}
		break;
	case KT_TEXT:
	case KT_SWITCH:
		return 0;
	}
	switch (k->type) {
	case KT_UINT:
		snprintf(err, errlen, "'%s' is not a number from %.0f to %.0f", val, k->min,
			 k->max);
		break;
	case KT_SECONDS:
		if (k->zero)
			snprintf(err, errlen,
				 "'%s' is not 0 (%s) or a number of seconds from %g to %g", val,
				 k->zero, k->min, k->max);
		else
			snprintf(err, errlen, "'%s' is not a number of seconds from %g to %g", val,
				 k->min, k->max);
		break;
	case KT_SIZE:
		snprintf(err, errlen,
			 "'%s' is not a size from %s to %s (bytes, or a number with the suffix %s)",
			 val, config_doc_size_text(k->min, lo, sizeof(lo)),
			 config_doc_size_text(k->max, hi, sizeof(hi)),
			 k->max >= (1 << 30)   ? "K, M or G"
			 : k->max >= (1 << 20) ? "K or M"
					       : "K");
		break;
	case KT_DURATION:
		snprintf(err, errlen,
			 "'%s' is not %sa duration from %s to %s (a number with the suffix s, m, h "
			 "or d)",
			 val, k->zero ? "0 or " : "",
			 config_doc_duration_text(k->min, lo, sizeof(lo)),
			 config_doc_duration_text(k->max, hi, sizeof(hi)));
		break;
	default: /* KT_ENUM: "a or b", "a, b or c", or "one of a, b, c" */
		list[0] = '\0';
		for (i = 0; k->values[i] && n < sizeof(list); i++) {
			const char *sep = !i			? ""
					  : k->flags & K_ONE_OF ? ", "
					  : k->values[i + 1]	? ", "
								: " or ";

			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", sep,
					      k->values[i]);
		}
		snprintf(err, errlen, "'%s' is not %s%s", val, k->flags & K_ONE_OF ? "one of " : "",
			 list);
		break;
	}
	return -EINVAL;
}

/*
 * Checks val and stores it; on error, ctx->err says what is wrong (the caller names the place).
 * where: "FILE:LINE" or the flag, kept with a rule.
 */
/* The value as last set and where from ("default", "--flag", "FILE:LINE"), for --check-config.
 * Kept before the key's own checks below: a value they refuse ends the parse anyway. */
static void remember(struct config *cfg, enum config_key_id id, const char *val, const char *where)
{
	struct config_shown *sh = &cfg->shown[id];
	const char *colon;
	size_t n = strlen(val);

	sh->cut = n >= sizeof(sh->text);
	snprintf(sh->text, sizeof(sh->text), "%s", val);
	sh->line = 0;
	sh->flag[0] = '\0';
	if (!strcmp(where, "default")) {
		sh->origin = CONFIG_ORIGIN_DEFAULT;
	} else if (where[0] == '-') {
		sh->origin = CONFIG_ORIGIN_FLAG;
		snprintf(sh->flag, sizeof(sh->flag), "%s", where);
	} else {
		sh->origin = CONFIG_ORIGIN_FILE;
		colon = strrchr(where, ':');
		sh->line = colon ? (unsigned int)strtoul(colon + 1, NULL, 10) : 0;
	}
}

/*
 * Stores a checked value where its key's entry says (config_keys.h: field, field_size, truth).
 * 1 when stored, 0 for a key that has no field (key_set's own case), -EINVAL (err filled) for
 * a path that K_READABLE refuses.
 */
static int key_store(struct config *cfg, const struct config_key *k, const char *val,
		     const union key_value *v, char *err, size_t errlen)
{
	char *at = (char *)cfg + k->field;
	unsigned int u;
	bool b;
	int i;

	if (!k->field_size)
		return 0;
	switch (k->type) {
	case KT_UINT:
		u = (unsigned int)v->u;
		memcpy(at, &u, sizeof(u));
		return 1;
	case KT_SIZE:
		if (k->field_size == sizeof(uint64_t)) {
			memcpy(at, &v->size, sizeof(v->size));
		} else {
			u = (unsigned int)v->size; /* its max fits: test_config checks */
			memcpy(at, &u, sizeof(u));
		}
		return 1;
	case KT_SECONDS:
	case KT_DURATION:
		memcpy(at, &v->d, sizeof(v->d));
		return 1;
	case KT_ENUM:
		if (k->truth) {
			b = strcmp(val, k->truth) == 0;
			memcpy(at, &b, sizeof(b));
		} else {
			i = (int)v->u;
			memcpy(at, &i, sizeof(i));
		}
		return 1;
	case KT_TEXT:
		if (!(k->flags & K_READABLE))
			return 0;
		return check_readable(val, at, k->field_size, err, errlen) ?: 1;
	default:
		return 0;
	}
}

static int key_set(struct parse_ctx *ctx, enum config_key_id id, const char *val, const char *where)
{
	struct config *cfg = ctx->cfg;
	char *err = ctx->err;
	size_t errlen = sizeof(ctx->err);
	union key_value v = {0};
	unsigned long pid;
	size_t n = strlen(val);
	int stored;

	if (key_check(&config_keys[id], val, &v, err, errlen))
		return -EINVAL;
	remember(cfg, id, val, where);
	stored = key_store(cfg, &config_keys[id], val, &v, err, errlen);
	if (stored)
		return stored < 0 ? stored : 0;
	switch (id) {
	case KEY_NATIVE_PROCESSES:
		return set_native_processes(cfg, val, err, errlen);
	case KEY_SPOOL_DIR:
		if (val[0] != '/' || n >= sizeof(cfg->spool_dir) || has_control(val)) {
			snprintf(err, errlen, "'%s' is not an absolute path", val);
			return -EINVAL;
		}
		memcpy(cfg->spool_dir, val, n + 1);
		return 0;
	case KEY_METRICS_ADDRESS:
		if (n >= sizeof(cfg->metrics_address)) {
			snprintf(err, errlen, "'%s' is longer than %zu bytes", val,
				 sizeof(cfg->metrics_address) - 1);
			return -EINVAL;
		}
		/* empty: no endpoint */
		if (n && check_address(val, err, errlen))
			return -EINVAL;
		memcpy(cfg->metrics_address, val, n + 1);
		return 0;
	case KEY_HOSTNAME:
		/* it ends up in file names and labels */
		return set_text(cfg->hostname, sizeof(cfg->hostname), val, "/ \t", "a host name",
				"without '/', blanks or control characters", err, errlen);
	case KEY_LABEL:
		return set_label(ctx, val, where);
	case KEY_RULE:
		return set_rule(ctx, val, where);
	case KEY_PID:
		if (parse_uint(val, 1, INT_MAX, &pid)) {
			snprintf(err, errlen, "'%s' is not a process id", val);
			return -EINVAL;
		}
		if (cfg->npids == CONFIG_MAX_PIDS) {
			snprintf(err, errlen, "more than %d process ids", CONFIG_MAX_PIDS);
			return -E2BIG;
		}
		cfg->pids[cfg->npids++] = (pid_t)pid;
		return 0;
	case KEY_DURATION:
		if (parse_seconds(val, &cfg->duration)) {
			snprintf(err, errlen, "'%s' is not a positive number of seconds", val);
			return -EINVAL;
		}
		return 0;
	case KEY_OUTPUT:
		/* only from argv: the pointer stays valid as long as argv */
		if (!*val) {
			snprintf(err, errlen, "the file name is empty");
			return -EINVAL;
		}
		cfg->output = val;
		return 0;
	case KEY_UPLOAD_URL:
		if (n && check_url(val, err, errlen))
			return -EINVAL;
		memcpy(cfg->upload_url, val, n + 1);
		return 0;
	case KEY_UPLOAD_PROTOCOL: {
		enum protocol p;

		/* the table's names are the shipper's (a unit test holds them to it) */
		if (protocol_parse(val, &p)) {
			snprintf(err, errlen, "'%s' is not a protocol of this build", val);
			return -EINVAL;
		}
		cfg->upload_protocol = (unsigned int)p;
		return 0;
	}
	case KEY_UPLOAD_TENANT_ID:
		return set_text(cfg->upload_tenant_id, sizeof(cfg->upload_tenant_id), val, "",
				"a tenant id", "no control characters", err, errlen);
	case KEY_UPLOAD_HEADER:
		return set_upload_header(ctx, val, where);
	case KEY_FORMAT: /* only from argv, as --output; the table's names are the views' */
		if (!view_format_ext(val)) {
			snprintf(err, errlen, "'%s' is not a view of this build", val);
			return -EINVAL;
		}
		cfg->format = val;
		return 0;
	case KEY_BY: { /* only from argv, as --format; the syntax is the views' */
		struct view_filter f = {0};

		if (view_parse_by(val, &f, err, errlen))
			return -EINVAL;
		cfg->by = val;
		return 0;
	}
	default: /* the first pass's (config, the modes' switches); the table's stored above */
		break;
	}
	snprintf(err, errlen, "no such key");
	return -EINVAL;
}

/* ---- the file ----------------------------------------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static char *trim(char *s)
{
	char *end;

	while (is_blank(*s))
		s++;
	end = s + strlen(s);
	while (end > s && is_blank(end[-1]))
		*--end = '\0';
	return s;
}

/* A value in double quotes is taken literally, with \" and \\ escapes; unquoted, as it is. */
static int unquote(char *v, char *err, size_t errlen)
{
	char *in = v + 1, *out = v;

	if (*v != '"')
		return 0;
	for (;;) {
		if (!*in) {
			snprintf(err, errlen, "no closing '\"'");
			return -EINVAL;
		}
		if (*in == '"')
			break;
		if (*in == '\\') {
			in++;
			if (*in != '"' && *in != '\\') {
				snprintf(err, errlen,
					 "unknown escape '\\%.1s' in quotes (only \\\" and \\\\)",
					 in);
				return -EINVAL;
			}
		}
		*out++ = *in++;
	}
	if (in[1]) {
		snprintf(err, errlen, "text after the closing '\"'");
		return -EINVAL;
	}
	*out = '\0';
	return 0;
}

/*
 * The next line of the file, without its newline, in l->line. Returns 1 for a line, 0 at the
 * end, -EFBIG for a line longer than CONFIG_MAX_LINE or -EINVAL for a NUL byte, -errno when
 * reading fails.
 */
static int read_line(struct lines *l)
{
	int r = lines_next(l);

	if (r <= 0)
		return r == -EFBIG ? -EIO : r; /* no bound on the whole file */
	if (l->len > CONFIG_MAX_LINE)
		return -EFBIG;
	return memchr(l->line, '\0', l->len) ? -EINVAL : 1;
}

static void unknown_key(const char *path, unsigned int line, const char *key)
{
	const struct config_key *k;
	enum config_key_id id;
	char alt[64], flag[48];
	size_t i;

	k = config_keys_find(key, &id);
	if (k) {
		log_line(LOG_LVL_ERROR, "%s:%u: unknown key '%s' (%s is a command-line flag only)",
			 path, line, key, config_keys_flag(id, flag, sizeof(flag)));
		return;
	}
	/* the flag's spelling: say which key is meant */
	for (i = 0; key[i] && i + 1 < sizeof(alt); i++)
		alt[i] = key[i] == '-' ? '_' : key[i];
	alt[i] = '\0';
	k = config_keys_find(alt, &id);
	if (!key[i] && k && (k->flags & K_FILE)) {
		log_line(LOG_LVL_ERROR, "%s:%u: unknown key '%s' (did you mean '%s'?)", path, line,
			 key, k->name);
		return;
	}
	log_line(LOG_LVL_ERROR, "%s:%u: unknown key '%s'", path, line, key);
}

/*
 * Reads the file into ctx->cfg. optional: a missing file is no error (the service's default).
 * A file that anyone but root or the daemon's user could change is refused (safepath.h): at start
 * that is exit 2, on SIGHUP the configuration in force stays, as for any error in the file.
 */
static int read_file(struct parse_ctx *ctx, const char *path, bool optional)
{
	unsigned int seen[NKEYS] = {0};
	char why[CONFIG_MAX_LINE + 1];
	char where[PATH_MAX + 16];
	struct lines l = {0};
	unsigned int line;
	int err = 0, r;

	err = safepath_check(path, why, sizeof(why));
	if (err == -EPERM) {
		log_line(LOG_LVL_ERROR, "configuration file refused: %s", why);
		return err;
	}
	/* a root-owned file the administrator wrote: no bound on its size */
	if (!err)
		err = lines_open(&l, path, UINT64_MAX);
	if (err) {
		if (optional && err == -ENOENT) {
			ctx->cfg->config_file_missing = true;
			return 0;
		}
		log_line(LOG_LVL_ERROR, "cannot read '%s': %s", path, strerror(-err));
		return err;
	}
	for (;;) {
		const struct config_key *k;
		enum config_key_id id;
		char *key, *val, *eq;

		r = read_line(&l);
		if (r == 0)
			break;
		line = l.no;
		if (r == -EFBIG || r == -EINVAL) {
			log_line(LOG_LVL_ERROR, "%s:%u: %s", path, line,
				 r == -EFBIG ? "line longer than 4096 bytes"
					     : "line with a NUL byte");
			err = r;
			goto cleanup;
		}
		if (r < 0) {
			log_line(LOG_LVL_ERROR, "cannot read '%s': %s", path, strerror(-r));
			err = r;
			goto cleanup;
		}
		key = trim(l.line);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq || eq == key) {
			log_line(LOG_LVL_ERROR, "%s:%u: line is not 'key = value'", path, line);
			err = -EINVAL;
			goto cleanup;
		}
		*eq = '\0';
		key = trim(key);
		val = trim(eq + 1);
		k = config_keys_find(key, &id);
		if (!k || !(k->flags & K_FILE)) {
			unknown_key(path, line, key);
			err = -EINVAL;
			goto cleanup;
		}
		if (seen[id] && !(k->flags & K_REPEAT)) {
			log_line(LOG_LVL_ERROR, "%s:%u: %s: given twice (first on line %u)", path,
				 line, key, seen[id]);
			err = -EINVAL;
			goto cleanup;
		}
		seen[id] = line;
		snprintf(where, sizeof(where), "%s:%u", path, line);
		err = unquote(val, ctx->err, sizeof(ctx->err));
		if (!err)
			err = key_set(ctx, id, val, where);
		if (err) {
			log_line(LOG_LVL_ERROR, "%s:%u: %s: %s", path, line, key, ctx->err);
			goto cleanup;
		}
	}
cleanup:
	lines_close(&l);
	return err;
}

/* ---- argv --------------------------------------------------------------------------------- */

static void bad_option(char **argv)
{
	if (optopt && optopt < 256)
		log_line(LOG_LVL_ERROR, "unknown or incomplete option '-%c'", optopt);
	else
		log_line(LOG_LVL_ERROR, "unknown or incomplete option '%s'", argv[optind - 1]);
	fprintf(stderr, "Try 'rubyprofd --help'.\n");
}

/* The first pass: the mode, the file, --help, --version and unknown options; nothing else. */
static enum config_result scan_mode(struct config *cfg, const struct opts *o, int argc, char **argv)
{
	int c;

	optind = 0; /* 0, not 1: glibc then forgets everything of an earlier parse */
	opterr = 0;
	while ((c = getopt_long(argc, argv, o->shorts, o->longs, NULL)) != -1) {
		if (c == '?' || c == ':') {
			bad_option(argv);
			return CONFIG_EXIT_BAD;
		}
		switch (opt_key(c)) {
		case KEY_ONESHOT:
			cfg->oneshot = true;
			break;
		case KEY_CHECK_CONFIG:
			cfg->check_config = true;
			break;
		case KEY_CONFIG:
			if (!*optarg) {
				log_line(LOG_LVL_ERROR, "--config: the file name is empty");
				return CONFIG_EXIT_BAD;
			}
			cfg->config_file = optarg;
			break;
		case KEY_HELP:
			config_doc_help(stdout);
			return CONFIG_EXIT_OK;
		case KEY_VERSION:
			printf("rubyprofd %s\n", RUBYPROF_VERSION);
			return CONFIG_EXIT_OK;
		default:
			break;
		}
	}
	return CONFIG_RUN;
}

/*
 * The table's defaults, for this mode, through the setter (an empty default is the zero every
 * field starts from): every key's, or the service's only. A default that does not pass its own
 * key's checks is a bug in the table: test_config's defaults test holds every one of them.
 */
static void apply_defaults(struct parse_ctx *ctx, bool service_only)
{
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];
		const char *def = ctx->cfg->oneshot && k->def_oneshot ? k->def_oneshot : k->def;

		/* --duration's default is for a run without a COMMAND: config_parse sets it */
		if ((service_only && !(k->flags & K_SERVICE)) || i == KEY_DURATION || !def ||
		    !def[0])
			continue;
		if (key_set(ctx, (enum config_key_id)i, def, "default"))
			log_line(LOG_LVL_ERROR, "the default of %s: %s", k->name, ctx->err);
	}
}

/* The service's keys; with --oneshot they keep these, whatever the file says. They are the last
 * fields of struct config, from `interval` on. */
static void set_service_defaults(struct parse_ctx *ctx)
{
	struct config *cfg = ctx->cfg;

	memset(&cfg->interval, 0, sizeof(*cfg) - offsetof(struct config, interval));
	apply_defaults(ctx, true);
}

/* The second pass: every flag over the file's values. */
static enum config_result apply_flags(struct parse_ctx *ctx, const struct opts *o, int argc,
				      char **argv)
{
	struct config *cfg = ctx->cfg;
	char flag[48];
	int c, id;

	optind = 0;
	opterr = 0;
	ctx->from_flags = true;
	while ((c = getopt_long(argc, argv, o->shorts, o->longs, NULL)) != -1) {
		id = opt_key(c);
		switch (id) {
		case KEY_VERBOSE:
			cfg->verbose++;
			continue;
		case KEY_QUIET:
			cfg->quiet = true;
			continue;
		case -1:
		case KEY_CONFIG:
		case KEY_ONESHOT:
		case KEY_CHECK_CONFIG:
		case KEY_HELP:
		case KEY_VERSION:
			continue; /* seen in the first pass */
		}
		config_keys_flag((enum config_key_id)id, flag, sizeof(flag));
		if ((config_keys[id].flags & K_ONESHOT) && !cfg->oneshot) {
			log_line(LOG_LVL_ERROR, "%s: only with --oneshot", flag);
			return CONFIG_EXIT_BAD;
		}
		if ((config_keys[id].flags & K_SERVICE) && cfg->oneshot) {
			log_line(LOG_LVL_ERROR, "%s: only for the service, not with --oneshot",
				 flag);
			return CONFIG_EXIT_BAD;
		}
		/* --kernel-stacks alone says yes */
		if (key_set(ctx, (enum config_key_id)id, optarg ? optarg : "yes", flag)) {
			log_line(LOG_LVL_ERROR, "%s: %s", flag, ctx->err);
			return CONFIG_EXIT_BAD;
		}
	}
	if (optind < argc)
		cfg->command = &argv[optind];
	return CONFIG_RUN;
}

/* rules[0..nfirst) <-> rules[nfirst..nrules): the flags' rules go first. One rule is 4.6 KiB. */
static void reverse_rules(struct config *cfg, size_t from, size_t to)
{
	struct config_rule tmp;

	while (from + 1 < to) {
		to--;
		tmp = cfg->rules[from];
		cfg->rules[from] = cfg->rules[to];
		cfg->rules[to] = tmp;
		from++;
	}
}

static void flag_rules_first(struct config *cfg, size_t nfile)
{
	if (!nfile || nfile == cfg->nrules)
		return;
	reverse_rules(cfg, 0, nfile);
	reverse_rules(cfg, nfile, cfg->nrules);
	reverse_rules(cfg, 0, cfg->nrules);
}

enum config_result config_parse_with_default(struct config *cfg, int argc, char **argv,
					     const char *default_file)
{
	struct parse_ctx ctx = {.cfg = cfg};
	enum config_result res;
	struct opts o;
	double duration;

	memset(cfg, 0, sizeof(*cfg));
	build_opts(&o);
	res = scan_mode(cfg, &o, argc, argv);
	if (res != CONFIG_RUN)
		return res;
	if (cfg->check_config && cfg->oneshot) {
		log_line(LOG_LVL_ERROR, "--check-config: checks the service's configuration, "
					"not with --oneshot");
		return CONFIG_EXIT_BAD;
	}
	apply_defaults(&ctx, false);

	if (cfg->config_file) {
		if (read_file(&ctx, cfg->config_file, false))
			return CONFIG_EXIT_BAD;
	} else if (!cfg->oneshot) {
		cfg->config_file = default_file;
		if (read_file(&ctx, cfg->config_file, true))
			return CONFIG_EXIT_BAD;
	}
	ctx.nfile_labels = cfg->nlabels;
	ctx.nfile_rules = cfg->nrules;
	ctx.nfile_headers = cfg->nupload_headers;

	res = apply_flags(&ctx, &o, argc, argv);
	if (res != CONFIG_RUN)
		return res;
	flag_rules_first(cfg, ctx.nfile_rules);

	if (cfg->command && !cfg->oneshot) {
		log_line(LOG_LVL_ERROR, "a COMMAND ('%s'): only with --oneshot", cfg->command[0]);
		return CONFIG_EXIT_BAD;
	}
	if (cfg->command && cfg->npids) {
		log_line(LOG_LVL_ERROR, "give either --pid or a COMMAND, not both");
		return CONFIG_EXIT_BAD;
	}
	/* both add to the native half of a sample, which Ruby-only stacks do not have */
	if (!cfg->stacks_mixed && (cfg->kernel_stacks || cfg->native_procs != RP_NATIVE_RUBY)) {
		log_line(LOG_LVL_ERROR, "%s: only with stacks = mixed (--stacks mixed)",
			 cfg->kernel_stacks ? "kernel_stacks (--kernel-stacks)"
					    : "native_processes (--native-processes)");
		return CONFIG_EXIT_BAD;
	}
	if (cfg->oneshot) {
		if (!cfg->duration && !cfg->command &&
		    !parse_seconds(config_keys[KEY_DURATION].def, &duration))
			cfg->duration = duration;
		/* the file serves both modes: its service keys were checked, but do not apply */
		set_service_defaults(&ctx);
	}
	if (cfg->quiet)
		cfg->log_level = LOG_LVL_ERROR;
	else if (cfg->verbose > 1)
		cfg->log_level = LOG_LVL_DEBUG;
	else if (cfg->verbose)
		cfg->log_level = LOG_LVL_INFO;
	return CONFIG_RUN;
}

/* ---- the effective configuration (--check-config) ----------------------------------------- */

/* v as the file takes it: in quotes when it would not read back as it is. */
static void print_value(FILE *out, const char *v)
{
	size_t n = strlen(v);
	const char *p;

	if (n && !is_blank(v[0]) && !is_blank(v[n - 1]) && v[0] != '"') {
		fputs(v, out);
		return;
	}
	fputc('"', out);
	for (p = v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', out);
		fputc(*p, out);
	}
	fputc('"', out);
}

/* Where the value of the line that follows comes from, as a comment line of its own (the file
 * has no comments at the end of a line). */
static void print_origin(FILE *out, const struct config *cfg, const struct config_key *k,
			 const struct config_shown *sh)
{
	switch (sh->origin) {
	case CONFIG_ORIGIN_FILE:
		fprintf(out, "# %s:%u", cfg->config_file, sh->line);
		break;
	case CONFIG_ORIGIN_FLAG:
		fprintf(out, "# %s", sh->flag);
		break;
	case CONFIG_ORIGIN_DEFAULT:
		fputs("# default", out);
		break;
	default: /* an empty default, never applied */
		fprintf(out, "# default%s%s", k->none ? ": " : "", k->none ? k->none : "");
		break;
	}
	if (sh->cut)
		fprintf(out, " (the value's first %zu bytes)", sizeof(sh->text) - 1);
	fputc('\n', out);
}

/* The origin comment of one value of a repeatable key (as print_origin's of the others). */
static void print_at(FILE *out, const struct config *cfg, const struct config_at *at)
{
	if (at->line)
		fprintf(out, "# %s:%u\n", cfg->config_file, at->line);
	else
		fprintf(out, "# %s\n", at->flag);
}

/* A repeatable key's values, from where they are kept. */
static void print_repeated(FILE *out, const struct config *cfg, enum config_key_id id)
{
	const char *name = config_keys[id].name, *colon;
	char kv[sizeof(((struct config_label *)0)->key) +
		sizeof(((struct config_label *)0)->value)];
	size_t i;

	switch (id) {
	case KEY_PID:
		for (i = 0; i < cfg->npids; i++)
			fprintf(out, "%s = %d\n", name, (int)cfg->pids[i]);
		break;
	case KEY_LABEL:
		for (i = 0; i < cfg->nlabels; i++) {
			/* quoted as the file needs it (a value that ends with a blank) */
			snprintf(kv, sizeof(kv), "%s=%s", cfg->labels[i].key, cfg->labels[i].value);
			print_at(out, cfg, &cfg->labels[i].at);
			fprintf(out, "%s = ", name);
			print_value(out, kv);
			fputc('\n', out);
		}
		break;
	case KEY_RULE:
		for (i = 0; i < cfg->nrules; i++) {
			fprintf(out, "# %s\n%s = ", cfg->rules[i].where, name);
			print_value(out, cfg->rules[i].text);
			fputc('\n', out);
		}
		break;
	case KEY_UPLOAD_HEADER:
		for (i = 0; i < cfg->nupload_headers; i++) {
			colon = strchr(cfg->upload_headers[i], ':');
			print_at(out, cfg, &cfg->upload_headers_at[i]);
			fprintf(out, "%s = %.*s: (value not shown)\n", name,
				colon ? (int)(colon - cfg->upload_headers[i]) : 0,
				cfg->upload_headers[i]);
		}
		break;
	default:
		break;
	}
	if (!cfg->shown[id].origin)
		fprintf(out, "# %s: none\n", name);
}

void config_print_effective(const struct config *cfg, FILE *out)
{
	const struct config_shown *sh;
	size_t i;

	fprintf(out, "# rubyprofd %s: the configuration in effect, from %s%s and the flags\n",
		RUBYPROF_VERSION, cfg->config_file ? cfg->config_file : "no file",
		cfg->config_file_missing ? " (missing: every default)" : "");
	for (i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];

		if (!(k->flags & K_FILE))
			continue;
		if (k->flags & K_REPEAT) {
			print_repeated(out, cfg, (enum config_key_id)i);
			continue;
		}
		sh = &cfg->shown[i];
		print_origin(out, cfg, k, sh);
		fprintf(out, "%s = ", k->name);
		print_value(out, sh->text);
		fputc('\n', out);
	}
}

enum config_result config_parse(struct config *cfg, int argc, char **argv)
{
	return config_parse_with_default(cfg, argc, argv, CONFIG_DEFAULT_FILE);
}
