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

#define CONFIG_MAX_PIDS	  256
#define CONFIG_MAX_LABELS 16
#define CONFIG_MAX_RULES  64
/* A longer line in the configuration file is an error. */
#define CONFIG_MAX_LINE	  4096

/* Shipping: extra headers, each at most this long with its NUL; the collector's URL. */
#define CONFIG_MAX_UPLOAD_HEADERS 16
#define CONFIG_MAX_UPLOAD_HEADER  1025
#define CONFIG_MAX_URL		  2048

struct config_label {
	char key[64];	 /* [a-zA-Z_][a-zA-Z0-9_]*, not service_name or __name__ */
	char value[129]; /* non-empty, at most 128 bytes */
};

/* A service naming rule, kept as text: the appname module compiles it and names `where` on error. */
struct config_rule {
	char text[512];
	char where[PATH_MAX + 16]; /* "FILE:LINE" or "--rule" */
};

struct config {
	bool oneshot;
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
	int verbose;	      /* -v: info about each process; -vv: debug */
	bool quiet;

	/* The service's keys (at their defaults with --oneshot). */
	double interval; /* seconds per interval profile */
	char spool_dir[PATH_MAX];
	uint64_t spool_max_bytes;
	double spool_max_age;	   /* seconds */
	char metrics_address[128]; /* "HOST:PORT" or "[V6]:PORT"; empty: no metrics endpoint */
	double rescan_interval;	   /* seconds between /proc rescans; 0: none */
	/* thread_name as a sample label of the service's profiles: CONFIG_THREAD_NAMES_* */
	int thread_names;
	char hostname[256]; /* empty: gethostname() at run time */
	struct config_label labels[CONFIG_MAX_LABELS];
	size_t nlabels;
	/* --rule flags first (the first matching rule wins, so flags win), then the file's rules. */
	struct config_rule rules[CONFIG_MAX_RULES];
	size_t nrules;
	/*
	 * enum log_level from log.h; -1 = not set (only with --oneshot and none of --log-level,
	 * log_level, -v, -q: the caller picks). -q gives error, -v info, -vv debug; they win over
	 * --log-level and the file.
	 */
	int log_level;

	/* Shipping (docs/shipping.md); an empty upload_url: none, the spool is the output. */
	char upload_url[CONFIG_MAX_URL];
	unsigned int upload_protocol; /* enum ingest_protocol */
	char upload_token_file[PATH_MAX];
	char upload_basic_auth_file[PATH_MAX];
	char upload_tenant_id[256];
	char upload_headers[CONFIG_MAX_UPLOAD_HEADERS][CONFIG_MAX_UPLOAD_HEADER];
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

#define CONFIG_DEFAULT_FILE		 "/etc/rubyprofd/rubyprofd.conf"
#define CONFIG_DEFAULT_DURATION		 10.0
#define CONFIG_DEFAULT_FREQUENCY	 99 /* --oneshot */
#define CONFIG_DEFAULT_SERVICE_FREQUENCY 19 /* the service: always on, so cheaper */
#define CONFIG_MAX_FREQUENCY		 10000
#define CONFIG_DEFAULT_INTERVAL		 10.0
#define CONFIG_MAX_INTERVAL		 3600.0
#define CONFIG_DEFAULT_SPOOL_DIR	 "/var/lib/rubyprofd/spool"
#define CONFIG_DEFAULT_SPOOL_MAX_BYTES	 (256ULL << 20)
#define CONFIG_MIN_SPOOL_MAX_BYTES	 (1ULL << 20)
#define CONFIG_MAX_SPOOL_MAX_BYTES	 (1ULL << 50) /* 1 PiB: a typo guard, not a real bound */
#define CONFIG_DEFAULT_SPOOL_MAX_AGE	 (24 * 3600.0)
#define CONFIG_MAX_SPOOL_MAX_AGE	 (3650 * 24 * 3600.0)
#define CONFIG_DEFAULT_RESCAN_INTERVAL	 30.0
#define CONFIG_MAX_RESCAN_INTERVAL	 3600.0

#define CONFIG_DEFAULT_UPLOAD_CONNECT_TIMEOUT  5.0
#define CONFIG_DEFAULT_UPLOAD_TIMEOUT	       30.0
#define CONFIG_DEFAULT_UPLOAD_MAX_AGE	       3600.0 /* Pyroscope's ingestion window */
#define CONFIG_DEFAULT_UPLOAD_BACKOFF_MAX      300.0
#define CONFIG_DEFAULT_UPLOAD_REJECTED_MAX_AGE (7 * 24 * 3600.0)

/* Parses argv and the configuration file into *cfg; reports errors on stderr. */
enum config_result config_parse(struct config *cfg, int argc, char **argv);
/*
 * As config_parse(), with another default file than CONFIG_DEFAULT_FILE (for tests); it must
 * outlive *cfg, which may point to it.
 */
enum config_result config_parse_with_default(struct config *cfg, int argc, char **argv,
					     const char *default_file);
void config_usage(FILE *out);

#endif
