/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * apprules.h - the configuration's naming rules, "FIELD ~ REGEX => ACTIONS" (docs/service-names.md):
 * the first step of naming a service (appname.h), the only one an operator writes.
 */
#ifndef RP_APPRULES_H
#define RP_APPRULES_H

#include <stdbool.h>
#include <stddef.h>

#include "proc/appname.h"

/*
 * texts[i] are rule strings. On error returns NULL with errno EINVAL (ENOMEM when out of memory),
 * *bad = index of the bad rule and msg filled ("rule: unknown field 'cgrop'"; no index or file in
 * it, the caller adds those).
 */
struct apprules *apprules__new(const char *const *texts, size_t n, size_t *bad, char *msg,
			       size_t msglen);
void apprules__free(struct apprules *r);

size_t apprules_count(const struct apprules *r);
/* Whether a rule matches on an environment variable (so /proc/PID/environ must be read). */
bool apprules_needs_env(const struct apprules *r);

/*
 * The first rule whose regex matches decides: its labels and `ignore` into out, the name it
 * gives into name (nsize bytes; "" when it gives none). The subjects are the process's cgroup
 * path (cgroup_path) and title (title), in's exe, comm and environment. 1 when a rule matched,
 * 0 if none, -errno.
 */
int apprules_apply(const struct apprules *r, const struct appname_input *in,
		   const char *cgroup_path, const char *title, struct app_identity *out, char *name,
		   size_t nsize);

#endif
