/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pidns.h - the daemon's pid namespace, and whether the /proc it reads is that namespace's
 * (docs/containers.md). The BPF programs translate every pid into that namespace; pids the
 * daemon reads in /proc must be of the same one.
 */
#ifndef RP_PIDNS_H
#define RP_PIDNS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The inode number of the initial pid namespace (the kernel's PROC_PID_INIT_INO). */
#define PIDNS_INIT_INO 0xEFFFFFFCU

/*
 * The inode number of the daemon's pid namespace (/proc/self/ns/pid), 0 for the initial one.
 * Fails, why saying so, when /proc is not mounted for that namespace: its pids would not be the
 * daemon's. 0 or -errno.
 */
int pidns_self(uint32_t *ino, char *why, size_t whylen);

/*
 * Checks the NSpid field of the daemon's own /proc/self/status (its text after "NSpid:"): the
 * /proc is its namespace's when the field holds one pid, the daemon's getpid() `self`. 0, or
 * -EXDEV with why saying what the field shows; -EINVAL when it holds no pid.
 */
int pidns_check_nspid(const char *field, pid_t self, char *why, size_t whylen);

#endif
