// SPDX-License-Identifier: GPL-2.0-only
/*
 * appname.c - the service name of a Ruby process. Steps, first that gives a name wins:
 *   1. config rules "FIELD ~ REGEX => ACTIONS"
 *   2. the systemd unit in the cgroup path (innermost .service that is an app's own unit)
 *   3. the container: the app inside it when steps 4-5 name one, else container-<12 hex>
 *   4. a well-known process title: Puma, Unicorn, Sidekiq, Resque (formats from their sources)
 *   5. the script ruby runs, or the embedding executable
 * The reasons for each choice are in docs/service-names.md.
 * This file decides and reads /proc; the steps' own parts are apprules.c (1), apptitle.c (4)
 * and appscript.c (5).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/fileio.h"
#include "proc/appname.h"
#include "proc/apprules.h"
#include "proc/appscript.h"
#include "proc/apptitle.h"
#include "proc/container.h"
#include "proc/span.h"

/* Bounds on what is read from /proc; a file cut at its bound sets app_identity.truncated. */
#define CGROUP_READ_MAX	 (64 * 1024UL)
#define CMDLINE_READ_MAX (64 * 1024UL)
#define ENVIRON_READ_MAX (256 * 1024UL)
#define COMM_READ_MAX	 64
/* argv entries looked at for the script; options and the script come first. */
#define ARGS_MAX	 64
/* cgroup lines kept: v1 has one per hierarchy, about 13 in practice. */
#define CGROUP_LINES_MAX 32

/* ---- the name ---------------------------------------------------------------------------- */

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
	struct span hierarchy, controllers, path;
	const char *line = text, *nl, *end;
	size_t n = 0;

	while (text && *line) {
		nl = strchr(line, '\n');
		end = nl ? nl : line + strlen(line);
		if (container_cgroup_line(line, (size_t)(end - line), &hierarchy, &controllers,
					  &path)) {
			if (n == max) {
				*truncated = true;
				break;
			}
			v[n].path = path;
			if (span_eq(hierarchy, "0") && !controllers.len)
				v[n].kind = CG_V2;
			else if (controllers_have(controllers, "name=systemd"))
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

static bool is_user_manager(const char *c, size_t len)
{
	return len > 13 && memcmp(c, "user@", 5) == 0 &&
	       span_has_suffix((struct span){c, len}, ".service") && all_digits(c + 5, len - 5 - 8);
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
		if (span_has_suffix((struct span){p, clen}, ".service") ||
		    span_has_suffix((struct span){p, clen}, ".scope")) {
			last = p;
			llen = clen;
		}
		p += clen + 1;
	}
	if (!last || !span_has_suffix((struct span){last, llen}, ".service"))
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

/* ---- decision ---------------------------------------------------------------------------- */

int appname_identify_from(const struct appname_input *in, const struct apprules *rules,
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
	title = apptitle_of_cmdline(in->cmdline ? in->cmdline : "",
				    in->cmdline ? in->cmdline_len : 0);
	if (!title) {
		err = -ENOMEM;
		goto cleanup;
	}
	nargs = appscript_args(in->cmdline ? in->cmdline : "", in->cmdline ? in->cmdline_len : 0,
			       args, ARGS_MAX);
	nlines = cgroup_lines(in->cgroup_text, lines, CGROUP_LINES_MAX, &out->truncated);
	if (in->cgroup_text &&
	    container_id_parse(in->cgroup_text, out->container_id, sizeof(out->container_id)))
		out->container_id[0] = '\0';
	have_unit = cgroup_unit(lines, nlines, out->unit, sizeof(out->unit), unit_name,
				sizeof(unit_name));
	if (!have_unit)
		out->unit[0] = '\0';

	raw[0] = '\0';
	if (rules && apprules_count(rules)) {
		rl = cgroup_rule_line(lines, nlines);
		cgroup_path = rl ? strndup(rl->path.p, rl->path.len) : strdup("");
		if (!cgroup_path) {
			err = -ENOMEM;
			goto cleanup;
		}
		err = apprules_apply(rules, in, cgroup_path, title, out, raw, sizeof(raw));
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
		have_title = apptitle_name(
			title,
			strnlen(in->cmdline ? in->cmdline : "", in->cmdline ? in->cmdline_len : 0),
			tname, sizeof(tname));
		have_script = !have_title &&
			      appscript_name(args, nargs, in->exe, in->comm, tname, sizeof(tname));
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

int appname_identify(pid_t pid, const struct apprules *rules, struct app_identity *out)
{
	return appname_identify_with(pid, rules, NULL, out);
}

int appname_identify_with(pid_t pid, const struct apprules *rules, const char *otel_service,
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
	if (rules && apprules_needs_env(rules)) {
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
