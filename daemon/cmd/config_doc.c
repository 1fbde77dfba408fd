// SPDX-License-Identifier: GPL-2.0-only
/*
 * config_doc.c - what the key table (config_keys.c) is said as: --help, the table of
 * docs/configuration.md, the OPTIONS section of rubyprofd(8) and systemd/rubyprofd.conf. The
 * docs' text marks code with backquotes; each output turns that into its own markup.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/config_doc.h"
#include "cmd/config_keys.h"

#define HELP_COLUMN 24
#define HELP_WIDTH  92
#define CONF_WIDTH  100

/* ---- words about one key ------------------------------------------------------------------ */

const char *config_doc_size_text(double v, char *buf, size_t len)
{
	static const char units[] = "GMK";
	unsigned long long b = (unsigned long long)v;
	int shift = 30, i;

	for (i = 0; i < 3; i++, shift -= 10) {
		if (b >= (1ULL << shift) && !(b & ((1ULL << shift) - 1))) {
			snprintf(buf, len, "%llu%c", b >> shift, units[i]);
			return buf;
		}
	}
	snprintf(buf, len, "%llu", b);
	return buf;
}

const char *config_doc_duration_text(double v, char *buf, size_t len)
{
	if (v >= 86400 && v == (double)(long long)(v / 86400) * 86400)
		snprintf(buf, len, "%gd", v / 86400);
	else if (v >= 3600 && v == (double)(long long)(v / 3600) * 3600)
		snprintf(buf, len, "%gh", v / 3600);
	else if (v >= 60 && v == (double)(long long)(v / 60) * 60)
		snprintf(buf, len, "%gm", v / 60);
	else
		snprintf(buf, len, "%gs", v);
	return buf;
}

/* The suffixes a size up to max may take: "K", "K or M", "K, M or G". */
static const char *size_suffixes(double max)
{
	return max >= (1 << 30) ? "`K`, `M` or `G`" : max >= (1 << 20) ? "`K` or `M`" : "`K`";
}

/* What values a key takes, in the docs' markup (`code`). */
static void values_text(const struct config_key *k, char *buf, size_t len)
{
	char lo[32], hi[32];
	size_t n = 0, i;

	switch (k->type) {
	case KT_UINT:
		snprintf(buf, len, "%g to %g", k->min, k->max);
		return;
	case KT_SECONDS:
		snprintf(buf, len, "%s%g to %g seconds, decimals allowed", k->zero ? "`0` or " : "",
			 k->min, k->max);
		return;
	case KT_SIZE:
		snprintf(buf, len, "`%s` to `%s`: bytes, or a number with %s (powers of 1024)",
			 config_doc_size_text(k->min, lo, sizeof(lo)),
			 config_doc_size_text(k->max, hi, sizeof(hi)), size_suffixes(k->max));
		return;
	case KT_DURATION:
		snprintf(buf, len,
			 "%s`%s` to `%s`: a number with `s`, `m`, `h` or `d` (a bare number is "
			 "seconds)",
			 k->zero ? "`0` or " : "", config_doc_duration_text(k->min, lo, sizeof(lo)),
			 config_doc_duration_text(k->max, hi, sizeof(hi)));
		return;
	case KT_ENUM:
		buf[0] = '\0';
		for (i = 0; k->values[i] && n < len; i++)
			n += (size_t)snprintf(buf + n, len - n, "%s`%s`", i ? ", " : "",
					      k->values[i]);
		return;
	case KT_TEXT:
		snprintf(buf, len, "%s", k->syntax ? k->syntax : "");
		return;
	case KT_SWITCH:
		buf[0] = '\0';
		return;
	}
}

/* What 0 means, as a sentence ("`0`: never."), or "". */
static void zero_text(const struct config_key *k, char *buf, size_t len)
{
	if (k->zero)
		snprintf(buf, len, " `0`: %s.", k->zero);
	else
		buf[0] = '\0';
}

static const char *reload_text(enum config_reload r)
{
	switch (r) {
	case RELOAD_YES:
		return "yes";
	case RELOAD_NEXT:
		return "yes, from the next interval";
	case RELOAD_RESTART:
		return "no (restart)";
	case RELOAD_NONE:
		break;
	}
	return "";
}

/* The default in the docs' markup: "`19` (`99` with `--oneshot`)", or what "none" means. */
static void default_text(const struct config_key *k, char *buf, size_t len)
{
	if (!k->def)
		buf[0] = '\0';
	else if (!k->def[0])
		snprintf(buf, len, "empty: %s", k->none ? k->none : "none");
	else if (k->def_oneshot)
		snprintf(buf, len, "`%s` (`%s` with `--oneshot`)", k->def, k->def_oneshot);
	else
		snprintf(buf, len, "`%s`", k->def);
}

/* "--frequency", "--kernel-stacks[=yes|no]" */
static void flag_text(enum config_key_id id, char *buf, size_t len, bool with_arg)
{
	const struct config_key *k = &config_keys[id];
	char f[48];

	config_keys_flag(id, f, sizeof(f));
	if (!with_arg || !k->arg)
		snprintf(buf, len, "%s", f);
	else if (k->flags & K_OPTARG)
		snprintf(buf, len, "%s[=%s]", f, k->arg);
	else
		snprintf(buf, len, "%s %s", f, k->arg);
}

/* Drops the backquotes of the docs' markup: --help is plain text. */
static void plain(const char *in, char *out, size_t len)
{
	size_t n = 0;

	for (; *in && n + 1 < len; in++)
		if (*in != '`')
			out[n++] = *in;
	out[n] = '\0';
}

/* Writes text wrapped to width, every line but the first indented by indent, starting at col. */
static void wrap(FILE *out, const char *text, size_t col, size_t indent, size_t width,
		 const char *prefix)
{
	const char *p = text, *word;
	size_t n;
	bool first = true;

	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		word = p;
		while (*p && *p != ' ')
			p++;
		n = (size_t)(p - word);
		if (!first && col + 1 + n > width) {
			fprintf(out, "\n%s%*s", prefix, (int)indent, "");
			col = indent + strlen(prefix);
			first = true;
		}
		if (!first) {
			fputc(' ', out);
			col++;
		}
		fwrite(word, 1, n, out);
		col += n;
		first = false;
	}
	fputc('\n', out);
}

/* ---- --help ------------------------------------------------------------------------------- */

enum section { SEC_BOTH, SEC_SERVICE, SEC_SHIP, SEC_ONESHOT };

static enum section section_of(const struct config_key *k)
{
	if (k->flags & K_ONESHOT)
		return SEC_ONESHOT;
	if (k->flags & K_SHIP)
		return SEC_SHIP;
	if (k->flags & K_SERVICE)
		return SEC_SERVICE;
	return SEC_BOTH;
}

static const char *const help_heads[] = {
	[SEC_BOTH] = "Both modes:",
	[SEC_SERVICE] = "The service only (each also a key of the file: spool-dir is spool_dir):",
	[SEC_SHIP] = "Shipping to a collector (the service only; see docs/shipping.md):",
	[SEC_ONESHOT] = "With --oneshot only:",
};

static void help_line(FILE *out, enum config_key_id id)
{
	const struct config_key *k = &config_keys[id];
	char flag[96], text[512], help[400], range[160], lo[32], hi[32];
	int col;

	flag_text(id, flag, sizeof(flag), true);
	if (k->short_opt)
		col = fprintf(out, "  -%c, %s", k->short_opt, flag);
	else
		col = fprintf(out, "      %s", flag);
	/* a flag too long for its column has its help on the next line */
	if (col + 2 > HELP_COLUMN)
		col = fprintf(out, "\n%*s", HELP_COLUMN, "") - 1;
	else
		col += fprintf(out, "%*s", HELP_COLUMN - col, "");
	plain(k->help, help, sizeof(help));
	range[0] = '\0';
	if (k->type == KT_UINT || k->type == KT_SECONDS)
		snprintf(range, sizeof(range), "%s%g to %g", k->zero ? "0 or " : "", k->min,
			 k->max);
	else if (k->type == KT_SIZE)
		snprintf(range, sizeof(range), "%s to %s, suffix %s",
			 config_doc_size_text(k->min, lo, 32), config_doc_size_text(k->max, hi, 32),
			 k->max >= (1 << 30) ? "K, M or G" : "K");
	else if (k->type == KT_DURATION)
		snprintf(range, sizeof(range), "%s%s to %s, suffix s, m, h or d",
			 k->zero ? "0 or " : "", config_doc_duration_text(k->min, lo, 32),
			 config_doc_duration_text(k->max, hi, 32));
	if (k->def && k->def[0] && k->def_oneshot)
		snprintf(text, sizeof(text), "%s (%s%sdefault %s, --oneshot %s)", help, range,
			 range[0] ? "; " : "", k->def, k->def_oneshot);
	else if (k->def && k->def[0])
		snprintf(text, sizeof(text), "%s (%s%sdefault %s)", help, range,
			 range[0] ? "; " : "", k->def);
	else if (range[0])
		snprintf(text, sizeof(text), "%s (%s)", help, range);
	else
		snprintf(text, sizeof(text), "%s", help);
	wrap(out, text, (size_t)col, HELP_COLUMN, HELP_WIDTH, "");
}

void config_doc_help(FILE *out)
{
	enum section sec;
	size_t i;

	fputs("Usage: rubyprofd [OPTIONS]                                  (the service)\n"
	      "       rubyprofd --oneshot [OPTIONS] [-- COMMAND [ARGS...]]\n"
	      "       rubyprofd report FILE.pb.gz... [OPTIONS]  (views of profiles: report -h)\n"
	      "\n"
	      "Profiles the CPU time of Ruby processes with eBPF, without stopping or changing "
	      "them.\n"
	      "The service profiles every Ruby process continuously and spools one pprof profile\n"
	      "per interval; --oneshot profiles for a while, writes one profile (gzip'd\n"
	      "perftools.profiles.Profile) and prints a summary.\n",
	      out);
	for (sec = SEC_BOTH; sec <= SEC_ONESHOT; sec++) {
		fprintf(out, "\n%s\n", help_heads[sec]);
		for (i = 0; i < NKEYS; i++)
			if (section_of(&config_keys[i]) == sec)
				help_line(out, (enum config_key_id)i);
	}
	fputs("\n"
	      "With a COMMAND, rubyprofd --oneshot starts it and profiles it and the Ruby "
	      "processes "
	      "it\n"
	      "starts. SIGHUP makes the service re-read its file. See rubyprofd(8) and\n"
	      "docs/configuration.md.\n"
	      "Needs root, or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH.\n",
	      out);
}

/* ---- docs/configuration.md ---------------------------------------------------------------- */

/* Markdown table cells: a '|' would end the cell. */
static void md_cell(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else
			fputc(*s, out);
	}
}

void config_doc_markdown(FILE *out)
{
	char buf[1024], zero[128];
	size_t i, n = 0;

	fputs("<!-- generated from daemon/cmd/config_keys.c by `make gen`: edit the table, not "
	      "this "
	      "-->\n"
	      "| Key | Flag | Values | Default | What it does | Reloaded on SIGHUP |\n"
	      "|---|---|---|---|---|---|\n",
	      out);
	for (i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];

		if (!(k->flags & K_FILE))
			continue;
		fprintf(out, "| `%s` | ", k->name);
		if (k->short_opt)
			fprintf(out, "`-%c`, ", k->short_opt);
		flag_text((enum config_key_id)i, buf, sizeof(buf), k->flags & K_OPTARG);
		fputc('`', out);
		md_cell(out, buf);
		fputs("` | ", out);
		values_text(k, buf, sizeof(buf));
		md_cell(out, buf);
		fputs(" | ", out);
		default_text(k, buf, sizeof(buf));
		md_cell(out, buf);
		fputs(" | ", out);
		zero_text(k, zero, sizeof(zero));
		md_cell(out, k->doc);
		md_cell(out, zero);
		if (k->flags & K_REPEAT)
			fputs(" Repeatable.", out);
		fprintf(out, " | %s |\n", reload_text(k->reload));
	}
	fputs("\nFlags only (no key of the file):\n\n", out);
	for (i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];

		if (k->flags & K_FILE)
			continue;
		fputs("- ", out);
		if (k->short_opt)
			fprintf(out, "`-%c`, ", k->short_opt);
		flag_text((enum config_key_id)i, buf, sizeof(buf), true);
		fprintf(out, "`%s`%s: %s", buf,
			(k->flags & K_ONESHOT) && k->arg ? " (with `--oneshot` only)" : "", k->doc);
		if (k->def && !k->def[0] && k->none)
			fprintf(out, " Default: %s.", k->none);
		else if (k->def && k->def[0])
			fprintf(out, " Default: `%s`.", k->def);
		fputc('\n', out);
	}
	fputs("\n`rubyprofd --oneshot --config FILE` uses these keys of the file and checks but "
	      "ignores the others (the service's), so that one file serves both modes: ",
	      out);
	for (i = 0; i < NKEYS; i++) {
		const struct config_key *k = &config_keys[i];

		if ((k->flags & K_FILE) && !(k->flags & K_SERVICE))
			fprintf(out, "%s`%s`", n++ ? ", " : "", k->name);
	}
	fputs(".\n", out);
}

/* ---- rubyprofd(8) ------------------------------------------------------------------------- */

/* Text in the docs' markup as man source: `code` bold, '-' and '\' escaped, no line opening
 * with a control character. */
static void man_text(FILE *out, const char *s)
{
	bool code = false, bol = true;

	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", out);
		bol = false;
		switch (*s) {
		case '`':
			fputs(code ? "\\fR" : "\\fB", out);
			code = !code;
			break;
		case '-':
			fputs("\\-", out);
			break;
		case '\\':
			fputs("\\e", out);
			break;
		default:
			fputc(*s, out);
		}
	}
	if (code)
		fputs("\\fR", out);
}

static const char *const man_heads[] = {
	[SEC_BOTH] = "Both modes",
	[SEC_SERVICE] = "The service only",
	[SEC_SHIP] = "Shipping to a collector (the service only)",
	[SEC_ONESHOT] = "With \\-\\-oneshot only",
};

void config_doc_man(FILE *out)
{
	char buf[1024];
	enum section sec;
	size_t i;

	fputs(".\\\" generated from daemon/cmd/config_keys.c by make gen: edit the table, not "
	      "this\n",
	      out);
	for (sec = SEC_BOTH; sec <= SEC_ONESHOT; sec++) {
		fprintf(out, ".SS %s\n", man_heads[sec]);
		for (i = 0; i < NKEYS; i++) {
			const struct config_key *k = &config_keys[i];

			if (section_of(k) != sec)
				continue;
			/* the tag: ".BR \-F ", " \-\-frequency =\fIHZ\fR" */
			fputs(".TP\n.BR ", out);
			if (k->short_opt)
				fprintf(out, "\\-%c \", \" ", k->short_opt);
			flag_text((enum config_key_id)i, buf, sizeof(buf), false);
			man_text(out, buf);
			if (k->arg) {
				fputs(k->flags & K_OPTARG ? " [=\\fI" : " =\\fI", out);
				man_text(out, k->arg);
				fputs(k->flags & K_OPTARG ? "\\fR]" : "\\fR", out);
			}
			fputc('\n', out);
			man_text(out, k->doc);
			fputc('\n', out);
			values_text(k, buf, sizeof(buf));
			if (buf[0]) {
				fputs("Values: ", out);
				man_text(out, buf);
				zero_text(k, buf, sizeof(buf));
				man_text(out, buf[0] ? buf : ".");
				fputc('\n', out);
			}
			default_text(k, buf, sizeof(buf));
			if (buf[0]) {
				fputs("Default: ", out);
				man_text(out, buf);
				fputs(".\n", out);
			}
			if (k->flags & K_FILE) {
				fprintf(out,
					"Key of the file: \\fB%s\\fR%s; reloaded on SIGHUP: %s.\n",
					k->name, k->flags & K_REPEAT ? " (repeatable)" : "",
					reload_text(k->reload));
			}
		}
	}
}

/* ---- systemd/rubyprofd.conf --------------------------------------------------------------- */

static void conf_comment(FILE *out, const char *text)
{
	char buf[2048];

	plain(text, buf, sizeof(buf));
	fputs("# ", out);
	wrap(out, buf, 2, 0, CONF_WIDTH, "# ");
}

void config_doc_conf(FILE *out)
{
	char buf[2048], values[1024], zero[128];
	enum section sec;
	size_t i;

	fputs("# SPDX-License-Identifier: GPL-2.0-only\n"
	      "# /etc/rubyprofd/rubyprofd.conf: configuration of the rubyprofd service (man "
	      "rubyprofd(8),\n"
	      "# docs/configuration.md). Generated from daemon/cmd/config_keys.c by make gen.\n"
	      "#\n"
	      "# Format: one \"key = value\" per line; lines starting with \"#\" are comments. "
	      "Every key is\n"
	      "# here, commented out, with its default: uncomment a line to change it. After an "
	      "edit:\n"
	      "# systemctl reload rubyprofd (SIGHUP re-reads this file; a broken file is refused "
	      "and the\n"
	      "# running configuration kept).\n",
	      out);
	for (sec = SEC_BOTH; sec <= SEC_SHIP; sec++) {
		if (sec == SEC_SERVICE)
			fputs("\n# ---- The service ----\n", out);
		else if (sec == SEC_SHIP)
			fputs("\n# ---- Shipping to a collector (docs/shipping.md) ----\n", out);
		for (i = 0; i < NKEYS; i++) {
			const struct config_key *k = &config_keys[i];

			if (section_of(k) != sec || !(k->flags & K_FILE))
				continue;
			values_text(k, values, sizeof(values));
			zero_text(k, zero, sizeof(zero));
			snprintf(buf, sizeof(buf), "%s Values: %s.%s%s%s%s%s Reloaded: %s.", k->doc,
				 values, zero, k->flags & K_REPEAT ? " Repeatable." : "",
				 k->def && !k->def[0] ? " Empty: " : "",
				 k->def && !k->def[0] ? (k->none ? k->none : "none") : "",
				 k->def && !k->def[0] ? "." : "", reload_text(k->reload));
			fputc('\n', out);
			conf_comment(out, buf);
			if (k->example && !(k->flags & K_REPEAT) && k->def && !k->def[0])
				fprintf(out, "# Example: %s = %s\n", k->name, k->example);
			if (k->flags & K_REPEAT && k->example)
				fprintf(out, "#%s = %s\n", k->name, k->example);
			else
				fprintf(out, "#%s = %s\n", k->name, k->def ? k->def : "");
		}
	}
}

void config_doc_usage(FILE *out)
{
	fputs("```\n", out);
	config_doc_help(out);
	fputs("```\n", out);
}
