#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `make profile`: profiles every Ruby running on this host for 10 s; when none runs, profiles
# the example program examples/workload.rb instead, so that a first run always shows a profile.
#   scripts/profile.sh PATH_TO_RUBYPROFD
set -euo pipefail
rubyprofd=$1
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "profile: rubyprofd needs root (BPF and perf events): run 'sudo make profile'" >&2
	exit 1
fi

# A Ruby process maps libruby, or is an executable named ruby*.
running=$(grep -lE '/libruby[^/]*\.so|/ruby[0-9.]*$' /proc/[0-9]*/maps 2>/dev/null | grep -v "^/proc/$$/" || true)
if [ -n "$running" ]; then
	echo "profile: profiling every Ruby process on this host for 10 s"
	exec "$rubyprofd" --oneshot --duration 10 --verbose
fi
echo "profile: no Ruby process is running; profiling the example program examples/workload.rb"
exec "$rubyprofd" --oneshot --duration 10 --verbose -- ruby examples/workload.rb 12
