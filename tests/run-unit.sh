#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the Criterion unit test binaries; prints one summary line "unit: N passed, N failed".
#   tests/run-unit.sh BUILD_DIR TEST_BINARY...
# RP_SUITE names the suite in that line (tests/run-all.sh runs the sanitizer build as "asan-unit").
# With RP_SANITIZED=1, a binary whose output holds a sanitizer report fails even if Criterion
# counted every test as passed: a report from the runner process itself (LeakSanitizer at its
# exit) is no test of Criterion's.
set -u
suite=${RP_SUITE:-unit}
san_re='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'
build=$1
shift
export RP_BUILD=$build
pass=0 fail=0
for t in "$@"; do
	out=$("$t" --jobs 2 2>&1)
	rc=$?
	line=$(printf '%s\n' "$out" | grep -E 'Synthesis: Tested' | tail -n 1)
	tested=$(sed -nE 's/.*Tested: ([0-9]+).*/\1/p' <<<"$line")
	passing=$(sed -nE 's/.*Passing: ([0-9]+).*/\1/p' <<<"$line")
	if [ -z "$tested" ]; then
		printf '%s\n' "$out"
		echo "FAIL $(basename "$t"): no Criterion summary (exit $rc)"
		fail=$((fail + 1))
		continue
	fi
	failed=$((tested - passing))
	if [ "${RP_SANITIZED:-0}" = 1 ] && grep -qE "$san_re" <<<"$out"; then
		echo "FAIL $(basename "$t"): sanitizer report"
		rc=1
	fi
	if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
		printf '%s\n' "$out" | grep -vE '^\[----\] +$' >&2
		[ "$failed" -eq 0 ] && failed=1
	fi
	echo "$(basename "$t"): $passing of $tested passed"
	pass=$((pass + passing))
	fail=$((fail + failed))
done
echo "$suite: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
