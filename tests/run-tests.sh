#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run test programs and scripts one by one; exit 0 = pass, 77 = skip, other = fail.
# Logs go to $LOGDIR/NAME.log; each test gets at most $TEST_TIMEOUT seconds (default 600).
# The last line is the summary: "N passed, N failed, N skipped".
# With STRICT_SKIPS=1 (CI), a skip counts as a failure unless tests/skips names it: a line
# "NAME-GLOB<tab>REASON" allows a skip of the runs NAME-GLOB matches whose SKIP message
# contains REASON. A test that skips for a missing command thus fails CI: 'make deps' must
# install it.
# Mount tests (tests/mount/*.sh) run once per FUSE transport in $TRANSPORTS (default
# "classic io_uring"; PLUGDISK_TRANSPORT tells tests/lib.sh which); a run on io_uring is
# named NAME@io_uring and skips where the kernel lacks it.
set -u
LOGDIR=${LOGDIR:-build/test-logs}
TEST_TIMEOUT=${TEST_TIMEOUT:-600}
TRANSPORTS=${TRANSPORTS:-classic io_uring}
STRICT_SKIPS=${STRICT_SKIPS:-0}
SKIPS_FILE=${SKIPS_FILE:-$(dirname "$0")/skips}
mkdir -p "$LOGDIR"

# skip_allowed NAME MESSAGE: whether tests/skips allows this skip.
skip_allowed() {
	local glob reason
	[ -r "$SKIPS_FILE" ] || return 1
	while IFS=$'\t' read -r glob reason; do
		[[ -z $glob || $glob == \#* || -z $reason ]] && continue
		# shellcheck disable=SC2053 # the name is a glob
		[[ $1 == $glob && $2 == *"$reason"* ]] && return 0
	done <"$SKIPS_FILE"
	return 1
}
pass=0 failn=0 skipn=0 failed=()
runs=()
for t in "$@"; do
	if [[ $t == *mount/*.sh ]]; then
		for tr in $TRANSPORTS; do runs+=("$t@$tr"); done
	else
		runs+=("$t@")
	fi
done
for run in "${runs[@]}"; do
	t=${run%@*} tr=${run##*@}
	name=$(basename "$t"); name=${name%.sh}
	[ -z "$tr" ] || [ "$tr" = classic ] || name=$name@$tr
	export PLUGDISK_TRANSPORT=${tr:-classic}
	log=$LOGDIR/$name.log
	start=$(date +%s.%N)
	# A hung test is stopped (SIGTERM, then SIGKILL 20 s later) after TEST_TIMEOUT seconds;
	# its cleanup trap still runs on SIGTERM. timeout runs the test in its own process
	# group, so a Ctrl-C here is passed on to it explicitly.
	if [[ $t == *.sh ]]; then timeout -k 20 "$TEST_TIMEOUT" bash "$t" >"$log" 2>&1 &
	else timeout -k 20 "$TEST_TIMEOUT" "$t" >"$log" 2>&1 & fi
	tpid=$!
	trap 'kill -TERM $tpid 2>/dev/null; wait $tpid; echo interrupted; exit 130' INT TERM
	wait $tpid
	rc=$?
	trap - INT TERM
	[ "$rc" != 124 ] || echo "timed out after $TEST_TIMEOUT s" >>"$log"
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
	case $rc in
	0) pass=$((pass + 1)); printf 'PASS  %-40s %6ss\n' "$name" "$secs" ;;
	77)
		msg=$(grep -m1 SKIP "$log")
		if [ "$STRICT_SKIPS" = 1 ] && ! skip_allowed "$name" "$msg"; then
			failn=$((failn + 1)); failed+=("$name")
			printf 'FAIL  %-40s skipped, and tests/skips does not allow it: %s\n' "$name" "$msg"
		else
			skipn=$((skipn + 1)); printf 'SKIP  %-40s %s\n' "$name" "$msg"
		fi ;;
	*) failn=$((failn + 1)); failed+=("$name"); printf 'FAIL  %-40s (exit %d, log %s)\n' "$name" "$rc" "$log"
	   tail -n 20 "$log" | sed 's/^/      | /' ;;
	esac
done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "$pass passed, $failn failed, $skipn skipped"
[ "$failn" -eq 0 ]
