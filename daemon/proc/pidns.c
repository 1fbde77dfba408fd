// SPDX-License-Identifier: GPL-2.0-only
/* pidns.c - the daemon's pid namespace, and whether its /proc is that namespace's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/pidns.h"
#include "proc/procs.h"

/* NSpid lists the pids of a task from the namespace of the /proc it is read in down to the
 * task's own: more than one means that /proc is of a namespace above the daemon's. */
#define PIDNS_MOUNT_HINT                                                                           \
	"mount a /proc of rubyprofd's own pid namespace over /proc (unshare --pid --fork "         \
	"--mount-proc; a container's own /proc), or run it in the host's pid namespace"

int pidns_check_nspid(const char *field, pid_t self, char *why, size_t whylen)
{
	const char *p = field;
	long first = 0, v;
	int n = 0;
	char *end;

	for (;; p = end) {
		v = strtol(p, &end, 10);
		if (end == p)
			break;
		if (n++ == 0)
			first = v;
	}
	if (n == 0 || first <= 0)
		return -EINVAL;
	if (n == 1 && first == (long)self)
		return 0;
	if (n > 1)
		snprintf(why, whylen,
			 "/proc is mounted for a pid namespace %d level(s) above rubyprofd's (it "
			 "shows rubyprofd as pid %ld, rubyprofd is pid %d in its own): %s",
			 n - 1, first, (int)self, PIDNS_MOUNT_HINT);
	else
		snprintf(why, whylen,
			 "/proc is not mounted for rubyprofd's pid namespace (it shows rubyprofd "
			 "as pid %ld, rubyprofd is pid %d): %s",
			 first, (int)self, PIDNS_MOUNT_HINT);
	return -EXDEV;
}

int pidns_self(uint32_t *ino, char *why, size_t whylen)
{
	char field[256];
	struct stat st;
	int err;

	*ino = 0;
	why[0] = '\0';
	/* a /proc of a namespace beside or below the daemon's has no /proc/self */
	err = procs_status_field("/proc/self/status", "NSpid", field, sizeof(field));
	if (err == -ENOENT) {
		snprintf(why, whylen,
			 "/proc/self/status cannot be read or has no NSpid line: /proc is not "
			 "mounted for rubyprofd's pid namespace (or the kernel is older than 4.1): "
			 "%s",
			 PIDNS_MOUNT_HINT);
		return -EXDEV;
	}
	if (err) {
		snprintf(why, whylen, "cannot read /proc/self/status: %s", strerror(-err));
		return err;
	}
	err = pidns_check_nspid(field, getpid(), why, whylen);
	if (err == -EINVAL)
		snprintf(why, whylen, "/proc/self/status: NSpid holds no pid");
	if (err)
		return err;
	if (stat("/proc/self/ns/pid", &st)) {
		err = -errno;
		snprintf(why, whylen, "cannot stat \"/proc/self/ns/pid\": %s", strerror(-err));
		return err;
	}
	*ino = st.st_ino == PIDNS_INIT_INO ? 0 : (uint32_t)st.st_ino;
	return 0;
}
