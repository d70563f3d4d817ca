#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A refused control command keeps its reason where a script with `echo` can find it: logged
# with the command, and shown as "# last refused: COMMAND: REASON" when control is read, until
# another refusal replaces it. Written back, the listing (comment included) replays the state.
. "$(dirname "$0")/../lib.sh"
require_fuse

pd_start
grep -q "^# last refused" "$MNT/control" && fail "a refusal listed before any"
echo "fault add op=wirte error=EIO" >"$MNT/control" 2>"$T/err" && fail "a bad fault was taken"
grep -q "Invalid argument" "$T/err" || fail "echo's error: $(cat "$T/err")"
want='# last refused: fault add op=wirte error=EIO: fault add: op: expected read, write, flush, discard or any, comma separated (got "wirte")'
assert_eq "$(grep '^# last refused' "$MNT/control")" "$want" "the listing's refusal"
grep -qF "control: 'fault add op=wirte error=EIO': fault add: op: expected" "$T/daemon.log" ||
	fail "the refusal was not logged: $(cat "$T/daemon.log")"
# The next refusal replaces it; a command taken leaves it.
echo "frobnicate" >"$MNT/control" 2>/dev/null && fail "an unknown command was taken"
echo "stop" >"$MNT/control" || fail "stop"
assert_eq "$(grep '^# last refused' "$MNT/control")" \
	"# last refused: frobnicate: unknown command 'frobnicate' (try: help)" "the second refusal"
# plugdisk ctl's listing shows it too; the listing written back still replays.
"$PLUGDISK" ctl "$MNT" >"$T/listing" || fail "ctl listing"
grep -q "^# last refused: frobnicate" "$T/listing" || fail "ctl listing: $(cat "$T/listing")"
echo start >"$MNT/control" || fail "start"
cat "$T/listing" >"$MNT/control" || fail "the listing written back was refused"
assert_eq "$(grep -v '^#' "$MNT/control" | head -1)" stop "the listing replayed"
echo start >"$MNT/control" || fail "start"
pd_stop
