/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * appname.h - the service a Ruby process belongs to: the name under which the always-on service
 * writes its interval profiles. Decided, first hit wins, from config rules, the systemd unit in the
 * cgroup path, the container, a well-known process title (Puma, Unicorn, Sidekiq, Resque) and the
 * script Ruby runs. docs/service-names.md describes the rules and the choices made.
 */
#ifndef RP_APPNAME_H
#define RP_APPNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proc/container.h"

/* Compiled rules ("FIELD ~ REGEX => ACTIONS", one per string): apprules.h. */
struct apprules;

#define APPNAME_MAX		101 /* 100 bytes and the NUL */
/* Repetition operators a rule's regular expression may use (see apprules.c). */
#define APPNAME_MAX_REPEATS	12
#define APPNAME_MAX_LABELS	8
#define APPNAME_LABEL_KEY_MAX	64
#define APPNAME_LABEL_VALUE_MAX 129

struct app_identity {
	char service[APPNAME_MAX]; /* sanitized, never empty */
	const char *source;	   /* "rule", "otel", "systemd", "container", "title", "script" */
	char unit[256];		   /* systemd unit as systemd spells it, "" if none */
	char container_id[CONTAINER_ID_MAX]; /* full id, "" if none */
	struct {
		char key[APPNAME_LABEL_KEY_MAX];
		char value[APPNAME_LABEL_VALUE_MAX];
	} labels[APPNAME_MAX_LABELS]; /* from the matching rule */
	size_t nlabels;
	bool ignore; /* a rule said `ignore`; service is still filled (for logs) */
	/* Additions to the fixed API, for the caller's counters and debug logs: */
	int rule;	/* index of the rule that matched, -1 if none */
	bool truncated; /* an input file, the name or a label value was cut at its limit */
	int environ_err; /* 0, or -errno when a rule needed /proc/PID/environ and it was unreadable */
};

/*
 * Reads /proc/PID/{cgroup,cmdline,exe,comm} and environ (only when a rule needs it). 0 or -errno
 * (-ESRCH/-ENOENT: the process is gone). rules may be NULL.
 */
int appname_identify(pid_t pid, const struct apprules *rules, struct app_identity *out);
/* The same with the service.name of the process's OpenTelemetry process context (procctx.h;
 * NULL or "": none), which names it after the rules and before the systemd unit. */
int appname_identify_with(pid_t pid, const struct apprules *rules, const char *otel_service,
			  struct app_identity *out);

/* The same from given inputs, for tests and fuzzing (no /proc access). Any field may be NULL. */
struct appname_input {
	const char *cgroup_text; /* the text of /proc/PID/cgroup */
	const char *cmdline;
	size_t cmdline_len; /* NUL-separated argv as in /proc */
	const char *exe;
	const char *comm;
	const char *environ;
	size_t environ_len;	  /* NUL-separated NAME=value as in /proc */
	const char *otel_service; /* service.name of its process context, NULL or "": none */
};
int appname_identify_from(const struct appname_input *in, const struct apprules *rules,
			  struct app_identity *out);

#endif
