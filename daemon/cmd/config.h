/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * config.h - the configuration: command-line flags over an optional file.
 *
 * The service reads /etc/rubyprofd/rubyprofd.conf (key = value lines); every key also has a flag,
 * and a flag wins over the file. --oneshot reads a file only when --config names one.
 *
 * config_parse() keeps no state between calls and struct config owns everything it points to
 * except what points into argv (output, command, config_file) or to a string literal
 * (config_file's default), so the service re-reads the file on SIGHUP by calling config_parse()
 * again with the same argv: parse into a second struct config and keep the old one on failure.
 * Nothing is allocated: there is nothing to free. struct config is about 300 KiB (the rules'
 * text and origin): keep it static or on the heap, not on a small stack.
 */
#ifndef RP_CONFIG_H
#define RP_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cmd/config_keys.h"

#define CONFIG_MAX_PIDS	  256
#define CONFIG_MAX_LABELS 16
#define CONFIG_MAX_RULES  64
/* A longer line in the configuration file is an error. */
#define CONFIG_MAX_LINE	  4096

/* Shipping: extra headers, each at most this long with its NUL; the collector's URL. */
#define CONFIG_MAX_UPLOAD_HEADERS 16
#define CONFIG_MAX_UPLOAD_HEADER  1025
#define CONFIG_MAX_URL		  2048

/* Where one value of a repeatable key was given, for --check-config: a line of the file, or a flag. */
struct config_at {
	unsigned int line; /* of config_file; 0: the flag */
	char flag[40];	   /* "--label", "-l" */
};

struct config_label {
	char key[64];	 /* [a-zA-Z_][a-zA-Z0-9_]*, not service_name or __name__ */
	char value[129]; /* non-empty, at most 128 bytes */
	struct config_at at;
};

/* A service naming rule, kept as text: the appname module compiles it and names `where` on error. */
struct config_rule {
	char text[512];
	char where[PATH_MAX + 16]; /* "FILE:LINE" or "--rule" */
};

/* A key's value as last set, for --check-config: its text, and from where. */
#define CONFIG_SHOWN_MAX 256
enum config_origin {
	CONFIG_ORIGIN_UNSET,
	CONFIG_ORIGIN_DEFAULT,
	CONFIG_ORIGIN_FILE,
	CONFIG_ORIGIN_FLAG,
};

struct config_shown {
	char text[CONFIG_SHOWN_MAX];
	bool cut; /* the text was longer: its start */
	unsigned char origin;
	unsigned int line; /* CONFIG_ORIGIN_FILE: of config_file */
	char flag[40];	   /* CONFIG_ORIGIN_FLAG: "--frequency", "-F" */
};

struct config {
	bool oneshot;
	bool check_config; /* --check-config: check, print, exit */
	/* The file read: argv's --config, the default (the service), or NULL (--oneshot alone). */
	const char *config_file;
	bool config_file_missing;  /* the default file does not exist: all defaults */
	double duration;	   /* seconds; 0: until the command exits (or 10 s without one) */
	unsigned int frequency;	   /* Hz */
	unsigned int max_frames;   /* frames walked per stack */
	bool stacks_mixed;	   /* --stacks mixed: native frames too (docs/native-stacks.md) */
	unsigned int ustack_bytes; /* mixed: user stack bytes copied per sample */
	bool clock_wall;	   /* --clock wall: every Ruby thread, with its state (wall.h) */
	bool kernel_stacks;	   /* mixed: kernel frames too (needs CAP_SYSLOG for their names) */
	unsigned int native_procs; /* mixed: RP_NATIVE_*: processes that are no Ruby sampled too */
	uint32_t native_pids[CONFIG_MAX_PIDS]; /* RP_NATIVE_LISTED: those */
	size_t nnative_pids;
	pid_t pids[CONFIG_MAX_PIDS];
	size_t npids;
	const char *output;   /* NULL: rubyprofd-HOST-TIME.pb.gz in the current directory */
	char *const *command; /* argv after "--", NULL-terminated; NULL when none */
	unsigned int top;     /* lines of the summary's top list */
	const char *format;   /* --format: a view (view.h) written beside the profile; NULL: none */
	const char *by;	      /* --by: groups of the summary's top and of the view; NULL: none */
	int verbose;	      /* -v: info about each process; -vv: debug */
	bool quiet;
	char hostname[256]; /* empty: gethostname() at run time */
	/*
	 * enum log_level from log.h; -q gives error, -v info, -vv debug; they win over
	 * --log-level and the file.
	 */
	int log_level;
	/* every key's value as last set (defaults, the file, the flags): --check-config */
	struct config_shown shown[NKEYS];

	/* The service's keys (at their defaults with --oneshot), from `interval` to the end:
	 * config.c clears them from here on. */
	double interval; /* seconds per interval profile */
	char spool_dir[PATH_MAX];
	uint64_t spool_max_bytes;
	double spool_max_age;	   /* seconds */
	char metrics_address[128]; /* "HOST:PORT" or "[V6]:PORT"; empty: no metrics endpoint */
	double rescan_interval;	   /* seconds between /proc rescans; 0: none */
	/* thread_name as a sample label of the service's profiles: CONFIG_THREAD_NAMES_* */
	int thread_names;
	struct config_label labels[CONFIG_MAX_LABELS];
	size_t nlabels;
	/* --rule flags first (the first matching rule wins, so flags win), then the file's rules. */
	struct config_rule rules[CONFIG_MAX_RULES];
	size_t nrules;

	/* Shipping (docs/shipping.md); an empty upload_url: none, the spool is the output. */
	char upload_url[CONFIG_MAX_URL];
	unsigned int upload_protocol; /* enum protocol */
	char upload_token_file[PATH_MAX];
	char upload_basic_auth_file[PATH_MAX];
	char upload_tenant_id[256];
	char upload_headers[CONFIG_MAX_UPLOAD_HEADERS][CONFIG_MAX_UPLOAD_HEADER];
	struct config_at upload_headers_at[CONFIG_MAX_UPLOAD_HEADERS];
	size_t nupload_headers;
	char upload_ca_file[PATH_MAX];
	double upload_connect_timeout;	/* seconds */
	double upload_timeout;		/* seconds, a whole request */
	double upload_max_age;		/* seconds; 0: none */
	double upload_backoff_max;	/* seconds */
	double upload_rejected_max_age; /* seconds */
};

/* auto: yes, except when shipping to Pyroscope, which makes a series of each string label */
#define CONFIG_THREAD_NAMES_AUTO 0
#define CONFIG_THREAD_NAMES_YES	 1
#define CONFIG_THREAD_NAMES_NO	 2

enum config_result {
	CONFIG_RUN = 0,
	CONFIG_EXIT_OK,	 /* --help, --version */
	CONFIG_EXIT_BAD, /* usage or configuration error, already reported on stderr */
};

/*
 * The configuration that takes effect, as the file would spell it (every file key, the service's
 * and both modes'), each with where its value came from; extra headers' values (secrets: a URL
 * holds none, key_set refuses one with a user or password) not shown. --check-config prints it.
 */
void config_print_effective(const struct config *cfg, FILE *out);

#define CONFIG_DEFAULT_FILE "/etc/rubyprofd/rubyprofd.conf"
/* Every other default and bound is in the key table, config_keys.c. */

/* Parses argv and the configuration file into *cfg; reports errors on stderr. */
enum config_result config_parse(struct config *cfg, int argc, char **argv);
/*
 * As config_parse(), with another default file than CONFIG_DEFAULT_FILE (for tests); it must
 * outlive *cfg, which may point to it.
 */
enum config_result config_parse_with_default(struct config *cfg, int argc, char **argv,
					     const char *default_file);

#endif
