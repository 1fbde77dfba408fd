# SPDX-License-Identifier: GPL-2.0-only
# Sourced by tests/package/test-live.sh: a Debian root booted with systemd as PID 1
# (systemd-nspawn -b), and commands run inside it as its own root user runs them.
#
#   boot_root CACHED_ROOT WORK_DIR [unified]
#                                      boots an overlay of CACHED_ROOT (never written); sets
#                                      BOOT_ROOT (the root as the host sees it), BOOT_LEADER
#                                      (its PID 1, as the host sees it); 1 with BOOT_WHY if not.
#                                      unified: the root gets only the unified cgroup hierarchy
#                                      (cgroup2 at its /sys/fs/cgroup), not the host's layout
#   in_root COMMAND...                 runs COMMAND inside: its namespaces, its root, a clean env
#   halt_root                          powers it off (then kills it), unmounts the overlay
#
# Why these ways: --register=no and --keep-unit because the host may run no systemd (nor
# machined), so `machinectl shell` and `systemd-run --machine` have nothing to talk to; nsenter
# into the leader's namespaces needs neither. The capabilities are those the packaged unit names
# (nspawn's default set lacks CAP_BPF and CAP_PERFMON) and bpf and perf_event_open pass nspawn's
# own system call filter: with less, the service could not run inside at all. The overlay keeps
# the cached root pristine and costs nothing to make (a copy of the root would take seconds).
# unified: on this host (cgroups v1, with cgroup2 beside them at /sys/fs/cgroup/unified) nspawn
# gives a root the host's hybrid layout unless SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 asks for cgroup2
# alone; Debian 13's systemd 257 boots on both, on the first with the taint "cgroupsv1" (the
# deprecated support that systemd 258 drops), and a Debian 13 host has cgroup2 alone.

BOOT_ROOT= BOOT_LEADER= BOOT_WHY= boot_job= boot_nspawn= boot_dir=

boot_root() {
	local cached=$1 i state unified=
	boot_dir=$2 boot_job= boot_nspawn= BOOT_LEADER=
	[ "${3:-}" = unified ] && unified=1
	mkdir -p "$boot_dir/upper" "$boot_dir/work" "$boot_dir/root"
	if ! mount -t overlay overlay -o "lowerdir=$cached,upperdir=$boot_dir/upper,workdir=$boot_dir/work" \
		"$boot_dir/root" 2>"$boot_dir/mount.err"; then
		BOOT_WHY="cannot mount an overlay of $cached: $(cat "$boot_dir/mount.err")"
		return 1
	fi
	BOOT_ROOT=$boot_dir/root
	# The console is only read: the boot's messages, for the reason when it fails. setsid: the
	# terminal's signals (a ^C of the test) reach the test, which powers the root off itself.
	# setsid forks when it leads a process group, as a background job of a shell with job
	# control does (an interactive shell, or set -m): then $! is not nspawn but a setsid that
	# has already exited (or, with -w, waits for it). So the process that becomes nspawn writes
	# its own pid first (sh's $$, then exec), and -w keeps $! alive exactly as long as nspawn:
	# boot_job ($!, this shell's child, for kill -0 and wait) and boot_nspawn (the pid file's,
	# the one to signal and whose child is the leader) are the same process, or parent and child.
	# (unset, not 0, otherwise: 0 would ask for cgroup v1 alone)
	rm -f "$boot_dir/nspawn.pid"
	# shellcheck disable=SC2016 # $$ and $@ are the inner sh's
	env ${unified:+SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1} setsid -w sh -c 'echo $$ >"$0.tmp" && mv "$0.tmp" "$0" && exec "$@"' \
		"$boot_dir/nspawn.pid" systemd-nspawn -D "$BOOT_ROOT" -b --register=no --keep-unit \
		--capability=CAP_BPF,CAP_PERFMON,CAP_CHECKPOINT_RESTORE,CAP_SYS_PTRACE,CAP_DAC_READ_SEARCH \
		--system-call-filter='bpf perf_event_open' --console=read-only \
		</dev/null >"$boot_dir/console.log" 2>&1 &
	boot_job=$!
	# The pid file (renamed into place: whole when it is there), then nspawn's child, the leader
	# (once sh has become nspawn: sh itself has no child); then systemd inside says when the
	# boot is done.
	for ((i = 0; i < 600; i++)); do
		if ! kill -0 "$boot_job" 2>/dev/null; then
			BOOT_WHY="systemd-nspawn exited during the boot: $(tail -n 3 "$boot_dir/console.log" | tr -d '\r' | tr '\n' ' ')"
			return 1
		fi
		[ -n "$boot_nspawn" ] || read -r boot_nspawn 2>/dev/null <"$boot_dir/nspawn.pid"
		[ -n "$BOOT_LEADER" ] || [ -z "$boot_nspawn" ] ||
			[ "$(cat "/proc/$boot_nspawn/comm" 2>/dev/null)" != systemd-nspawn ] ||
			BOOT_LEADER=$(pgrep -P "$boot_nspawn" | head -n 1)
		if [ -n "$BOOT_LEADER" ]; then
			state=$(in_root systemctl is-system-running 2>/dev/null)
			case "$state" in running | degraded) return 0 ;; esac
		fi
		sleep 0.1
	done
	BOOT_WHY="no boot within 60 s (system state: ${state:-unknown}): $(tail -n 3 "$boot_dir/console.log" | tr -d '\r' | tr '\n' ' ')"
	return 1
}

in_root() {
	nsenter -t "$BOOT_LEADER" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive "$@"
}

halt_root() {
	local i
	if [ -n "$boot_job" ] && kill -0 "$boot_job" 2>/dev/null; then
		# nspawn turns SIGTERM into the container's poweroff (nspawn itself: a setsid -w
		# that forked would only wait on)
		[ -n "$boot_nspawn" ] && kill -TERM "$boot_nspawn" 2>/dev/null
		for ((i = 0; i < 300; i++)); do
			kill -0 "$boot_job" 2>/dev/null || break
			sleep 0.1
		done
		# a leader that outlives nspawn would keep its pid namespace, and the overlay, alive
		if kill -0 "$boot_job" 2>/dev/null; then
			[ -n "$boot_nspawn" ] && kill -KILL "$boot_nspawn" 2>/dev/null
			kill -KILL "$boot_job" 2>/dev/null
		fi
		[ -n "$BOOT_LEADER" ] && kill -KILL "$BOOT_LEADER" 2>/dev/null
		wait "$boot_job" 2>/dev/null
	fi
	[ -n "$BOOT_ROOT" ] && umount "$BOOT_ROOT" 2>/dev/null
	[ -n "$boot_dir" ] && rm -rf --one-file-system "$boot_dir"
	boot_job= boot_nspawn= BOOT_LEADER= BOOT_ROOT= boot_dir=
}
