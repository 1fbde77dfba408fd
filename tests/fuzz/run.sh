#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Runs libFuzzer targets for a time each, from the committed seeds (tests/fuzz/corpus/NAME, which
# also holds the regression inputs of crashes found so far) into a working corpus in
# BUILD/fuzz/corpus/NAME. Per target: executions, edges covered and CPU seconds; then
# "fuzz: N passed, N failed, N skipped". A target passes when it ran its time without a crash;
# the crashing input is left as BUILD/fuzz/crash-NAME-*.
#   tests/fuzz/run.sh BUILD_DIR SECONDS NAME...
# SECONDS 0: no fuzzing, every seed (committed and built) run once, as a regression test (the
# suite "fuzz-corpus" of `make test`).
set -u
build=$1 secs=$2
# fuzz_debugfile finds its fixed object (a fixture) in the build directory.
export RP_BUILD=$build
shift 2
cd "$(dirname "$0")/../.." || exit 1

pass=0 fail=0 skip=0 total_cpu=0
for name in "$@"; do
	bin=$build/fuzz/fuzz_$name
	if [ ! -x "$bin" ]; then
		echo "fuzz_$name: SKIP (no $bin: make fuzz-build)"
		skip=$((skip + 1))
		continue
	fi
	work=$build/fuzz/corpus/$name
	log=$build/fuzz/$name.log
	mkdir -p "$work"
	seeds=()
	[ -d "tests/fuzz/corpus/$name" ] && seeds+=("tests/fuzz/corpus/$name")
	[ -d "$build/fuzz/$name-seeds" ] && seeds+=("$build/fuzz/$name-seeds")
	# -runs=0 with the seeds alone: each input once, nothing written back
	if [ "$secs" = 0 ]; then
		run=(-runs=0)
	else
		run=(-max_total_time="$secs" "$work")
	fi
	# CPU seconds (user + system) of the fuzzer, from bash's time keyword.
	cpu=$({ TIMEFORMAT='%U %S'; time "$bin" "${run[0]}" -print_final_stats=1 \
		-rss_limit_mb=2048 -close_fd_mask=3 -timeout=10 -artifact_prefix="$build/fuzz/crash-$name-" \
		"${run[@]:1}" "${seeds[@]}" >"$log" 2>&1; } 2>&1)
	rc=$?
	cpu=$(awk '{ printf "%.1f", $1 + $2 }' <<<"$cpu")
	total_cpu=$(awk -v a="$total_cpu" -v b="$cpu" 'BEGIN { printf "%.1f", a + b }')
	execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)$/\1/p' "$log" | tail -n 1)
	edges=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | cut -d' ' -f2)
	if [ "$rc" -eq 0 ] && grep -q '^Done [0-9]* runs' "$log"; then
		echo "fuzz_$name: ok, ${execs:-?} executions, ${edges:-?} edges, $cpu s CPU"
		pass=$((pass + 1))
	else
		echo "fuzz_$name: FAILED (exit $rc), ${execs:-?} executions, $cpu s CPU; log $log:"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)|runtime error' "$log" |
			head -n 8 | sed 's/^/    /'
		fail=$((fail + 1))
	fi
done
suite=fuzz
[ "$secs" = 0 ] && suite=fuzz-corpus
echo "$suite CPU time: $total_cpu s"
echo "$suite: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
