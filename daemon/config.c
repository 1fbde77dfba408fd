// SPDX-License-Identifier: GPL-2.0-only
/*
 * config.c - the configuration: command-line flags over a key = value file, strict value checks.
 *
 * Order: a first pass over argv finds the mode (--oneshot), the file (--config), --help and
 * unknown options; then the mode's defaults, then the file, then a second pass applies the flags
 * over it. Both the file's keys and the flags go through one setter (key_set), so a key means
 * the same in both places and its errors read the same. No state outlives a call: the service
 * calls config_parse() again on SIGHUP.
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

#include "config.h"
#include "ingest.h"
#include "log.h"
#include "rubyprof.h"
#include "upload.h"
#include "view.h"

/* Every key: its file name (NULL: a flag only), its long flag, and where it is allowed. */
enum key_id {
	KEY_FREQUENCY,
	KEY_INTERVAL,
	KEY_MAX_FRAMES,
	KEY_STACKS,
	KEY_USTACK_BYTES,
	KEY_SPOOL_DIR,
	KEY_SPOOL_MAX_BYTES,
	KEY_SPOOL_MAX_AGE,
	KEY_METRICS_ADDRESS,
	KEY_RESCAN_INTERVAL,
	KEY_THREAD_NAMES,
	KEY_HOSTNAME,
	KEY_LABEL,
	KEY_RULE,
	KEY_LOG_LEVEL,
	KEY_PID,
	KEY_DURATION,
	KEY_OUTPUT,
	KEY_TOP,
	KEY_UPLOAD_URL,
	KEY_UPLOAD_PROTOCOL,
	KEY_UPLOAD_TOKEN_FILE,
	KEY_UPLOAD_BASIC_AUTH_FILE,
	KEY_UPLOAD_TENANT_ID,
	KEY_UPLOAD_HEADER,
	KEY_UPLOAD_CA_FILE,
	KEY_UPLOAD_CONNECT_TIMEOUT,
	KEY_UPLOAD_TIMEOUT,
	KEY_UPLOAD_MAX_AGE,
	KEY_UPLOAD_BACKOFF_MAX,
	KEY_UPLOAD_REJECTED_MAX_AGE,
	KEY_FORMAT,
	KEY_CLOCK,
	KEY_KERNEL_STACKS,
	KEY_NATIVE_PROCESSES,
	NKEYS,
};

enum {
	K_FILE = 1 << 0,    /* also a key of the file */
	K_REPEAT = 1 << 1,  /* may be given many times */
	K_SERVICE = 1 << 2, /* only for the service */
	K_ONESHOT = 1 << 3, /* only with --oneshot */
};

struct key_def {
	const char *name; /* file key: the long flag with '_' for '-' */
	const char *flag;
	unsigned int flags;
};

static const struct key_def keys[NKEYS] = {
	[KEY_FREQUENCY] = {"frequency", "--frequency", K_FILE},
	[KEY_INTERVAL] = {"interval", "--interval", K_FILE | K_SERVICE},
	[KEY_MAX_FRAMES] = {"max_frames", "--max-frames", K_FILE},
	[KEY_STACKS] = {"stacks", "--stacks", K_FILE},
	[KEY_USTACK_BYTES] = {"ustack_bytes", "--ustack-bytes", K_FILE},
	[KEY_SPOOL_DIR] = {"spool_dir", "--spool-dir", K_FILE | K_SERVICE},
	[KEY_SPOOL_MAX_BYTES] = {"spool_max_bytes", "--spool-max-bytes", K_FILE | K_SERVICE},
	[KEY_SPOOL_MAX_AGE] = {"spool_max_age", "--spool-max-age", K_FILE | K_SERVICE},
	[KEY_METRICS_ADDRESS] = {"metrics_address", "--metrics-address", K_FILE | K_SERVICE},
	[KEY_RESCAN_INTERVAL] = {"rescan_interval", "--rescan-interval", K_FILE | K_SERVICE},
	[KEY_THREAD_NAMES] = {"thread_names", "--thread-names", K_FILE | K_SERVICE},
	[KEY_HOSTNAME] = {"hostname", "--hostname", K_FILE},
	[KEY_LABEL] = {"label", "--label", K_FILE | K_REPEAT | K_SERVICE},
	[KEY_RULE] = {"rule", "--rule", K_FILE | K_REPEAT | K_SERVICE},
	[KEY_LOG_LEVEL] = {"log_level", "--log-level", K_FILE},
	[KEY_PID] = {"pid", "--pid", K_REPEAT},
	[KEY_DURATION] = {"duration", "--duration", K_ONESHOT},
	[KEY_OUTPUT] = {"output", "--output", K_ONESHOT},
	[KEY_TOP] = {"top", "--top", K_ONESHOT},
	[KEY_UPLOAD_URL] = {"upload_url", "--upload-url", K_FILE | K_SERVICE},
	[KEY_UPLOAD_PROTOCOL] = {"upload_protocol", "--upload-protocol", K_FILE | K_SERVICE},
	[KEY_UPLOAD_TOKEN_FILE] = {"upload_token_file", "--upload-token-file", K_FILE | K_SERVICE},
	[KEY_UPLOAD_BASIC_AUTH_FILE] = {"upload_basic_auth_file", "--upload-basic-auth-file",
					K_FILE | K_SERVICE},
	[KEY_UPLOAD_TENANT_ID] = {"upload_tenant_id", "--upload-tenant-id", K_FILE | K_SERVICE},
	[KEY_UPLOAD_HEADER] = {"upload_header", "--upload-header", K_FILE | K_REPEAT | K_SERVICE},
	[KEY_UPLOAD_CA_FILE] = {"upload_ca_file", "--upload-ca-file", K_FILE | K_SERVICE},
	[KEY_UPLOAD_CONNECT_TIMEOUT] = {"upload_connect_timeout", "--upload-connect-timeout",
					K_FILE | K_SERVICE},
	[KEY_UPLOAD_TIMEOUT] = {"upload_timeout", "--upload-timeout", K_FILE | K_SERVICE},
	[KEY_UPLOAD_MAX_AGE] = {"upload_max_age", "--upload-max-age", K_FILE | K_SERVICE},
	[KEY_UPLOAD_BACKOFF_MAX] = {"upload_backoff_max", "--upload-backoff-max",
				    K_FILE | K_SERVICE},
	[KEY_UPLOAD_REJECTED_MAX_AGE] = {"upload_rejected_max_age", "--upload-rejected-max-age",
					 K_FILE | K_SERVICE},
	[KEY_FORMAT] = {"format", "--format", K_ONESHOT},
	[KEY_CLOCK] = {"clock", "--clock", K_FILE},
	[KEY_KERNEL_STACKS] = {"kernel_stacks", "--kernel-stacks", K_FILE},
	[KEY_NATIVE_PROCESSES] = {"native_processes", "--native-processes", K_FILE},
};

/* getopt values: a key's id above every char, and the flags that are no key. */
enum {
	OPT_KEY = 256, /* OPT_KEY + enum key_id */
	OPT_ONESHOT = OPT_KEY + NKEYS,
	OPT_CONFIG,
};

static const struct option options[] = {
	{"oneshot", no_argument, NULL, OPT_ONESHOT},
	{"config", required_argument, NULL, OPT_CONFIG},
	{"duration", required_argument, NULL, 'd'},
	{"frequency", required_argument, NULL, 'F'},
	{"pid", required_argument, NULL, 'p'},
	{"output", required_argument, NULL, 'o'},
	{"max-frames", required_argument, NULL, OPT_KEY + KEY_MAX_FRAMES},
	{"stacks", required_argument, NULL, OPT_KEY + KEY_STACKS},
	{"ustack-bytes", required_argument, NULL, OPT_KEY + KEY_USTACK_BYTES},
	{"clock", required_argument, NULL, OPT_KEY + KEY_CLOCK},
	{"kernel-stacks", optional_argument, NULL, OPT_KEY + KEY_KERNEL_STACKS},
	{"native-processes", required_argument, NULL, OPT_KEY + KEY_NATIVE_PROCESSES},
	{"top", required_argument, NULL, OPT_KEY + KEY_TOP},
	{"format", required_argument, NULL, OPT_KEY + KEY_FORMAT},
	{"interval", required_argument, NULL, OPT_KEY + KEY_INTERVAL},
	{"spool-dir", required_argument, NULL, OPT_KEY + KEY_SPOOL_DIR},
	{"spool-max-bytes", required_argument, NULL, OPT_KEY + KEY_SPOOL_MAX_BYTES},
	{"spool-max-age", required_argument, NULL, OPT_KEY + KEY_SPOOL_MAX_AGE},
	{"metrics-address", required_argument, NULL, OPT_KEY + KEY_METRICS_ADDRESS},
	{"rescan-interval", required_argument, NULL, OPT_KEY + KEY_RESCAN_INTERVAL},
	{"thread-names", required_argument, NULL, OPT_KEY + KEY_THREAD_NAMES},
	{"hostname", required_argument, NULL, OPT_KEY + KEY_HOSTNAME},
	{"label", required_argument, NULL, OPT_KEY + KEY_LABEL},
	{"rule", required_argument, NULL, OPT_KEY + KEY_RULE},
	{"log-level", required_argument, NULL, OPT_KEY + KEY_LOG_LEVEL},
	{"upload-url", required_argument, NULL, OPT_KEY + KEY_UPLOAD_URL},
	{"upload-protocol", required_argument, NULL, OPT_KEY + KEY_UPLOAD_PROTOCOL},
	{"upload-token-file", required_argument, NULL, OPT_KEY + KEY_UPLOAD_TOKEN_FILE},
	{"upload-basic-auth-file", required_argument, NULL, OPT_KEY + KEY_UPLOAD_BASIC_AUTH_FILE},
	{"upload-tenant-id", required_argument, NULL, OPT_KEY + KEY_UPLOAD_TENANT_ID},
	{"upload-header", required_argument, NULL, OPT_KEY + KEY_UPLOAD_HEADER},
	{"upload-ca-file", required_argument, NULL, OPT_KEY + KEY_UPLOAD_CA_FILE},
	{"upload-connect-timeout", required_argument, NULL, OPT_KEY + KEY_UPLOAD_CONNECT_TIMEOUT},
	{"upload-timeout", required_argument, NULL, OPT_KEY + KEY_UPLOAD_TIMEOUT},
	{"upload-max-age", required_argument, NULL, OPT_KEY + KEY_UPLOAD_MAX_AGE},
	{"upload-backoff-max", required_argument, NULL, OPT_KEY + KEY_UPLOAD_BACKOFF_MAX},
	{"upload-rejected-max-age", required_argument, NULL, OPT_KEY + KEY_UPLOAD_REJECTED_MAX_AGE},
	{"verbose", no_argument, NULL, 'v'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{0},
};

/* "+": stop at the first non-option, so that a COMMAND's own options stay its own. */
static const char short_options[] = "+d:F:p:o:vqhV";

void config_usage(FILE *out)
{
	fprintf(out,
		"Usage: rubyprofd [OPTIONS]                                  (the service)\n"
		"       rubyprofd --oneshot [OPTIONS] [-- COMMAND [ARGS...]]\n"
		"       rubyprofd report FILE.pb.gz... [OPTIONS]  (views of profiles: report -h)\n"
		"\n"
		"Profiles the CPU time of Ruby processes with eBPF, without stopping or changing "
		"them.\n"
		"The service profiles every Ruby process continuously and spools one pprof "
		"profile\n"
		"per interval; --oneshot profiles for a while, writes one profile (gzip'd\n"
		"perftools.profiles.Profile) and prints a summary.\n"
		"\n"
		"Both modes:\n"
		"      --config FILE     configuration file (the service's default: %s;\n"
		"                        --oneshot reads none unless given); flags win over it\n"
		"  -F, --frequency HZ    samples per second per CPU (default %d, --oneshot %d; "
		"at most %d)\n"
		"  -p, --pid PID         profile only this process (repeatable); default: every "
		"Ruby\n"
		"      --clock C         cpu (default: on-CPU samples) or wall (every Ruby "
		"thread,\n"
		"                        running or not, with its state; kernel 6.1+)\n"
		"      --max-frames N    Ruby frames kept per stack (default %d, at most %d);\n"
		"                        deeper stacks keep their leaf frames and a truncation "
		"frame\n"
		"      --stacks ruby|mixed  ruby: Ruby frames only (default, cheapest); mixed: "
		"also the\n"
		"                        native frames (C extensions, libruby, libc), unwound "
		"with CFI\n"
		"      --ustack-bytes SIZE  mixed: user stack copied per sample, 8K to 32K "
		"(default 16K)\n"
		"      --kernel-stacks[=yes|no]  mixed: kernel frames under the native ones "
		"(default no;\n"
		"                        their names need CAP_SYSLOG)\n"
		"      --native-processes ruby|all|PID,...  mixed: native stacks of processes "
		"that\n"
		"                        are no Ruby too: none (ruby, default), all, or those "
		"listed\n"
		"      --hostname NAME   host name in profiles and file names (default: the "
		"system's)\n"
		"      --log-level L     error, warn, info or debug (default: info; --oneshot: "
		"warn)\n"
		"  -v, --verbose         log level info (-vv: debug); wins over --log-level\n"
		"  -q, --quiet           log level error; wins over --log-level\n"
		"  -h, --help            this help\n"
		"  -V, --version         version\n"
		"\n"
		"The service only (each also a key of the file: spool-dir is spool_dir):\n"
		"      --interval S      seconds per profile, 1 to 3600 (default %g)\n"
		"      --spool-dir DIR   where profiles wait to be shipped (default %s)\n"
		"      --spool-max-bytes SIZE  spool bound, suffix K, M or G (default 256M, at "
		"least 1M)\n"
		"      --spool-max-age AGE     older profiles are dropped; suffix s, m, h or d "
		"(default 24h)\n"
		"      --metrics-address HOST:PORT  Prometheus endpoint, e.g. 127.0.0.1:9464 or "
		"[::1]:9464\n"
		"                        (default: none)\n"
		"      --rescan-interval S  seconds between full /proc rescans (default %g; 0: "
		"none)\n"
		"      --thread-names auto|yes|no  labels thread_name, ruby_thread and\n"
		"                        ruby_thread_name (auto: not when shipping to Pyroscope,\n"
		"                        which makes a series of each)\n"
		"      --label KEY=VALUE label added to every profile (repeatable, at most %d)\n"
		"      --rule RULE       service naming rule, tried before the file's (repeatable, "
		"at most %d):\n"
		"                        FIELD ~ REGEX => ignore | name=TEMPLATE "
		"[KEY=TEMPLATE...]\n"
		"\n"
		"Shipping to a collector (the service only; see docs/shipping.md):\n"
		"      --upload-url URL  collector to send every profile to, e.g. "
		"http://pyroscope:4040\n"
		"                        (default: none; the spool is the output)\n"
		"      --upload-protocol P  pyroscope, pyroscope-push or parca (default "
		"pyroscope)\n"
		"      --upload-token-file FILE  bearer token (Authorization: Bearer) read from "
		"FILE\n"
		"      --upload-basic-auth-file FILE  'user:password' for basic auth, read from "
		"FILE\n"
		"      --upload-tenant-id ID  X-Scope-OrgID header (multi-tenant Pyroscope, "
		"Mimir-style)\n"
		"      --upload-header 'NAME: VALUE'  extra header (repeatable, at most %d)\n"
		"      --upload-ca-file FILE  CA certificates (PEM) to verify an https:// "
		"collector\n"
		"      --upload-connect-timeout AGE  connect timeout (default 5s)\n"
		"      --upload-timeout AGE  timeout of a whole request (default 30s)\n"
		"      --upload-max-age AGE  profiles older than this are dropped, not sent "
		"(default 1h;\n"
		"                        0: never)\n"
		"      --upload-backoff-max AGE  longest wait between retries (default 5m)\n"
		"      --upload-rejected-max-age AGE  how long refused profiles stay in "
		"SPOOL_DIR/rejected\n"
		"                        (default 7d)\n"
		"\n"
		"With --oneshot only:\n"
		"      --oneshot         profile for a while, write one profile, print a summary\n"
		"  -d, --duration S      seconds to profile (default %g; with a COMMAND: until it "
		"exits)\n"
		"  -o, --output FILE     where to write the profile\n"
		"                        (default: ./rubyprofd-HOST-YYYYMMDD-HHMMSS.pb.gz)\n"
		"      --top N           lines in the summary's top list (default 15)\n"
		"      --format F        also write a view beside the profile: flamegraph, svg,\n"
		"                        speedscope, collapsed or top (see rubyprofd report -h)\n"
		"\n"
		"With a COMMAND, rubyprofd --oneshot starts it and profiles it and the Ruby "
		"processes it\n"
		"starts. SIGHUP makes the service re-read its file. See rubyprofd(8).\n"
		"Needs root, or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH.\n",
		CONFIG_DEFAULT_FILE, CONFIG_DEFAULT_SERVICE_FREQUENCY, CONFIG_DEFAULT_FREQUENCY,
		CONFIG_MAX_FREQUENCY, RP_MAX_FRAMES_DEFAULT, RP_MAX_FRAMES_LIMIT,
		CONFIG_DEFAULT_INTERVAL, CONFIG_DEFAULT_SPOOL_DIR, CONFIG_DEFAULT_RESCAN_INTERVAL,
		CONFIG_MAX_LABELS, CONFIG_MAX_RULES, CONFIG_MAX_UPLOAD_HEADERS,
		CONFIG_DEFAULT_DURATION);
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
	unsigned long v;
	char *end;

	if (!s || !all_digits(s, strlen(s)))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
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

static int parse_decimal_range(const char *s, double min, double max, double *out)
{
	double v;

	if (parse_decimal(s, strlen(s), &v) || v < min || v > max)
		return -EINVAL;
	*out = v;
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
	if (errno || v > (CONFIG_MAX_SPOOL_MAX_BYTES >> shift))
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

/* An absolute path that can be opened for reading now (a secret or CA file). */
static int check_readable(const char *val, char *dst, size_t dstlen, char *err, size_t errlen)
{
	size_t n = strlen(val);
	int fd;

	if (!n) {
		dst[0] = '\0'; /* none */
		return 0;
	}
	if (val[0] != '/' || n >= dstlen || has_control(val)) {
		snprintf(err, errlen, "'%s' is not an absolute path", val);
		return -EINVAL;
	}
	fd = open(val, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot read '%s': %s", val, strerror(errno));
		return -EINVAL;
	}
	close(fd);
	memcpy(dst, val, n + 1);
	return 0;
}

/* "3650d", "1h", "0.1s": a bound in the unit it reads best in. */
static const char *duration_text(double v, char *buf, size_t len)
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

/* A duration from min to max seconds (0 allowed when zero_ok). */
static int set_upload_seconds(char *err, size_t errlen, const char *val, double min, double max,
			      bool zero_ok, double *out)
{
	double v;

	char lo[32], hi[32];

	if (parse_duration(val, &v) || ((v < min || v > max) && !(zero_ok && v == 0))) {
		snprintf(err, errlen,
			 "'%s' is not %sa duration from %s to %s (a number with the suffix s, m, "
			 "h or d)",
			 val, zero_ok ? "0 or " : "", duration_text(min, lo, sizeof(lo)),
			 duration_text(max, hi, sizeof(hi)));
		return -EINVAL;
	}
	*out = v;
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

static int set_label(struct parse_ctx *ctx, const char *val)
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

static int set_log_level(struct config *cfg, const char *val)
{
	static const char *const names[] = {
		[LOG_LVL_ERROR] = "error",
		[LOG_LVL_WARN] = "warn",
		[LOG_LVL_INFO] = "info",
		[LOG_LVL_DEBUG] = "debug",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(val, names[i])) {
			cfg->log_level = (int)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int set_upload_header(struct parse_ctx *ctx, const char *val)
{
	struct config *cfg = ctx->cfg;
	size_t n = strlen(val), namelen, i;
	char *h = NULL;

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
		h = cfg->upload_headers[i];
		break;
	}
	if (!h) {
		if (cfg->nupload_headers == CONFIG_MAX_UPLOAD_HEADERS) {
			snprintf(ctx->err, sizeof(ctx->err),
				 "more than %d headers (file and flags)",
				 CONFIG_MAX_UPLOAD_HEADERS);
			return -E2BIG;
		}
		h = cfg->upload_headers[cfg->nupload_headers++];
	}
	memcpy(h, val, n + 1);
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
 * Checks val and stores it; on error, ctx->err says what is wrong (the caller names the place).
 * where: "FILE:LINE" or the flag, kept with a rule.
 */
static int key_set(struct parse_ctx *ctx, enum key_id id, const char *val, const char *where)
{
	struct config *cfg = ctx->cfg;
	char *err = ctx->err;
	size_t errlen = sizeof(ctx->err);
	unsigned long v;
	size_t n = strlen(val);

	switch (id) {
	case KEY_FREQUENCY:
		if (parse_uint(val, 1, CONFIG_MAX_FREQUENCY, &v)) {
			snprintf(err, errlen, "'%s' is not a number from 1 to %d", val,
				 CONFIG_MAX_FREQUENCY);
			return -EINVAL;
		}
		cfg->frequency = (unsigned int)v;
		return 0;
	case KEY_INTERVAL:
		if (parse_decimal_range(val, 1, CONFIG_MAX_INTERVAL, &cfg->interval)) {
			snprintf(err, errlen, "'%s' is not a number of seconds from 1 to %g", val,
				 CONFIG_MAX_INTERVAL);
			return -EINVAL;
		}
		return 0;
	case KEY_MAX_FRAMES:
		if (parse_uint(val, 1, RP_MAX_FRAMES_LIMIT, &v)) {
			snprintf(err, errlen, "'%s' is not a number from 1 to %d", val,
				 RP_MAX_FRAMES_LIMIT);
			return -EINVAL;
		}
		cfg->max_frames = (unsigned int)v;
		return 0;
	case KEY_STACKS:
		if (strcmp(val, "ruby") != 0 && strcmp(val, "mixed") != 0) {
			snprintf(err, errlen, "'%s' is not ruby or mixed", val);
			return -EINVAL;
		}
		cfg->stacks_mixed = strcmp(val, "mixed") == 0;
		return 0;
	case KEY_USTACK_BYTES: {
		uint64_t bytes;

		if (parse_size(val, &bytes) || bytes < RP_USTACK_MIN || bytes > RP_USTACK_MAX) {
			snprintf(err, errlen,
				 "'%s' is not a size from 8K to 32K (bytes, or a number with the "
				 "suffix K)",
				 val);
			return -EINVAL;
		}
		cfg->ustack_bytes = (unsigned int)bytes;
		return 0;
	}
	case KEY_KERNEL_STACKS:
		if (strcmp(val, "yes") && strcmp(val, "no")) {
			snprintf(err, errlen, "'%s' is not yes or no", val);
			return -EINVAL;
		}
		cfg->kernel_stacks = strcmp(val, "yes") == 0;
		return 0;
	case KEY_NATIVE_PROCESSES:
		return set_native_processes(cfg, val, err, errlen);
	case KEY_CLOCK:
		if (strcmp(val, "cpu") && strcmp(val, "wall")) {
			snprintf(err, errlen, "'%s' is not cpu or wall", val);
			return -EINVAL;
		}
		cfg->clock_wall = strcmp(val, "wall") == 0;
		return 0;
	case KEY_SPOOL_DIR:
		if (val[0] != '/' || n >= sizeof(cfg->spool_dir) || has_control(val)) {
			snprintf(err, errlen, "'%s' is not an absolute path", val);
			return -EINVAL;
		}
		memcpy(cfg->spool_dir, val, n + 1);
		return 0;
	case KEY_SPOOL_MAX_BYTES:
		if (parse_size(val, &cfg->spool_max_bytes) ||
		    cfg->spool_max_bytes < CONFIG_MIN_SPOOL_MAX_BYTES) {
			snprintf(err, errlen,
				 "'%s' is not a size from 1M to 1048576G (bytes, or a number with "
				 "the suffix K, M or G)",
				 val);
			return -EINVAL;
		}
		return 0;
	case KEY_SPOOL_MAX_AGE:
		if (parse_duration(val, &cfg->spool_max_age) || cfg->spool_max_age < 1 ||
		    cfg->spool_max_age > CONFIG_MAX_SPOOL_MAX_AGE) {
			snprintf(err, errlen,
				 "'%s' is not a duration from 1s to 3650d (a number with the "
				 "suffix s, m, h or d)",
				 val);
			return -EINVAL;
		}
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
	case KEY_THREAD_NAMES:
		if (strcmp(val, "auto") == 0) {
			cfg->thread_names = CONFIG_THREAD_NAMES_AUTO;
		} else if (strcmp(val, "yes") == 0) {
			cfg->thread_names = CONFIG_THREAD_NAMES_YES;
		} else if (strcmp(val, "no") == 0) {
			cfg->thread_names = CONFIG_THREAD_NAMES_NO;
		} else {
			snprintf(err, errlen, "'%s' is not auto, yes or no", val);
			return -EINVAL;
		}
		return 0;
	case KEY_RESCAN_INTERVAL:
		if (parse_decimal(val, n, &cfg->rescan_interval) ||
		    (cfg->rescan_interval != 0 && cfg->rescan_interval < 1) ||
		    cfg->rescan_interval > CONFIG_MAX_RESCAN_INTERVAL) {
			snprintf(err, errlen,
				 "'%s' is not 0 (no rescans) or a number of seconds from 1 to %g",
				 val, CONFIG_MAX_RESCAN_INTERVAL);
			return -EINVAL;
		}
		return 0;
	case KEY_HOSTNAME:
		/* it ends up in file names and labels */
		if (n >= sizeof(cfg->hostname) || strpbrk(val, "/ \t") || has_control(val)) {
			snprintf(err, errlen,
				 "'%s' is not a host name (at most %zu bytes, without '/', blanks "
				 "or control characters)",
				 val, sizeof(cfg->hostname) - 1);
			return -EINVAL;
		}
		memcpy(cfg->hostname, val, n + 1);
		return 0;
	case KEY_LABEL:
		return set_label(ctx, val);
	case KEY_RULE:
		return set_rule(ctx, val, where);
	case KEY_LOG_LEVEL:
		if (set_log_level(cfg, val)) {
			snprintf(err, errlen, "'%s' is not one of error, warn, info, debug", val);
			return -EINVAL;
		}
		return 0;
	case KEY_PID:
		if (parse_uint(val, 1, INT_MAX, &v)) {
			snprintf(err, errlen, "'%s' is not a process id", val);
			return -EINVAL;
		}
		if (cfg->npids == CONFIG_MAX_PIDS) {
			snprintf(err, errlen, "more than %d process ids", CONFIG_MAX_PIDS);
			return -E2BIG;
		}
		cfg->pids[cfg->npids++] = (pid_t)v;
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
	case KEY_TOP:
		if (parse_uint(val, 0, 10000, &v)) {
			snprintf(err, errlen, "'%s' is not a number from 0 to 10000", val);
			return -EINVAL;
		}
		cfg->top = (unsigned int)v;
		return 0;
	case KEY_UPLOAD_URL:
		if (n && check_url(val, err, errlen))
			return -EINVAL;
		memcpy(cfg->upload_url, val, n + 1);
		return 0;
	case KEY_UPLOAD_PROTOCOL: {
		enum ingest_protocol p;

		if (ingest_protocol_parse(val, &p)) {
			snprintf(err, errlen, "'%s' is not one of pyroscope, pyroscope-push, parca",
				 val);
			return -EINVAL;
		}
		cfg->upload_protocol = (unsigned int)p;
		return 0;
	}
	case KEY_UPLOAD_TOKEN_FILE:
		return check_readable(val, cfg->upload_token_file, sizeof(cfg->upload_token_file),
				      err, errlen);
	case KEY_UPLOAD_BASIC_AUTH_FILE:
		return check_readable(val, cfg->upload_basic_auth_file,
				      sizeof(cfg->upload_basic_auth_file), err, errlen);
	case KEY_UPLOAD_CA_FILE:
		return check_readable(val, cfg->upload_ca_file, sizeof(cfg->upload_ca_file), err,
				      errlen);
	case KEY_UPLOAD_TENANT_ID:
		if (n >= sizeof(cfg->upload_tenant_id) || has_control(val)) {
			snprintf(err, errlen,
				 "'%s' is not a tenant id (at most %zu bytes, no control "
				 "characters)",
				 val, sizeof(cfg->upload_tenant_id) - 1);
			return -EINVAL;
		}
		memcpy(cfg->upload_tenant_id, val, n + 1);
		return 0;
	case KEY_UPLOAD_HEADER:
		return set_upload_header(ctx, val);
	case KEY_UPLOAD_CONNECT_TIMEOUT:
		return set_upload_seconds(err, errlen, val, 0.1, 600, false,
					  &cfg->upload_connect_timeout);
	case KEY_UPLOAD_TIMEOUT:
		return set_upload_seconds(err, errlen, val, 1, 3600, false, &cfg->upload_timeout);
	case KEY_UPLOAD_MAX_AGE:
		return set_upload_seconds(err, errlen, val, 1, CONFIG_MAX_SPOOL_MAX_AGE, true,
					  &cfg->upload_max_age);
	case KEY_UPLOAD_BACKOFF_MAX:
		return set_upload_seconds(err, errlen, val, 1, 24 * 3600, false,
					  &cfg->upload_backoff_max);
	case KEY_UPLOAD_REJECTED_MAX_AGE:
		return set_upload_seconds(err, errlen, val, 1, CONFIG_MAX_SPOOL_MAX_AGE, false,
					  &cfg->upload_rejected_max_age);
	case KEY_FORMAT: /* only from argv, as --output */
		if (!view_format_ext(val)) {
			snprintf(err, errlen,
				 "'%s' is not flamegraph, svg, speedscope, collapsed or top", val);
			return -EINVAL;
		}
		cfg->format = val;
		return 0;
	case NKEYS:
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
 * Reads one line, without its newline, into buf (CONFIG_MAX_LINE + 1 bytes). Returns 1 for a
 * line, 0 at the end, -EFBIG for a line too long or -EINVAL for a NUL byte (the rest of the line
 * is skipped either way), -errno when reading fails.
 */
static int read_line(FILE *f, char *buf)
{
	size_t n = 0;
	bool any = false, too_long = false, nul = false;
	int c;

	errno = 0;
	while ((c = getc(f)) != EOF) {
		any = true;
		if (c == '\n')
			break;
		if (c == '\0')
			nul = true;
		if (n == CONFIG_MAX_LINE)
			too_long = true;
		else
			buf[n++] = (char)c;
	}
	if (c == EOF && ferror(f))
		return errno ? -errno : -EIO;
	buf[n] = '\0';
	if (!any)
		return 0;
	if (too_long)
		return -EFBIG;
	return nul ? -EINVAL : 1;
}

static const struct key_def *find_key(const char *name, enum key_id *id)
{
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		if (!strcmp(keys[i].name, name)) {
			*id = (enum key_id)i;
			return &keys[i];
		}
	}
	return NULL;
}

static void unknown_key(const char *path, unsigned int line, const char *key)
{
	const struct key_def *k;
	char alt[64];
	enum key_id id;
	size_t i;

	k = find_key(key, &id);
	if (k) {
		fprintf(stderr,
			"rubyprofd: %s:%u: unknown key '%s' (%s is a command-line flag only)\n",
			path, line, key, k->flag);
		return;
	}
	/* the flag's spelling: say which key is meant */
	for (i = 0; key[i] && i + 1 < sizeof(alt); i++)
		alt[i] = key[i] == '-' ? '_' : key[i];
	alt[i] = '\0';
	k = find_key(alt, &id);
	if (!key[i] && k && (k->flags & K_FILE)) {
		fprintf(stderr, "rubyprofd: %s:%u: unknown key '%s' (did you mean '%s'?)\n", path,
			line, key, k->name);
		return;
	}
	fprintf(stderr, "rubyprofd: %s:%u: unknown key '%s'\n", path, line, key);
}

/* Reads the file into ctx->cfg. optional: a missing file is no error (the service's default). */
static int read_file(struct parse_ctx *ctx, const char *path, bool optional)
{
	unsigned int seen[NKEYS] = {0};
	char buf[CONFIG_MAX_LINE + 1];
	char where[PATH_MAX + 16];
	unsigned int line = 0;
	FILE *f;
	int err = 0, r;

	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		if (optional && err == -ENOENT) {
			ctx->cfg->config_file_missing = true;
			return 0;
		}
		fprintf(stderr, "rubyprofd: cannot read '%s': %s\n", path, strerror(-err));
		return err;
	}
	for (;;) {
		const struct key_def *k;
		enum key_id id;
		char *key, *val, *eq;

		r = read_line(f, buf);
		if (r == 0)
			break;
		line++;
		if (r == -EFBIG || r == -EINVAL) {
			fprintf(stderr, "rubyprofd: %s:%u: %s\n", path, line,
				r == -EFBIG ? "line longer than 4096 bytes"
					    : "line with a NUL byte");
			err = r;
			goto cleanup;
		}
		if (r < 0) {
			fprintf(stderr, "rubyprofd: cannot read '%s': %s\n", path, strerror(-r));
			err = r;
			goto cleanup;
		}
		key = trim(buf);
		if (!*key || *key == '#')
			continue;
		eq = strchr(key, '=');
		if (!eq || eq == key) {
			fprintf(stderr, "rubyprofd: %s:%u: line is not 'key = value'\n", path,
				line);
			err = -EINVAL;
			goto cleanup;
		}
		*eq = '\0';
		key = trim(key);
		val = trim(eq + 1);
		k = find_key(key, &id);
		if (!k || !(k->flags & K_FILE)) {
			unknown_key(path, line, key);
			err = -EINVAL;
			goto cleanup;
		}
		if (seen[id] && !(k->flags & K_REPEAT)) {
			fprintf(stderr, "rubyprofd: %s:%u: %s: given twice (first on line %u)\n",
				path, line, key, seen[id]);
			err = -EINVAL;
			goto cleanup;
		}
		seen[id] = line;
		snprintf(where, sizeof(where), "%s:%u", path, line);
		err = unquote(val, ctx->err, sizeof(ctx->err));
		if (!err)
			err = key_set(ctx, id, val, where);
		if (err) {
			fprintf(stderr, "rubyprofd: %s:%u: %s: %s\n", path, line, key, ctx->err);
			goto cleanup;
		}
	}
cleanup:
	fclose(f);
	return err;
}

/* ---- argv --------------------------------------------------------------------------------- */

static int opt_key(int c)
{
	switch (c) {
	case 'd':
		return KEY_DURATION;
	case 'F':
		return KEY_FREQUENCY;
	case 'p':
		return KEY_PID;
	case 'o':
		return KEY_OUTPUT;
	default:
		return c >= OPT_KEY && c < OPT_KEY + NKEYS ? c - OPT_KEY : -1;
	}
}

static void bad_option(char **argv)
{
	if (optopt && optopt < 256)
		fprintf(stderr, "rubyprofd: unknown or incomplete option '-%c'\n", optopt);
	else
		fprintf(stderr, "rubyprofd: unknown or incomplete option '%s'\n", argv[optind - 1]);
	fprintf(stderr, "Try 'rubyprofd --help'.\n");
}

/* The first pass: the mode, the file, --help, --version and unknown options; nothing else. */
static enum config_result scan_mode(struct config *cfg, int argc, char **argv)
{
	int c;

	optind = 0; /* 0, not 1: glibc then forgets everything of an earlier parse */
	opterr = 0;
	while ((c = getopt_long(argc, argv, short_options, options, NULL)) != -1) {
		switch (c) {
		case OPT_ONESHOT:
			cfg->oneshot = true;
			break;
		case OPT_CONFIG:
			if (!*optarg) {
				fprintf(stderr, "rubyprofd: --config: the file name is empty\n");
				return CONFIG_EXIT_BAD;
			}
			cfg->config_file = optarg;
			break;
		case 'h':
			config_usage(stdout);
			return CONFIG_EXIT_OK;
		case 'V':
			printf("rubyprofd %s\n", RUBYPROF_VERSION);
			return CONFIG_EXIT_OK;
		case '?':
		case ':':
			bad_option(argv);
			return CONFIG_EXIT_BAD;
		}
	}
	return CONFIG_RUN;
}

/* The service's keys; with --oneshot they keep these, whatever the file says. */
static void set_service_defaults(struct config *cfg)
{
	cfg->interval = CONFIG_DEFAULT_INTERVAL;
	snprintf(cfg->spool_dir, sizeof(cfg->spool_dir), "%s", CONFIG_DEFAULT_SPOOL_DIR);
	cfg->spool_max_bytes = CONFIG_DEFAULT_SPOOL_MAX_BYTES;
	cfg->spool_max_age = CONFIG_DEFAULT_SPOOL_MAX_AGE;
	cfg->metrics_address[0] = '\0';
	cfg->rescan_interval = CONFIG_DEFAULT_RESCAN_INTERVAL;
	cfg->thread_names = CONFIG_THREAD_NAMES_AUTO;
	cfg->nlabels = 0;
	cfg->nrules = 0;
	cfg->upload_url[0] = '\0';
	cfg->upload_protocol = INGEST_PYROSCOPE;
	cfg->upload_token_file[0] = '\0';
	cfg->upload_basic_auth_file[0] = '\0';
	cfg->upload_tenant_id[0] = '\0';
	cfg->nupload_headers = 0;
	cfg->upload_ca_file[0] = '\0';
	cfg->upload_connect_timeout = CONFIG_DEFAULT_UPLOAD_CONNECT_TIMEOUT;
	cfg->upload_timeout = CONFIG_DEFAULT_UPLOAD_TIMEOUT;
	cfg->upload_max_age = CONFIG_DEFAULT_UPLOAD_MAX_AGE;
	cfg->upload_backoff_max = CONFIG_DEFAULT_UPLOAD_BACKOFF_MAX;
	cfg->upload_rejected_max_age = CONFIG_DEFAULT_UPLOAD_REJECTED_MAX_AGE;
}

static void set_defaults(struct config *cfg)
{
	cfg->frequency = cfg->oneshot ? CONFIG_DEFAULT_FREQUENCY : CONFIG_DEFAULT_SERVICE_FREQUENCY;
	cfg->max_frames = RP_MAX_FRAMES_DEFAULT;
	cfg->stacks_mixed = false;
	cfg->ustack_bytes = RP_USTACK_DEFAULT;
	cfg->top = 15;
	cfg->hostname[0] = '\0';
	cfg->log_level = cfg->oneshot ? -1 : LOG_LVL_INFO;
	set_service_defaults(cfg);
}

/* The second pass: every flag over the file's values. */
static enum config_result apply_flags(struct parse_ctx *ctx, int argc, char **argv)
{
	struct config *cfg = ctx->cfg;
	int c, id;

	optind = 0;
	opterr = 0;
	ctx->from_flags = true;
	while ((c = getopt_long(argc, argv, short_options, options, NULL)) != -1) {
		switch (c) {
		case 'v':
			cfg->verbose++;
			continue;
		case 'q':
			cfg->quiet = true;
			continue;
		}
		id = opt_key(c);
		if (id < 0)
			continue; /* seen in the first pass */
		if ((keys[id].flags & K_ONESHOT) && !cfg->oneshot) {
			fprintf(stderr, "rubyprofd: %s: only with --oneshot\n", keys[id].flag);
			return CONFIG_EXIT_BAD;
		}
		if ((keys[id].flags & K_SERVICE) && cfg->oneshot) {
			fprintf(stderr, "rubyprofd: %s: only for the service, not with --oneshot\n",
				keys[id].flag);
			return CONFIG_EXIT_BAD;
		}
		/* --kernel-stacks alone says yes */
		if (key_set(ctx, (enum key_id)id, optarg ? optarg : "yes", keys[id].flag)) {
			fprintf(stderr, "rubyprofd: %s: %s\n", keys[id].flag, ctx->err);
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

	memset(cfg, 0, sizeof(*cfg));
	res = scan_mode(cfg, argc, argv);
	if (res != CONFIG_RUN)
		return res;
	set_defaults(cfg);

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

	res = apply_flags(&ctx, argc, argv);
	if (res != CONFIG_RUN)
		return res;
	flag_rules_first(cfg, ctx.nfile_rules);

	if (cfg->command && !cfg->oneshot) {
		fprintf(stderr, "rubyprofd: a COMMAND ('%s'): only with --oneshot\n",
			cfg->command[0]);
		return CONFIG_EXIT_BAD;
	}
	if (cfg->command && cfg->npids) {
		fprintf(stderr, "rubyprofd: give either --pid or a COMMAND, not both\n");
		return CONFIG_EXIT_BAD;
	}
	/* both add to the native half of a sample, which Ruby-only stacks do not have */
	if (!cfg->stacks_mixed && (cfg->kernel_stacks || cfg->native_procs != RP_NATIVE_RUBY)) {
		fprintf(stderr, "rubyprofd: %s: only with stacks = mixed (--stacks mixed)\n",
			cfg->kernel_stacks ? "kernel_stacks (--kernel-stacks)"
					   : "native_processes (--native-processes)");
		return CONFIG_EXIT_BAD;
	}
	if (cfg->oneshot) {
		if (!cfg->duration && !cfg->command)
			cfg->duration = CONFIG_DEFAULT_DURATION;
		/* the file serves both modes: its service keys were checked, but do not apply */
		set_service_defaults(cfg);
	}
	if (cfg->quiet)
		cfg->log_level = LOG_LVL_ERROR;
	else if (cfg->verbose > 1)
		cfg->log_level = LOG_LVL_DEBUG;
	else if (cfg->verbose)
		cfg->log_level = LOG_LVL_INFO;
	return CONFIG_RUN;
}

enum config_result config_parse(struct config *cfg, int argc, char **argv)
{
	return config_parse_with_default(cfg, argc, argv, CONFIG_DEFAULT_FILE);
}
