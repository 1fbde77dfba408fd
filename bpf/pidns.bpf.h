/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pidns.bpf.h - pids as the daemon sees them: in its own pid namespace (docs/containers.md).
 *
 * The kernel's task->pid and task->tgid are those of the initial pid namespace; the daemon reads
 * its /proc, which shows the pids of the namespace it runs in. In the initial namespace the two
 * agree and nothing is translated (pidns_ino is 0: the verifier drops every branch below, and the
 * programs are the ones they were). Elsewhere a task's pid there is its struct pid's
 * numbers[level] when that entry's namespace is the daemon's: a task of the daemon's namespace
 * or of one nested in it. Any other task has no pid there, and is not the daemon's to see.
 */
#ifndef RP_PIDNS_BPF_H
#define RP_PIDNS_BPF_H

/* The inode number of the daemon's pid namespace, 0 for the initial one. Set before load. */
const volatile __u32 pidns_ino = 0;

/* Its level (the initial namespace is level 0): found by rp_iter_pidns (rubyprof.bpf.c) after
 * the CPU object's load, set before the wall object's. Read only when pidns_ino is set. */
__u32 pidns_level;

/* pid's number in the daemon's namespace, 0 when it has none there. */
static __always_inline __u32 pidns_nr(struct pid *pid)
{
	struct pid_namespace *ns;
	struct upid *up;
	__u32 level = pidns_level;
	int nr;

	if (!pid || level > RP_PIDNS_MAX_LEVEL || BPF_CORE_READ(pid, level) < level)
		return 0;
	/* numbers[] is a flexible array: the entry's address by its element size */
	up = (struct upid *)((__u8 *)__builtin_preserve_access_index(&pid->numbers[0]) +
			     level * bpf_core_type_size(struct upid));
	ns = BPF_CORE_READ(up, ns);
	if (!ns || BPF_CORE_READ(ns, ns.inum) != pidns_ino)
		return 0;
	nr = BPF_CORE_READ(up, nr);
	return nr > 0 ? (__u32)nr : 0;
}

/*
 * task's tgid and tid in the daemon's namespace. False (both 0) when it has none there: a task
 * of a namespace beside or above the daemon's.
 */
static __always_inline bool pidns_ids(struct task_struct *task, __u32 *tgid, __u32 *tid)
{
	if (!pidns_ino) {
		*tgid = BPF_CORE_READ(task, tgid);
		*tid = BPF_CORE_READ(task, pid);
		return true;
	}
	*tid = pidns_nr(BPF_CORE_READ(task, thread_pid));
	*tgid = *tid ? pidns_nr(BPF_CORE_READ(task, group_leader, thread_pid)) : 0;
	if (!*tgid)
		*tid = 0;
	return *tgid != 0;
}

#endif
