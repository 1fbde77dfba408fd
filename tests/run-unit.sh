#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs the Criterion unit test binaries; prints one summary line
# "unit: N passed, N failed, N skipped".
#   tests/run-unit.sh BUILD_DIR TEST_BINARY...
# RP_SUITE names the suite in that line (tests/run-all.sh runs the sanitizer build as "asan-unit").
# With RP_SANITIZED=1, a binary whose output holds a sanitizer report fails even if Criterion
# counted every test as passed: a report from the runner process itself (LeakSanitizer at its
# exit) is no test of Criterion's.
#
# Skips: Criterion's summary counts a skipped test as neither tested nor failed, and names it only
# with --verbose, so the binaries run verbose and every "[SKIP]" line is counted and shown with
# its reason. A skip whose reason starts with "missing:" is a dependency that `make deps` or the
# build provides: with RP_DEPS_INSTALLED=1 (make test, after make deps) it counts as a failure.
set -u
suite=${RP_SUITE:-unit}
san_re='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:'
build=$1
shift
export RP_BUILD=$build
pass=0 fail=0 skip=0
for t in "$@"; do
	out=$("$t" --jobs 2 --verbose 2>&1)
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
	skips=$(grep -E '^\[SKIP\] ' <<<"$out")
	nskip=0
	[ -n "$skips" ] && nskip=$(wc -l <<<"$skips")
	missing=$(grep -E '^\[SKIP\] [^:]+::[^:]+: missing:' <<<"$out")
	if [ "${RP_SANITIZED:-0}" = 1 ] && grep -qE "$san_re" <<<"$out"; then
		echo "FAIL $(basename "$t"): sanitizer report"
		rc=1
	fi
	if [ -n "$missing" ] && [ "${RP_DEPS_INSTALLED:-0}" = 1 ]; then
		printf 'FAIL %s: skipped for a dependency make deps installs:\n%s\n' "$(basename "$t")" "$missing"
		failed=$((failed + $(wc -l <<<"$missing")))
		nskip=$((nskip - $(wc -l <<<"$missing")))
	fi
	if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
		printf '%s\n' "$out" | grep -vE '^\[----\] +$' | grep -vE '^\[(RUN |PASS)\]' >&2
		[ "$failed" -eq 0 ] && failed=1
	fi
	if [ "$nskip" -gt 0 ]; then
		echo "$(basename "$t"): $passing of $tested passed, $nskip skipped:"
		grep -vE '^\[SKIP\] [^:]+::[^:]+: missing:' <<<"$skips" | sed 's/^\[SKIP\] /    /'
		[ "${RP_DEPS_INSTALLED:-0}" = 1 ] || [ -z "$missing" ] || sed 's/^\[SKIP\] /    /' <<<"$missing"
	else
		echo "$(basename "$t"): $passing of $tested passed"
	fi
	pass=$((pass + passing))
	fail=$((fail + failed))
	skip=$((skip + nskip))
done
echo "$suite: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
