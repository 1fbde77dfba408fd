// SPDX-License-Identifier: GPL-2.0-only
/*
 * config_keys.c - the table of every configuration key and flag (config_keys.h says what reads
 * it). The order is --help's: both modes, the service, shipping, --oneshot.
 */
#include <stddef.h>
#include <string.h>

#include "cmd/config.h"
#include "cmd/config_keys.h"
#include "rubyprof.h"

static const char *const stacks_values[] = {"ruby", "mixed", NULL};
static const char *const clock_values[] = {"cpu", "wall", NULL};
static const char *const yes_no[] = {"yes", "no", NULL};
static const char *const thread_names_values[] = {"auto", "yes", "no", NULL};
static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const protocols[] = {"pyroscope", "pyroscope-push", "parca", NULL};
static const char *const formats[] = {"flamegraph", "svg", "speedscope", "collapsed", "top", NULL};

#define DAY (24 * 3600.0)

const struct config_key config_keys[NKEYS] = {
	[KEY_CONFIG] =
		{
			.name = "config",
			.arg = "FILE",
			.type = KT_TEXT,
			.syntax = "an absolute or relative path",
			.help = "configuration file (the service's default: "
				"/etc/rubyprofd/rubyprofd.conf; "
				"--oneshot reads none unless given); flags win over it",
			.doc = "Read the configuration from this file. The service's default is "
			       "`/etc/rubyprofd/rubyprofd.conf`, which may be missing (then every "
			       "key has "
			       "its default); a file named here must exist. With `--oneshot` no "
			       "file is "
			       "read unless this flag names one, and the file's service keys are "
			       "checked but "
			       "not used, so that one file serves both modes. A file that a user "
			       "other than root (or the daemon's own) could change is refused "
			       "(Trusted "
			       "files in docs/configuration.md).",
		},
	[KEY_FREQUENCY] =
		{
			.name = "frequency",
			.short_opt = 'F',
			.arg = "HZ",
			.flags = K_FILE,
			.type = KT_UINT,
			CONFIG_FIELD(frequency),
			.min = 1,
			.max = 10000,
			.def = "19",
			.def_oneshot = "99",
			.reload = RELOAD_YES,
			.help = "samples per second per CPU",
			.doc = "Samples per second on each CPU. A change ends the interval in "
			       "progress "
			       "first, so that no profile mixes two periods. An odd rate does not "
			       "beat in "
			       "step with periodic work.",
		},
	[KEY_PID] =
		{
			.name = "pid",
			.short_opt = 'p',
			.arg = "PID",
			.flags = K_REPEAT,
			.type = KT_TEXT,
			.syntax = "a process id, repeatable (at most 256)",
			.help = "profile only this process (repeatable); default: every Ruby",
			.doc = "Profile only this process (its pid as rubyprofd's pid namespace "
			       "sees it); "
			       "repeatable. Default: every Ruby process. `--oneshot` ends when all "
			       "of them "
			       "have exited.",
		},
	[KEY_CLOCK] =
		{
			.name = "clock",
			.arg = "C",
			.flags = K_FILE,
			.type = KT_ENUM,
			CONFIG_FIELD(clock_wall),
			.truth = "wall",
			.values = clock_values,
			.def = "cpu",
			.reload = RELOAD_RESTART,
			.help = "cpu: on-CPU samples; wall: every Ruby thread, running or not, "
				"with its "
				"state, kernel 6.1+",
			.doc = "`cpu`: on-CPU samples (cpu-clock events on every CPU). `wall`: "
			       "every Ruby "
			       "thread of every profiled process gets a sample per tick at "
			       "`frequency`, "
			       "running or not, weighted with the period (sample types "
			       "`samples/count` and "
			       "`wall/nanoseconds`), with a `thread_state` label (`running`, "
			       "`gvl_wait`, "
			       "`sleeping`, `blocked_io`, `stopped`); needs Linux 6.1 (refused "
			       "with the "
			       "reason on older kernels) and a Ruby with thread-list offsets (2.7, "
			       "3.1 to "
			       "3.4). See docs/wall-clock.md.",
		},
	[KEY_MAX_FRAMES] =
		{
			.name = "max_frames",
			.arg = "N",
			.flags = K_FILE,
			.type = KT_UINT,
			CONFIG_FIELD(max_frames),
			.min = 1,
			.max = RP_MAX_FRAMES_LIMIT,
			.def = "4096",
			.reload = RELOAD_RESTART,
			.help = "Ruby frames kept per stack; deeper stacks keep their leaf frames "
				"and a "
				"truncation frame",
			.doc = "Ruby frames kept per stack; a deeper stack keeps its leaf frames "
			       "and a "
			       "truncation frame, `[truncated: N frames]`, counted.",
		},
	[KEY_STACKS] =
		{
			.name = "stacks",
			.arg = "ruby|mixed",
			.flags = K_FILE,
			.type = KT_ENUM,
			CONFIG_FIELD(stacks_mixed),
			.truth = "mixed",
			.values = stacks_values,
			.def = "ruby",
			.reload = RELOAD_RESTART,
			.help = "ruby: Ruby frames only (the cheapest); mixed: also the native "
				"frames (C "
				"extensions, libruby, libc), unwound with CFI",
			.doc = "`ruby`: Ruby frames only (the cheapest). `mixed`: also the native "
			       "frames "
			       "(C extensions, libruby, libc) above each Ruby stack, unwound with "
			       "CFI; see "
			       "docs/native-stacks.md.",
		},
	[KEY_USTACK_BYTES] =
		{
			.name = "ustack_bytes",
			.arg = "SIZE",
			.flags = K_FILE,
			.type = KT_SIZE,
			CONFIG_FIELD(ustack_bytes),
			.min = RP_USTACK_MIN,
			.max = RP_USTACK_MAX,
			.def = "16K",
			.reload = RELOAD_RESTART,
			.help = "mixed: user stack copied per sample",
			.doc = "With `stacks = mixed`: bytes of user stack copied above the stack "
			       "pointer "
			       "per sample. A deeper native stack is marked truncated.",
		},
	[KEY_KERNEL_STACKS] =
		{
			.name = "kernel_stacks",
			.arg = "yes|no",
			.flags = K_FILE | K_OPTARG,
			.type = KT_ENUM,
			CONFIG_FIELD(kernel_stacks),
			.truth = "yes",
			.values = yes_no,
			.def = "no",
			.reload = RELOAD_RESTART,
			.help = "mixed: kernel frames under the native ones (their names need "
				"CAP_SYSLOG)",
			.doc = "With `stacks = mixed`: each sample's kernel frames too (a tick in "
			       "a system "
			       "call or a page fault), as the leaves under its native frames, "
			       "named from "
			       "`/proc/kallsyms`; the flag alone means `yes`. Their names need "
			       "CAP_SYSLOG "
			       "(kernel.kptr_restrict), which the packaged unit does not grant: "
			       "see the "
			       "comment in `rubyprofd.service` and docs/native-stacks.md.",
		},
	[KEY_NATIVE_PROCESSES] =
		{
			.name = "native_processes",
			.arg = "ruby|all|PID,...",
			.flags = K_FILE,
			.type = KT_TEXT,
			.syntax = "`ruby`, `all` or a comma-separated list of pids",
			.def = "ruby",
			.reload = RELOAD_RESTART,
			.help = "mixed: native stacks of processes that are no Ruby too: none "
				"(ruby), all, "
				"or those listed",
			.doc = "With `stacks = mixed`: `ruby` samples Ruby processes only; `all` "
			       "also "
			       "samples the native stacks of every other user process (a "
			       "system-wide "
			       "profiler), a comma-separated list of pids (`1234,5678`, at most "
			       "256) those "
			       "processes only. Each is named as a Ruby would be (rules, unit, "
			       "container, "
			       "program name).",
		},
	[KEY_HOSTNAME] =
		{
			.name = "hostname",
			.arg = "NAME",
			.flags = K_FILE,
			.type = KT_TEXT,
			.syntax = "at most 255 bytes, no `/`, blanks or control characters",
			.def = "",
			.none = "the system's, read when a profile is written",
			.reload = RELOAD_RESTART,
			.help = "host name in profiles and file names (default: the system's)",
			.doc = "Host name written into profiles and file names.",
		},
	[KEY_LOG_LEVEL] =
		{
			.name = "log_level",
			.arg = "L",
			.flags = K_FILE | K_ONE_OF,
			.type = KT_ENUM,
			CONFIG_FIELD(log_level),
			.values = log_levels,
			.def = "info",
			.def_oneshot = "warn",
			.reload = RELOAD_YES,
			.help = "error, warn, info or debug",
			.doc = "What is logged (to the journal under the packaged unit). `-q` "
			       "(error), "
			       "`-v` (info) and `-vv` (debug) win over it.",
		},
	[KEY_VERBOSE] =
		{
			.name = "verbose",
			.short_opt = 'v',
			.type = KT_SWITCH,
			.help = "log level info (-vv: debug); wins over --log-level",
			.doc = "Log level `info`; given twice, `debug`. Wins over `--log-level` "
			       "and the "
			       "file.",
		},
	[KEY_QUIET] =
		{
			.name = "quiet",
			.short_opt = 'q',
			.type = KT_SWITCH,
			.help = "log level error; wins over --log-level",
			.doc = "Log level `error`. Wins over `--log-level`, the file and `-v`.",
		},
	[KEY_CHECK_CONFIG] =
		{
			.name = "check_config",
			.type = KT_SWITCH,
			.help = "check the configuration, print it as it takes effect, exit "
				"(0: valid, 2: not)",
			.doc = "Read the configuration file and the flags as the service would, "
			       "check "
			       "every value (and the naming rules, the files it names and their "
			       "modes), print the configuration that would take effect, each key "
			       "with where its value comes from, and exit: 0 when it is valid, 2 "
			       "when not, with the error on standard error. The unit's "
			       "`ExecReload` "
			       "runs it first, so `systemctl reload` fails on a broken file. The "
			       "values of extra headers (secrets) are not printed.",
		},
	[KEY_HELP] =
		{
			.name = "help",
			.short_opt = 'h',
			.type = KT_SWITCH,
			.help = "this help",
			.doc = "Print a summary of the options and exit.",
		},
	[KEY_VERSION] =
		{
			.name = "version",
			.short_opt = 'V',
			.type = KT_SWITCH,
			.help = "version",
			.doc = "Print the version and exit.",
		},

	[KEY_INTERVAL] =
		{
			.name = "interval",
			.arg = "S",
			.flags = K_FILE | K_SERVICE,
			.type = KT_SECONDS,
			CONFIG_FIELD(interval),
			.min = 1,
			.max = 3600,
			.def = "10",
			.reload = RELOAD_YES,
			.help = "seconds per profile",
			.doc = "Seconds of samples per profile written to the spool.",
		},
	[KEY_SPOOL_DIR] =
		{
			.name = "spool_dir",
			.arg = "DIR",
			.flags = K_FILE | K_SERVICE,
			.type = KT_TEXT,
			.syntax = "an absolute path",
			.def = "/var/lib/rubyprofd/spool",
			.reload = RELOAD_RESTART,
			.help = "where profiles wait to be shipped",
			.doc = "Where profiles (`*.pb.gz` with a `*.json` sidecar) wait to be "
			       "shipped. The "
			       "packaged unit can write only under `/var/lib/rubyprofd`. Missing "
			       "directories are created (mode 0750); one that a user other than "
			       "root could write is refused at start (Trusted files in "
			       "docs/configuration.md).",
		},
	[KEY_SPOOL_MAX_BYTES] =
		{
			.name = "spool_max_bytes",
			.arg = "SIZE",
			.flags = K_FILE | K_SERVICE,
			.type = KT_SIZE,
			CONFIG_FIELD(spool_max_bytes),
			.min = 1 << 20,
			.max = 1ULL << 50,
			.def = "256M",
			.reload = RELOAD_YES,
			.help = "spool bound",
			.doc = "Size bound of the spool; the oldest profiles go first.",
		},
	[KEY_SPOOL_MAX_AGE] =
		{
			.name = "spool_max_age",
			.arg = "AGE",
			.flags = K_FILE | K_SERVICE,
			.type = KT_DURATION,
			CONFIG_FIELD(spool_max_age),
			.min = 1,
			.max = 3650 * DAY,
			.def = "24h",
			.reload = RELOAD_YES,
			.help = "older profiles are dropped",
			.doc = "Spooled profiles older than this are removed.",
		},
	[KEY_METRICS_ADDRESS] =
		{
			.name = "metrics_address",
			.arg = "HOST:PORT",
			.flags = K_FILE | K_SERVICE,
			.type = KT_TEXT,
			.syntax =
				"`HOST:PORT`, a numeric address: `127.0.0.1:9464` or `[::1]:9464`",
			.def = "",
			.none = "no endpoint",
			.reload = RELOAD_RESTART,
			.help = "Prometheus endpoint, e.g. 127.0.0.1:9464 or [::1]:9464",
			.doc = "Where the Prometheus text endpoint (`/metrics`) listens; see "
			       "docs/metrics.md.",
			.example = "127.0.0.1:9464",
		},
	[KEY_RESCAN_INTERVAL] =
		{
			.name = "rescan_interval",
			.arg = "S",
			.flags = K_FILE | K_SERVICE,
			.type = KT_SECONDS,
			CONFIG_FIELD(rescan_interval),
			.min = 1,
			.max = 3600,
			.zero = "no rescans",
			.def = "30",
			.reload = RELOAD_RESTART,
			.help = "seconds between full /proc rescans",
			.doc = "Seconds between full `/proc` rescans, a safety net beside "
			       "event-driven "
			       "discovery.",
		},
	[KEY_THREAD_NAMES] =
		{
			.name = "thread_names",
			.arg = "auto|yes|no",
			.flags = K_FILE | K_SERVICE,
			.type = KT_ENUM,
			CONFIG_FIELD(thread_names),
			.values = thread_names_values,
			.def = "auto",
			.reload = RELOAD_NEXT,
			.help = "labels thread_name, ruby_thread and ruby_thread_name (auto: not "
				"when "
				"shipping to Pyroscope, which makes a series of each)",
			.doc = "`thread_name` (the native thread's name), `ruby_thread` (the Ruby "
			       "thread's "
			       "identity: its `rb_thread_t` address) and `ruby_thread_name` "
			       "(`Thread#name`) "
			       "as sample labels of the service's profiles: `yes`, `no`, or "
			       "`auto`: yes, "
			       "except while shipping to Pyroscope, which makes a series of every "
			       "distinct "
			       "set of them (docs/shipping.md).",
		},
	[KEY_LABEL] =
		{
			.name = "label",
			.arg = "KEY=VALUE",
			.flags = K_FILE | K_REPEAT | K_SERVICE,
			.type = KT_TEXT,
			.syntax = "`KEY=VALUE`, repeatable (at most 16): `KEY` is "
				  "`[a-zA-Z_][a-zA-Z0-9_]*`, not `service_name` or `__name__`, at "
				  "most 63 "
				  "bytes; `VALUE` 1 to 128 bytes without control characters",
			.def = "",
			.none = "none",
			.reload = RELOAD_YES,
			.help = "label added to every profile (repeatable, at most 16)",
			.doc = "A label added to every profile's series. A `--label` replaces the "
			       "file's "
			       "label of the same `KEY`.",
			.example = "env=production",
		},
	[KEY_RULE] =
		{
			.name = "rule",
			.arg = "RULE",
			.flags = K_FILE | K_REPEAT | K_SERVICE,
			.type = KT_TEXT,
			.syntax = "`FIELD ~ REGEX => ACTIONS`, repeatable (at most 64, each at "
				  "most 511 "
				  "bytes)",
			.def = "",
			.none = "none",
			.reload = RELOAD_YES,
			.help = "service naming rule, tried before the file's (repeatable, at most "
				"64): "
				"FIELD ~ REGEX => ignore | name=TEMPLATE [KEY=TEMPLATE...]",
			.doc = "A service naming rule: FIELD is `cgroup`, `cmdline`, `exe`, `comm` "
			       "or "
			       "`env:NAME`; ACTIONS is `ignore`, or `name=TEMPLATE` and "
			       "`KEY=TEMPLATE` "
			       "labels with `$1` to `$9` for the regex's groups "
			       "(docs/service-names.md). "
			       "The first rule that matches decides; `--rule` flags are tried "
			       "before the "
			       "file's rules.",
			.example = "cmdline ~ ^sidekiq .* \\[(.+)\\] => name=$1-jobs",
		},

	[KEY_UPLOAD_URL] =
		{
			.name = "upload_url",
			.arg = "URL",
			.flags = K_FILE | K_SERVICE | K_SHIP,
			.type = KT_TEXT,
			.syntax = "`http://` or `https://`, a host, an optional port and path "
				  "prefix, at "
				  "most 2047 bytes",
			.def = "",
			.none = "nothing is sent, the spool is the output",
			.reload = RELOAD_YES,
			.help = "collector to send every profile to, e.g. http://pyroscope:4040",
			.doc = "The collector every spooled profile is sent to, oldest first "
			       "(`http://pyroscope:4040`, `https://alloy.internal/pyroscope`); a "
			       "profile "
			       "leaves the spool only once it was accepted. `user:password@` is "
			       "refused "
			       "(use `upload_basic_auth_file`). See docs/shipping.md.",
			.example = "http://pyroscope.monitoring:4040",
		},
	[KEY_UPLOAD_PROTOCOL] =
		{
			.name = "upload_protocol",
			.arg = "P",
			.flags = K_FILE | K_SERVICE | K_SHIP | K_ONE_OF,
			.type = KT_ENUM,
			.values = protocols,
			.def = "pyroscope",
			.reload = RELOAD_YES,
			.help = "pyroscope, pyroscope-push or parca",
			.doc = "`pyroscope` (`POST /ingest`, also Grafana Alloy's "
			       "`pyroscope.receive_http`), `pyroscope-push` "
			       "(`/push.v1.PusherService/Push`) or `parca` "
			       "(`ProfileStoreService.WriteRaw`).",
		},
	[KEY_UPLOAD_TOKEN_FILE] =
		{
			.name = "upload_token_file",
			.arg = "FILE",
			.flags = K_FILE | K_SERVICE | K_SHIP | K_READABLE,
			.type = KT_TEXT,
			CONFIG_FIELD(upload_token_file),
			.syntax =
				"an absolute path, readable when the file is read, that only root "
				"can change",
			.def = "",
			.none = "none",
			.reload = RELOAD_YES,
			.help = "bearer token (Authorization: Bearer) read from FILE",
			.doc = "A file holding a bearer token, sent as `Authorization: Bearer`; "
			       "read at "
			       "start and on SIGHUP, never logged. Secrets live in files "
			       "(root-owned, mode "
			       "0600), never in this configuration.",
			.example = "/etc/rubyprofd/token",
		},
	[KEY_UPLOAD_BASIC_AUTH_FILE] =
		{
			.name = "upload_basic_auth_file",
			.arg = "FILE",
			.flags = K_FILE | K_SERVICE | K_SHIP | K_READABLE,
			.type = KT_TEXT,
			CONFIG_FIELD(upload_basic_auth_file),
			.syntax =
				"an absolute path, readable when the file is read, that only root "
				"can change",
			.def = "",
			.none = "none",
			.reload = RELOAD_YES,
			.help = "'user:password' for basic auth, read from FILE",
			.doc = "A file holding `user:password` for HTTP basic auth (Grafana Cloud: "
			       "the "
			       "instance id and an access token); read like the token file.",
			.example = "/etc/rubyprofd/basic-auth",
		},
	[KEY_UPLOAD_TENANT_ID] =
		{
			.name = "upload_tenant_id",
			.arg = "ID",
			.flags = K_FILE | K_SERVICE | K_SHIP,
			.type = KT_TEXT,
			.syntax = "at most 255 bytes, no control characters",
			.def = "",
			.none = "none",
			.reload = RELOAD_YES,
			.help = "X-Scope-OrgID header (multi-tenant Pyroscope, Mimir-style)",
			.doc = "Sent as `X-Scope-OrgID` (a multi-tenant Pyroscope).",
		},
	[KEY_UPLOAD_HEADER] =
		{
			.name = "upload_header",
			.arg = "'NAME: VALUE'",
			.flags = K_FILE | K_REPEAT | K_SERVICE | K_SHIP,
			.type = KT_TEXT,
			.syntax = "`Name: value`, repeatable (at most 16), each at most 1024 bytes "
				  "without "
				  "control characters",
			.def = "",
			.none = "none",
			.reload = RELOAD_YES,
			.help = "extra header (repeatable, at most 16)",
			.doc = "An extra request header. A flag replaces the file's header of the "
			       "same "
			       "name.",
			.example = "X-Environment: production",
		},
	[KEY_UPLOAD_CA_FILE] =
		{
			.name = "upload_ca_file",
			.arg = "FILE",
			.flags = K_FILE | K_SERVICE | K_SHIP | K_READABLE,
			.type = KT_TEXT,
			CONFIG_FIELD(upload_ca_file),
			.syntax =
				"an absolute path, readable when the file is read, that only root "
				"can change",
			.def = "",
			.none = "the system's CA store",
			.reload = RELOAD_YES,
			.help = "CA certificates (PEM) to verify an https:// collector",
			.doc = "PEM CA certificates to verify an `https://` collector with. "
			       "Verification "
			       "is always on.",
			.example = "/etc/rubyprofd/ca.pem",
		},
	[KEY_UPLOAD_CONNECT_TIMEOUT] =
		{
			.name = "upload_connect_timeout",
			.arg = "AGE",
			.flags = K_FILE | K_SERVICE | K_SHIP,
			.type = KT_DURATION,
			CONFIG_FIELD(upload_connect_timeout),
			.min = 0.1,
			.max = 600,
			.def = "5s",
			.reload = RELOAD_YES,
			.help = "connect timeout",
			.doc = "Connect timeout (TCP and TLS).",
		},
	[KEY_UPLOAD_TIMEOUT] =
		{
			.name = "upload_timeout",
			.arg = "AGE",
			.flags = K_FILE | K_SERVICE | K_SHIP,
			.type = KT_DURATION,
			CONFIG_FIELD(upload_timeout),
			.min = 1,
			.max = 3600,
			.def = "30s",
			.reload = RELOAD_YES,
			.help = "timeout of a whole request",
			.doc = "Timeout of a whole request.",
		},
	[KEY_UPLOAD_MAX_AGE] =
		{
			.name = "upload_max_age",
			.arg = "AGE",
			.flags = K_FILE | K_SERVICE | K_SHIP,
			.type = KT_DURATION,
			CONFIG_FIELD(upload_max_age),
			.min = 1,
			.max = 3650 * DAY,
			.zero = "never",
			.def = "1h",
			.reload = RELOAD_YES,
			.help = "profiles older than this are dropped, not sent",
			.doc = "Profiles that ended longer ago are dropped unsent (counted): "
			       "Pyroscope "
			       "refuses samples outside its ingestion window, an hour by default.",
		},
	[KEY_UPLOAD_BACKOFF_MAX] =
		{
			.name = "upload_backoff_max",
			.arg = "AGE",
			.flags = K_FILE | K_SERVICE | K_SHIP,
			.type = KT_DURATION,
			CONFIG_FIELD(upload_backoff_max),
			.min = 1,
			.max = DAY,
			.def = "5m",
			.reload = RELOAD_YES,
			.help = "longest wait between retries",
			.doc = "Longest wait between retries while the collector is down (the wait "
			       "doubles from 1 s, with jitter; a longer `Retry-After` wins, up to "
			       "1 h).",
		},
	[KEY_UPLOAD_REJECTED_MAX_AGE] =
		{
			.name = "upload_rejected_max_age",
			.arg = "AGE",
			.flags = K_FILE | K_SERVICE | K_SHIP,
			.type = KT_DURATION,
			CONFIG_FIELD(upload_rejected_max_age),
			.min = 1,
			.max = 3650 * DAY,
			.def = "7d",
			.reload = RELOAD_YES,
			.help = "how long refused profiles stay in SPOOL_DIR/rejected",
			.doc = "How long profiles the collector refused stay in "
			       "`SPOOL_DIR/rejected/` for "
			       "inspection (also bounded to 1000 profiles and 64 MiB).",
		},

	[KEY_ONESHOT] =
		{
			.name = "oneshot",
			.flags = K_ONESHOT,
			.type = KT_SWITCH,
			.help = "profile for a while, write one profile, print a summary",
			.doc = "Profile for a while, write one profile, print a summary (instead "
			       "of "
			       "running as the service).",
		},
	[KEY_DURATION] =
		{
			.name = "duration",
			.short_opt = 'd',
			.arg = "S",
			.flags = K_ONESHOT,
			.type = KT_TEXT,
			.syntax = "a positive number of seconds, at most 31 days",
			.def = "10",
			.help = "seconds to profile (with a COMMAND: until it exits)",
			.doc = "How long to profile; with a COMMAND, until it exits.",
		},
	[KEY_OUTPUT] =
		{
			.name = "output",
			.short_opt = 'o',
			.arg = "FILE",
			.flags = K_ONESHOT,
			.type = KT_TEXT,
			.syntax = "a file name",
			.def = "",
			.none = "./rubyprofd-HOST-YYYYMMDD-HHMMSS.pb.gz",
			.help = "where to write the profile",
			.doc = "Where to write the profile: a new file of mode 0640 (less the "
			       "umask), renamed into place. A symbolic link, or anything but a "
			       "regular file, at that path is refused, never followed or replaced "
			       "(docs/views.md, Output files); so are the views of `--format`.",
		},
	[KEY_TOP] =
		{
			.name = "top",
			.arg = "N",
			.flags = K_ONESHOT,
			.type = KT_UINT,
			CONFIG_FIELD(top),
			.min = 0,
			.max = 10000,
			.def = "15",
			.help = "lines in the summary's top list",
			.doc = "Lines in the summary's list of the hottest functions.",
		},
	[KEY_FORMAT] =
		{
			.name = "format",
			.arg = "F",
			.flags = K_ONESHOT,
			.type = KT_ENUM,
			.values = formats,
			.def = "",
			.none = "none",
			.help = "also write a view beside the profile (see rubyprofd report -h)",
			.doc = "Also write the profile as a view beside it: `flamegraph` (a "
			       "self-contained "
			       "HTML page), `svg`, `speedscope`, `collapsed` or `top`; the summary "
			       "says how "
			       "to open it (docs/views.md).",
		},
	[KEY_BY] =
		{
			.name = "by",
			.arg = "W",
			.flags = K_ONESHOT,
			.type = KT_TEXT,
			.syntax = "`frame:REGEX`, `label:KEY`, `line` or `function`",
			.def = "",
			.none = "none",
			.help = "the summary's top list per group: frame:REGEX (the first frame "
				"from the root whose function matches) or label:KEY (a label's "
				"value); also groups the --format view",
			.doc = "Group the summary's top list, and the view of `--format`: "
			       "`frame:REGEX`, each sample under the first frame from the root "
			       "whose function name matches the POSIX extended REGEX "
			       "(`frame:'Controller#'`: one group per Rails action), or "
			       "`label:KEY`, by the value of a sample label (`label:http.route`). "
			       "Each group's share, then its top functions; `line` or `function` "
			       "as for `rubyprofd report --by` (docs/views.md).",
		},
};

const struct config_key *config_keys_find(const char *name, enum config_key_id *id)
{
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		if (config_keys[i].name && !strcmp(config_keys[i].name, name)) {
			*id = (enum config_key_id)i;
			return &config_keys[i];
		}
	}
	return NULL;
}

const char *config_keys_flag(enum config_key_id id, char *buf, size_t len)
{
	const char *name = config_keys[id].name;
	size_t i;

	if (len < 3) {
		if (len)
			buf[0] = '\0';
		return buf;
	}
	buf[0] = buf[1] = '-';
	for (i = 0; name[i] && i + 3 < len; i++)
		buf[i + 2] = name[i] == '_' ? '-' : name[i];
	buf[i + 2] = '\0';
	return buf;
}
