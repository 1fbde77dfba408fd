#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the Criterion unit test binaries; prints one summary line "unit: N passed, N failed".
#   tests/run-unit.sh BUILD_DIR TEST_BINARY...
set -u
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
	if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
		printf '%s\n' "$out" | grep -vE '^\[----\] +$' >&2
		[ "$failed" -eq 0 ] && failed=1
	fi
	echo "$(basename "$t"): $passing of $tested passed"
	pass=$((pass + passing))
	fail=$((fail + failed))
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
