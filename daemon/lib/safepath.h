/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * safepath.h - whether a path that rubyprofd trusts (its configuration, a secret or CA file it
 * names, the spool directory) can be changed by no one but root and the daemon's own user.
 *
 * The rule (sshd's StrictModes, with one exception; docs/configuration.md says it for users):
 * the path is resolved one component at a time from /, as the kernel would, and every directory
 * passed through, every symbolic link followed and the object named at the end must be owned by
 * root or by the daemon's effective uid; the object at the end and every directory must not be
 * writable by group or others. The exception: a directory on the way (never the object itself)
 * with the sticky bit, such as /tmp, may be writable by others, since they can neither rename nor
 * remove what they do not own there, and what comes next must be owned by root or the daemon's
 * user. sshd resolves the path with realpath() first and so never sees a directory that holds a
 * link on the way; this walk checks those too.
 */
#ifndef RP_SAFEPATH_H
#define RP_SAFEPATH_H

#include <stddef.h>

/* Symbolic links followed in one check, as the kernel's own bound (ELOOP past it). */
#define SAFEPATH_MAX_LINKS 40

/*
 * 0 when path passes the rule. -EPERM when it does not: err names the part that fails, its
 * owner and mode ("'/etc/x.conf' (owner nobody, mode 0644) can be changed by a user other than
 * root"). Another -errno when it cannot be checked (-ENOENT: a part is missing), with err saying
 * "'PATH': strerror". A relative path is taken from the current directory.
 */
int safepath_check(const char *path, char *err, size_t errlen);

#endif
