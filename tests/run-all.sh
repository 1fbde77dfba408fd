#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The whole test suite: unit tests, then the end-to-end tests (root; skipped with the reason
# otherwise). Ends with one line: "tests: N passed, N failed, N skipped".
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

sum() { sed -nE "s/^$1: ([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\\$2/p" "$log" | tail -n 1; }
p=$(($(sum unit 1) + $(sum e2e 1)))
f=$(($(sum unit 2) + $(sum e2e 2)))
s=$((${s_e2e:=$(sum e2e 4)} + 0))
[ "$unit_rc" -ne 0 ] && [ "$(sum unit 2)" = 0 ] && f=$((f + 1))
[ "$e2e_rc" -ne 0 ] && [ "$(sum e2e 2)" = 0 ] && f=$((f + 1))
echo "tests: $p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
