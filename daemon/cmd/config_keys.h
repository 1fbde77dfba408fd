/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * config_keys.h - the one table of rubyprofd's configuration keys and flags.
 *
 * Every key of the file and every flag is one entry: its name, flag, value type and bounds,
 * default, whether a reload takes it, and its help and documentation. From it come the option
 * parser (config.c builds getopt's table from it and applies the defaults through the same setter
 * as the file), --help, and, through scripts/gendocs.c, the key section of rubyprofd(8), the
 * table of docs/configuration.md and the installed systemd/rubyprofd.conf (every key, commented).
 * tests/unit/cmd/test_config_doc.c fails when a committed one differs from what the table gives.
 *
 * Adding a key: an entry here (docs/hacking.md) and a field in struct config, named by the
 * entry's CONFIG_FIELD when its type says all (a number, a size, a duration, one of a list); a
 * case in config.c's key_set() only for a value that needs code of its own; then `make gen`.
 */
#ifndef RP_CONFIG_KEYS_H
#define RP_CONFIG_KEYS_H

#include <stddef.h>
#include <stdio.h>

enum config_key_id {
	/* both modes */
	KEY_CONFIG,
	KEY_FREQUENCY,
	KEY_PID,
	KEY_CLOCK,
	KEY_MAX_FRAMES,
	KEY_STACKS,
	KEY_USTACK_BYTES,
	KEY_KERNEL_STACKS,
	KEY_NATIVE_PROCESSES,
	KEY_HOSTNAME,
	KEY_LOG_LEVEL,
	KEY_VERBOSE,
	KEY_QUIET,
	KEY_CHECK_CONFIG,
	KEY_HELP,
	KEY_VERSION,
	/* the service */
	KEY_INTERVAL,
	KEY_SPOOL_DIR,
	KEY_SPOOL_MAX_BYTES,
	KEY_SPOOL_MAX_AGE,
	KEY_METRICS_ADDRESS,
	KEY_RESCAN_INTERVAL,
	KEY_THREAD_NAMES,
	KEY_LABEL,
	KEY_RULE,
	/* shipping (the service) */
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
	/* --oneshot */
	KEY_ONESHOT,
	KEY_DURATION,
	KEY_OUTPUT,
	KEY_TOP,
	KEY_FORMAT,
	KEY_BY,
	NKEYS,
};

enum {
	K_FILE = 1 << 0,     /* a key of the file too (else a flag only) */
	K_REPEAT = 1 << 1,   /* may be given many times */
	K_SERVICE = 1 << 2,  /* only for the service (checked, unused, with --oneshot --config) */
	K_ONESHOT = 1 << 3,  /* only with --oneshot */
	K_SHIP = 1 << 4,     /* of the shipper (a K_SERVICE key): its own section of --help */
	K_OPTARG = 1 << 5,   /* the flag's value is optional (--kernel-stacks alone: yes) */
	K_ONE_OF = 1 << 6,   /* KT_ENUM: "is not one of a, b, c" (else "is not a, b or c") */
	K_READABLE = 1 << 7, /* KT_TEXT: empty, or the absolute path of a file only root can
				change, which the daemon can read (stored in its field) */
};

enum config_key_type {
	KT_SWITCH,   /* a flag without a value */
	KT_UINT,     /* a decimal number, min to max */
	KT_SECONDS,  /* a number of seconds, decimals allowed ("2.5"), min to max (0: zero) */
	KT_SIZE,     /* bytes, or a number with the suffix K, M or G (powers of 1024) */
	KT_DURATION, /* a number with the suffix s, m, h or d (a bare number is seconds) */
	KT_ENUM,     /* one of values */
	KT_TEXT,     /* checked by key_set itself; `syntax` says what it takes */
};

enum config_reload {
	RELOAD_NONE,	/* a flag only: nothing to reload */
	RELOAD_YES,	/* SIGHUP takes it */
	RELOAD_NEXT,	/* SIGHUP takes it from the next interval */
	RELOAD_RESTART, /* only a restart does */
};

struct config_key {
	const char *name;   /* the file's key; the flag is --NAME with '-' for '_' */
	char short_opt;	    /* 'F' for -F, or 0 */
	const char *arg;    /* the value's name in --help ("HZ"); NULL for a switch */
	unsigned int flags; /* K_* */
	enum config_key_type type;
	double min, max;	   /* KT_UINT, KT_SECONDS, KT_SIZE, KT_DURATION */
	const char *zero;	   /* KT_SECONDS, KT_DURATION: what 0 means, if it is allowed */
	const char *const *values; /* KT_ENUM: NULL-terminated */
	const char *syntax;	   /* KT_TEXT: what the value looks like (docs, `code` marked) */
	const char *def;	   /* the default as the file spells it; "" none, NULL flag-only */
	const char *def_oneshot;   /* the default with --oneshot, where it differs */
	const char *none;	   /* what an empty value means ("no endpoint"), for the docs */
	enum config_reload reload;
	const char *help;    /* --help: a short phrase; the default is added to it */
	const char *doc;     /* the documentation: sentences, `code` marked with backquotes */
	const char *example; /* rubyprofd.conf: a value shown as an example, or NULL */
	/*
	 * Where config.c's key_set stores a value that needs no code of its own (CONFIG_FIELD):
	 * the member of struct config at `field`, of `field_size` bytes (0: key_set has a case
	 * for the key). What is stored follows the type: KT_UINT an unsigned int, KT_SIZE an
	 * unsigned int or a uint64_t, KT_SECONDS and KT_DURATION a double, KT_ENUM the value's
	 * index in `values` as an int, or, with `truth`, a bool: whether the value is `truth`;
	 * KT_TEXT with K_READABLE the path, in a char array.
	 * tests/unit/cmd/test_config.c holds every entry to these sizes.
	 */
	size_t field;
	size_t field_size;
	const char *truth;
};

/* The member of struct config (cmd/config.h) that holds a key's value. */
#define CONFIG_FIELD(member)                                                                       \
	.field = offsetof(struct config, member), .field_size = sizeof(((struct config *)0)->member)

extern const struct config_key config_keys[NKEYS];

/* The entry of a file key (any entry with a name, K_FILE or not); NULL when there is none. */
const struct config_key *config_keys_find(const char *name, enum config_key_id *id);
/* "--frequency" for KEY_FREQUENCY, into buf (40 bytes hold every flag); returns buf. */
const char *config_keys_flag(enum config_key_id id, char *buf, size_t len);

#endif
