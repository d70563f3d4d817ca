#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run libFuzzer targets: tests/fuzz/run.sh SECONDS TARGET...
# Each target first runs every input of its corpus, tests/fuzz/corpus/TARGET/, once (the
# regression inputs), then fuzzes for SECONDS from them. New inputs go to
# $FUZZ_NEW/TARGET (default $FUZZ_BUILD/corpus/TARGET), a crash's input to
# $FUZZ_ARTIFACTS (default $FUZZ_BUILD) as TARGET-crash-SHA1, and the output to
# $FUZZ_ARTIFACTS/TARGET.log. One line per target: its runs, executions per second and new
# inputs; the last line "N passed, N failed". Exit 1 if a target failed.
set -u
cd "$(dirname "$0")/../.." || exit 1
secs=$1
shift
: "${FUZZ_BUILD:=build-fuzz}"
: "${FUZZ_NEW:=$FUZZ_BUILD/corpus}"
: "${FUZZ_ARTIFACTS:=$FUZZ_BUILD}"
mkdir -p "$FUZZ_ARTIFACTS"
# Leaks of the libraries plugdisk uses, not its own (each with its reason).
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}
pass=0 failn=0
for t in "$@"; do
	bin=$FUZZ_BUILD/fuzz_$t seeds=tests/fuzz/corpus/$t log=$FUZZ_ARTIFACTS/$t.log
	new=$FUZZ_NEW/$t
	mkdir -p "$new"
	# A hang is a failure too: no input may take 25 s.
	opts=(-timeout=25 -rss_limit_mb=2048 -artifact_prefix="$FUZZ_ARTIFACTS/$t-")
	if ! [ -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
		echo "FAIL  $t: no corpus in $seeds"; failn=$((failn + 1)); continue
	fi
	if ! "$bin" "${opts[@]}" "$seeds"/* >"$log" 2>&1; then
		echo "FAIL  $t: an input of $seeds fails (log $log)"
		grep -E '^(Running:|==[0-9]+==ERROR|SUMMARY|fuzz:)' "$log" | tail -n 6 | sed 's/^/      | /'
		failn=$((failn + 1)); continue
	fi
	if ! "$bin" "${opts[@]}" -max_total_time="$secs" -print_final_stats=1 "$new" "$seeds" \
		>>"$log" 2>&1; then
		echo "FAIL  $t: crashed after fuzzing (log $log; input $FUZZ_ARTIFACTS/$t-*)"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz:)' "$log" | head -n 5 | sed 's/^/      | /'
		failn=$((failn + 1)); continue
	fi
	runs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$log")
	rate=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$log")
	printf 'PASS  %s: %d corpus inputs, then %s runs in %s s (%s exec/s); %d inputs in %s\n' \
		"$t" "$(find "$seeds" -type f | wc -l)" "$runs" "$secs" "$rate" \
		"$(find "$new" -type f | wc -l)" "$new"
	pass=$((pass + 1))
done
echo "$pass passed, $failn failed"
[ "$failn" = 0 ]
