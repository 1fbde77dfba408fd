// SPDX-License-Identifier: GPL-2.0-only
/*
 * bounds.c - counting and logging what went past a bound (bounds.h).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/bounds.h"
#include "lib/hash.h"
#include "lib/log.h"
#include "lib/text.h"

/* Objects remembered as logged, per bound: a ring, the oldest forgotten first. */
#define BOUNDS_LOGGED_MAX 64

struct logged {
	uint64_t dev, ino, path_hash;
};

static struct {
	pid_t pid;
	struct log_limit limit; /* a churn of tenants' new objects cannot flood the journal */
	bool openat2_logged;
	struct bounds_stats st;
	struct logged ring[BOUND_MAX][BOUNDS_LOGGED_MAX];
	unsigned int next[BOUND_MAX];
} B;

static const struct {
	const char *name;
	uint64_t bytes;
	const char *then; /* what is done instead, for the log line */
} bounds[BOUND_MAX] = {
	[BOUND_SECTION] = {"section", BOUND_SECTION_BYTES, "not read"},
	[BOUND_FILE] = {"file", BOUND_FILE_BYTES, "not read"},
	[BOUND_NAME] = {"name", BOUND_NAME_BYTES, "kept mangled"},
	[BOUND_OBJECT] = {"object", BOUND_OBJECT_BYTES, "not read, its frames not unwound"},
	[BOUND_REGULAR] = {"not_regular", 0, "not read"},
	[BOUND_MAPS] = {"maps", BOUND_MAPS_BYTES, "the process is not profiled"},
	[BOUND_SECTIONS] = {"sections", BOUND_SECTION_COUNT, "not read"},
	[BOUND_SERVED] = {"served_fs", 0, "not opened"},
	[BOUND_MOUNTS] = {"mounts", BOUND_MOUNTS_BYTES, "its files are not opened"},
	[BOUND_HELD] = {"held", BOUND_HELD_BYTES, "not read"},
	[BOUND_RELOCS] = {"relocations", BOUND_RELOC_BYTES, "the rest not read"},
};

void bounds_set_pid(pid_t pid)
{
	B.pid = pid;
}

/* Whether the object was logged for b already; remembers it otherwise. */
static bool seen(enum bound_id b, uint64_t dev, uint64_t ino, const char *path)
{
	struct logged o = {dev, ino, dev || ino ? 0 : hash_str(HASH_INIT, path)};
	unsigned int i;

	for (i = 0; i < BOUNDS_LOGGED_MAX; i++) {
		if (!memcmp(&B.ring[b][i], &o, sizeof(o)))
			return true;
	}
	B.ring[b][B.next[b]] = o;
	B.next[b] = (B.next[b] + 1) % BOUNDS_LOGGED_MAX;
	return false;
}

void bounds_refuse(enum bound_id b, const char *path, uint64_t dev, uint64_t ino, const char *what,
		   uint64_t size)
{
	char shown[256], bound[32], of[48] = "";
	char pid[32] = "";
	enum log_level lvl = LOG_LVL_WARN;

	if (b >= BOUND_MAX)
		return;
	B.st.refused[b]++;
	if (seen(b, dev, ino, path))
		return;
	/* past the budget, at debug level */
	if (log_limit_take(&B.limit, clock_mono_ns(), "lines about refused files"))
		B.st.logged++;
	else
		lvl = LOG_LVL_DEBUG;
	if (B.pid > 0)
		snprintf(pid, sizeof(pid), "pid %d: ", (int)B.pid);
	if (b == BOUND_SERVED) {
		/* what: the filesystem's type, as the mount table says it */
		log_msg(lvl,
			"%s\"%s\": on a %s filesystem, which a process serves (an open or a read "
			"of "
			"it can wait for ever): %s",
			pid, text_clean_copy(path, shown, sizeof(shown)), what, bounds[b].then);
		return;
	}
	if (!bounds[b].bytes) {
		log_msg(lvl, "%s\"%s\": %s is not a regular file: %s", pid,
			text_clean_copy(path, shown, sizeof(shown)), what, bounds[b].then);
		return;
	}
	if (b == BOUND_SECTIONS)
		snprintf(bound, sizeof(bound), "%" PRIu64 " sections", bounds[b].bytes);
	else if (bounds[b].bytes >= 1ULL << 20)
		snprintf(bound, sizeof(bound), "%" PRIu64 " MiB", bounds[b].bytes >> 20);
	else
		snprintf(bound, sizeof(bound), "%" PRIu64 " bytes", bounds[b].bytes);
	if (size)
		snprintf(of, sizeof(of), " of %" PRIu64 " %s", size,
			 b == BOUND_SECTIONS ? "sections" : "bytes");
	log_msg(lvl, "%s\"%s\": %s%s is past the bound of %s: %s", pid,
		text_clean_copy(path, shown, sizeof(shown)), what, of, bound, bounds[b].then);
}

void bounds_openat2_unavailable(const char *path)
{
	char shown[256], pid[32] = "";

	B.st.openat2_unavailable++;
	if (B.openat2_logged)
		return;
	B.openat2_logged = true;
	if (B.pid > 0)
		snprintf(pid, sizeof(pid), "pid %d: ", (int)B.pid);
	log_error("%s\"%s\": openat2 is not available (ENOSYS: a kernel before 5.6, or a seccomp "
		  "filter): no file of a profiled process can be opened safely, none is read",
		  pid, text_clean_copy(path, shown, sizeof(shown)));
}

void bounds_stats(struct bounds_stats *out)
{
	*out = B.st;
	out->held = B.limit.suppressed_total;
}

const char *bounds_name(enum bound_id b)
{
	return b < BOUND_MAX ? bounds[b].name : "?";
}
