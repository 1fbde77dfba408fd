#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The test suites, in one of three sets, ending with one line "tests: N passed, N failed,
# N skipped" (a skip is counted, and named by its suite):
#
#   tests/run-all.sh --set quick BUILD_DIR                  make test
#   tests/run-all.sh --set full  BUILD_DIR ASAN_BUILD_DIR   make test-full
#   tests/run-all.sh --set rest  BUILD_DIR ASAN_BUILD_DIR   make test-rest: full minus quick
#
# quick: every feature once. The unit tests, the stand-in collector's self-test
# (tests/collector), the views in a real browser (tests/views), every fuzz target over its seeds
# (fuzz-corpus), the end-to-end tests: all of them on the host's Ruby, the smoke set
# (E2E.smoke) on each Debian root, several at once (tests/e2e/run.rb); and the package under a
# live systemd (tests/package/test-live.sh: a booted Debian 12 root, package-live), alone.
# full adds the rest of the matrix (every end-to-end test on every root), the package test
# (tests/package/test-deb.sh: make deb, lintian, the chroot install), the package under a live
# systemd in a booted Debian 13 root (package-live-trixie), the upgrade from an earlier package
# in booted Debian 12 and 13 roots (tests/package/test-upgrade.sh: package-upgrade,
# package-upgrade-trixie), a short run of each fuzz
# target (FUZZ_SMOKE_SECONDS each), and the unit tests and a part of the end-to-end tests again
# with the sanitizer build (ASAN_BUILD_DIR, SANITIZE=address,undefined), as the suites asan-unit
# and asan-e2e. rest is what full runs beyond quick, for CI's second step after `make test`.
#
# Environment: RP_ASAN_ONLY=1 runs only the sanitizer suites (make test-asan); RP_E2E_FILTER
# narrows the end-to-end tests (a regex on "ruby-X.Y.Z/name"); RP_E2E_RUBIES, RP_E2E_JOBS as
# tests/e2e/run.rb reads them.
#
# The Debian roots of the e2e version matrix (tests/e2e/mkroot.sh) are made in the background
# from the start, while the unit tests run; the e2e runner and the package test wait for them
# (mkroot.sh locks each root). From an empty cache they take a few minutes each. So is the .deb
# of the live suites, once for all of them (start_deb).
set -u
set_name=quick
if [ "${1:-}" = --set ]; then
	set_name=$2
	shift 2
fi
case "$set_name" in
quick | full | rest) ;;
*) echo "run-all.sh: --set quick, full or rest" >&2; exit 2 ;;
esac
build=${1:-build}
asan_build=${2:-}
cd "$(dirname "$0")/.." || exit 1

log=$(mktemp)
roots_dir=$(mktemp -d)
# Roots still being made when the suite stops early: stop their makers (mkroot.sh starts over
# from an incomplete root).
cleanup() {
	local p
	# (jobs -pr: only those of this shell still running, no pid reused meanwhile)
	for p in $(jobs -pr); do
		kill "$p" 2>/dev/null
	done
	rm -rf "$log" "$roots_dir"
}
trap cleanup EXIT

# The unit test binaries of a build directory.
unit_bins() {
	local f
	for f in "$1"/tests/test_*; do
		[[ -x $f && $f != *.d ]] && echo "$f"
	done
}

# The end-to-end tests under the sanitizers: the host's Ruby only, the tests that exercise the
# most of the daemon (stacks, labels, process lifecycle, the service and its churn, a deep stack,
# the symbolizer's caches dropped and refilled under 50,000 methods).
ASAN_E2E='^ruby-[^/]*/(exact_stack|labels|fork_children|exec_in_place|service|service_churn|deep_5000|many_methods)$'

# Starts making the Debian roots the e2e matrix (RP_E2E_RUBIES, as tests/e2e/run.rb reads it)
# and the package test need, each in the background; a cached root is found at once.
start_roots() {
	local v vs=() started=()
	[ "$(id -u)" = 0 ] || return 0
	IFS=, read -ra vs <<<"${RP_E2E_RUBIES:-host,2.7,3.3,3.4}"
	# (bookworm-boot: package-live in quick, package-upgrade in rest)
	vs+=(bookworm-boot)
	[ "$set_name" = quick ] || vs+=(bookworm trixie-boot)
	for v in "${vs[@]}"; do
		v=${v// /}
		case "$v" in host | "") continue ;; esac
		tests/e2e/mkroot.sh "$v" >"$roots_dir/$v.out" 2>"$roots_dir/$v.err" &
		started+=("$v")
	done
	[ ${#started[@]} -gt 0 ] && echo "== Debian roots (${started[*]}): made in the background, cached ones found at once"
}

# The .deb of the live suites (package-live and, in full and rest, package-live-trixie and the
# upgrades): made once, in the background from the start at the lowest priority (nice 19: it
# takes the CPU the suites leave, most of it during the e2e tests, which mostly wait), and
# waited for before the first suite that needs it; each live suite then installs that one
# (RP_DEB_MADE) instead of running make deb itself (17-47 s each). Where it failed, a live
# suite runs make deb itself and fails with its log.
deb_pid= deb_t0=
start_deb() {
	[ "$(id -u)" = 0 ] || return 0
	deb_t0=$(date +%s)
	nice -n 19 make --no-print-directory BUILD="$build" deb >"$roots_dir/deb.log" 2>&1 &
	deb_pid=$!
}
wait_deb() {
	local made
	[ -n "$deb_pid" ] || return 0
	if wait "$deb_pid"; then
		made=$build/rubyprofd_$(sed -n 's/^VERSION := //p' Makefile)-1_$(dpkg --print-architecture).deb
		[ -f "$made" ] && export RP_DEB_MADE="$(($(stat -c %Y "$made") - deb_t0)) s at nice 19, beside the suites before it"
	else
		echo "== make deb (in the background) failed: the live suites run it themselves"
		tail -n 5 "$roots_dir/deb.log"
	fi
	deb_pid=
}

suites=() rcs=() secs=()
# The seconds of the suite that just ended (since the previous one ended).
t0=$SECONDS
took() {
	secs+=($((SECONDS - t0)))
	t0=$SECONDS
}
fuzz_names() {
	local f
	for f in tests/fuzz/fuzz_*.c; do
		f=${f##*/fuzz_}
		echo "${f%.c}"
	done
}

if [ "${RP_ASAN_ONLY:-0}" != 1 ]; then
	start_roots
	start_deb

	if [ "$set_name" != rest ]; then
		echo "== unit tests"
		mapfile -t bins < <(unit_bins "$build")
		tests/run-unit.sh "$build" "${bins[@]}" | tee -a "$log"
		suites+=(unit) rcs+=("${PIPESTATUS[0]}"); took

		echo "== collector stand-in (tests/collector)"
		/usr/bin/python3 tests/collector/test_collector.py "$build" | tee -a "$log"
		suites+=(collector) rcs+=("${PIPESTATUS[0]}"); took

		# rubyprofd report's views in headless chromium and speedscope
		echo "== views"
		python3 tests/views/run.py "$build" | tee -a "$log"
		suites+=(views) rcs+=("${PIPESTATUS[0]}"); took

		echo "== fuzz targets over their seeds"
		mapfile -t names < <(fuzz_names)
		tests/fuzz/run.sh "$build" 0 "${names[@]}" 2>&1 | tee -a "$log"
		suites+=(fuzz-corpus) rcs+=("${PIPESTATUS[0]}"); took
	fi

	echo "== end-to-end tests ($set_name)"
	RP_E2E_SET=$set_name ruby tests/e2e/run.rb "$build" ${RP_E2E_FILTER:+"$RP_E2E_FILTER"} | tee -a "$log"
	suites+=(e2e) rcs+=("${PIPESTATUS[0]}"); took

	# after the end-to-end tests, never beside them: the service it starts in the booted root
	# samples every CPU of the machine
	wait_deb
	if [ "$set_name" != rest ]; then
		tests/package/test-live.sh "$build" | tee -a "$log"
		suites+=(package-live) rcs+=("${PIPESTATUS[0]}"); took
	fi

	if [ "$set_name" != quick ]; then
		echo "== package tests"
		tests/package/test-deb.sh "$build" | tee -a "$log"
		suites+=(package) rcs+=("${PIPESTATUS[0]}"); took

		# alone, as package-live: each starts rubyprofd in a booted root
		tests/package/test-live.sh "$build" trixie | tee -a "$log"
		suites+=(package-live-trixie) rcs+=("${PIPESTATUS[0]}"); took
		tests/package/test-upgrade.sh "$build" bookworm | tee -a "$log"
		suites+=(package-upgrade) rcs+=("${PIPESTATUS[0]}"); took
		tests/package/test-upgrade.sh "$build" trixie | tee -a "$log"
		suites+=(package-upgrade-trixie) rcs+=("${PIPESTATUS[0]}"); took

		echo "== fuzz smoke"
		make --no-print-directory BUILD="$build" fuzz-smoke 2>&1 | tee -a "$log"
		suites+=(fuzz) rcs+=("${PIPESTATUS[0]}"); took
	fi
fi

if [ "$set_name" != quick ] && [ -n "$asan_build" ]; then
	# Any report fails: UBSan stops at the first (the build has -fno-sanitize-recover=all, and
	# halt_on_error), ASan aborts, and LeakSanitizer checks every exit (tests/lsan.supp holds the
	# leaks of libraries that are not ours). The e2e runner collects the reports (RP_SANITIZED).
	export ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}
	export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}
	export RP_SANITIZED=1
	start=$SECONDS

	echo "== unit tests (ASan+UBSan)"
	mapfile -t bins < <(unit_bins "$asan_build")
	RP_SUITE=asan-unit tests/run-unit.sh "$asan_build" "${bins[@]}" | tee -a "$log"
	suites+=(asan-unit) rcs+=("${PIPESTATUS[0]}"); took

	echo "== end-to-end tests (ASan+UBSan)"
	RP_SUITE=asan-e2e RP_E2E_SET=full RP_E2E_RUBIES=host RP_CHURN=${RP_ASAN_CHURN:-40} \
		ruby tests/e2e/run.rb "$asan_build" "${RP_ASAN_E2E_FILTER:-$ASAN_E2E}" | tee -a "$log"
	suites+=(asan-e2e) rcs+=("${PIPESTATUS[0]}"); took
	echo "== sanitizer suites: $((SECONDS - start)) s"
fi

# The last "SUITE: N passed, N failed[, N skipped]" line of a suite; field 1, 2 or 4; 0 if absent.
sum() {
	local v
	v=$(sed -nE "s/^$1: ([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\\$2/p" "$log" | tail -n 1)
	echo "${v:-0}"
}
p=0 f=0 s=0
skipped=
for i in "${!suites[@]}"; do
	p=$((p + $(sum "${suites[i]}" 1)))
	f=$((f + $(sum "${suites[i]}" 2)))
	n=$(sum "${suites[i]}" 4)
	s=$((s + n))
	[ "$n" -gt 0 ] && skipped+=" ${suites[i]} $n,"
	# A suite that failed without counting a failure (it crashed) counts as one.
	[ "${rcs[i]}" -ne 0 ] && [ "$(sum "${suites[i]}" 2)" = 0 ] && f=$((f + 1))
done
line="time per suite:"
for i in "${!suites[@]}"; do
	line+=" ${suites[i]} ${secs[i]} s,"
done
echo "${line%,} (${SECONDS} s in all)"
[ -n "$skipped" ] && echo "skipped per suite:${skipped%,} (each skip is named above)"
echo "tests: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
