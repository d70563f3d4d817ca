#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stats, top and ctl use a directory only if it is a plugdisk mount: where DIR/stats or
# DIR/control is a FIFO they answer at once (no wait for a writer), and where DIR/control is
# a plain file, ctl neither writes it nor succeeds. Each exits 4, "not a plugdisk mount".
# (timeout only turns a hang into a failure.)
. "$(dirname "$0")/../lib.sh"
require_cmd mkfifo timeout

mkdir "$T/fifo" "$T/plain"
mkfifo "$T/fifo/stats" "$T/fifo/control"
for cmd in "stats $T/fifo" "stats $T/fifo --format=json" "ctl $T/fifo" "ctl $T/fifo stop"; do
	# shellcheck disable=SC2086 # the words of the command
	expect_exit 4 timeout 20 "$PLUGDISK" $cmd
	grep -q "not a plugdisk mount\|is a plugdisk mounted there" "$T/out" ||
		fail "$cmd: $(cat "$T/out")"
done

expect_exit 4 timeout 20 "$PLUGDISK" top "$T/fifo" 0.1 --once
grep -q "not a file of a FUSE mount\|not a plugdisk mount" "$T/out" || fail "top: $(cat "$T/out")"

echo "keep me" >"$T/plain/control"
echo "stats: not these" >"$T/plain/stats"
expect_exit 4 "$PLUGDISK" ctl "$T/plain" stop
grep -q "^plugdisk ctl: $T/plain is not a plugdisk mount" "$T/out" || fail "ctl stop: $(cat "$T/out")"
assert_eq "$(cat "$T/plain/control")" "keep me" "DIR/control after ctl DIR stop"
expect_exit 4 "$PLUGDISK" ctl "$T/plain"
expect_exit 4 "$PLUGDISK" stats "$T/plain"
grep -q "^plugdisk stats: $T/plain is not a plugdisk mount" "$T/out" || fail "stats: $(cat "$T/out")"
log "stats, top and ctl refuse FIFOs and plain files at once, with status 4"
