#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The whole test suite: unit tests, the end-to-end tests (root; skipped with the reason
# otherwise), the package test (tests/package/test-deb.sh), then a short run of each fuzz target
# (make fuzz-smoke: FUZZ_SMOKE_SECONDS each). Ends with one line:
# "tests: N passed, N failed, N skipped".
#   tests/run-all.sh BUILD_DIR
set -u
build=${1:-build}
cd "$(dirname "$0")/.." || exit 1

log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "== unit tests"
bins=()
for f in "$build"/tests/test_*; do
	[[ -x $f && $f != *.d ]] && bins+=("$f")
done
tests/run-unit.sh "$build" "${bins[@]}" | tee -a "$log"
unit_rc=${PIPESTATUS[0]}

echo "== end-to-end tests"
ruby tests/e2e/run.rb "$build" ${RP_E2E_FILTER:+"$RP_E2E_FILTER"} | tee -a "$log"
e2e_rc=${PIPESTATUS[0]}

echo "== package tests"
tests/package/test-deb.sh "$build" | tee -a "$log"
package_rc=${PIPESTATUS[0]}

echo "== fuzz smoke"
make --no-print-directory BUILD="$build" fuzz-smoke 2>&1 | tee -a "$log"
fuzz_rc=${PIPESTATUS[0]}

# The last "SUITE: N passed, N failed[, N skipped]" line of a suite; field 1, 2 or 4; 0 if absent.
sum() {
	local v
	v=$(sed -nE "s/^$1: ([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\\$2/p" "$log" | tail -n 1)
	echo "${v:-0}"
}
suites=(unit e2e package fuzz)
rcs=("$unit_rc" "$e2e_rc" "$package_rc" "$fuzz_rc")
p=0 f=0 s=0
for i in "${!suites[@]}"; do
	p=$((p + $(sum "${suites[i]}" 1)))
	f=$((f + $(sum "${suites[i]}" 2)))
	s=$((s + $(sum "${suites[i]}" 4)))
	# A suite that failed without counting a failure (it crashed) counts as one.
	[ "${rcs[i]}" -ne 0 ] && [ "$(sum "${suites[i]}" 2)" = 0 ] && f=$((f + 1))
done
echo "tests: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
