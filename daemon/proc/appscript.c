// SPDX-License-Identifier: GPL-2.0-only
/*
 * appscript.c - the service a process's command line names (appscript.h): the script Ruby runs,
 * past ruby's own options and `bundle exec`, without its version and ".rb".
 */
#include <ctype.h>
#include <string.h>

#include "proc/appscript.h"

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

/* Step 5 of appname.c. "bundle exec CMD" names CMD: bundler only launches it. */
bool appscript_name(const struct span *args, size_t n, const char *exe, const char *comm,
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
		return span_copy(strip_version(b), name, size);
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
		if (span_has_suffix(b, ".rb") && b.len > 3)
			b.len -= 3;
		return span_copy(strip_version(b), name, size);
	}
	return false;
}

size_t appscript_args(const char *cmd, size_t len, struct span *args, size_t max)
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
