#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `plugdisk top MNT 0.25 --batch` prints one header and then one plain line per interval, each
# with as many fields as the header, until it is killed; r/s counts the reads of a dd running
# meanwhile. Without --batch or --once and with output to a pipe it also prints plain lines.
# With INTERVAL COUNT it prints COUNT lines and exits, as iostat does.
. "$(dirname "$0")/../lib.sh"
require_fuse

pd_start -s 64M --set controller.read_iops=400
dd if=/dev/zero of="$MNT/disk" bs=1M count=16 conv=notrunc,fsync status=none || fail "dd"
dd if="$MNT/disk" of=/dev/null bs=4k iflag=direct status=none &
dd_pid=$!
at_cleanup "kill $dd_pid 2>/dev/null; wait $dd_pid 2>/dev/null"
"$PLUGDISK" top "$MNT" 0.25 --batch </dev/null >"$T/batch" 2>"$T/err" &
top_pid=$!
at_cleanup "kill $top_pid 2>/dev/null"
sleep 1.4
kill -TERM "$top_pid"
rc=0; wait "$top_pid" || rc=$?
kill "$dd_pid" 2>/dev/null
cat "$T/batch" "$T/err" >&2
assert_eq "$rc" 0 "top --batch exit status on SIGTERM"
read -r -a head <"$T/batch"
[ "${head[0]}" = time ] && [ "${head[1]}" = r/s ] && [ "${head[2]}" = w/s ] ||
	fail "unexpected batch header: ${head[*]}"
lines=$(($(wc -l <"$T/batch") - 1))
[ "$lines" -ge 3 ] && [ "$lines" -le 7 ] || fail "$lines lines in 1.4 s at 0.25 s intervals"
[ "$(grep -c '^time ' "$T/batch")" = 1 ] || fail "the header is repeated"
awk -v n=${#head[@]} 'NR > 1 && NF != n { print "line " NR " has " NF " fields, header " n; bad = 1 }
	END { exit bad }' "$T/batch" >&2 || fail "batch lines do not match the header"
if grep -q $'\033' "$T/batch"; then fail "--batch printed terminal escapes"; fi
# The reads at 400 IOPS: the last full interval shows them (r/s is column 2).
rs=$(tail -n 1 "$T/batch" | awk '{ print $2 }')
awk -v v="$rs" 'BEGIN { exit !(v > 100 && v < 600) }' || fail "r/s $rs with a dd at 400 IOPS"

# INTERVAL COUNT, as iostat: COUNT lines after the header, then exit 0; INTERVAL with a unit.
start=$(date +%s%N)
"$PLUGDISK" top "$MNT" 0.2 3 </dev/null >"$T/count" 2>&1 || fail "top MNT 0.2 3 failed"
took=$((($(date +%s%N) - start) / 1000000))
cat "$T/count" >&2
assert_eq "$(grep -c '^time ' "$T/count")" 1 "COUNT: one header"
assert_eq "$(($(wc -l <"$T/count") - 1))" 3 "COUNT 3: lines"
[ "$took" -ge 550 ] || fail "3 reports at 0.2 s took $took ms"
"$PLUGDISK" top "$MNT" 250ms 2 --batch </dev/null >"$T/count" 2>&1 || fail "top MNT 250ms 2"
assert_eq "$(($(wc -l <"$T/count") - 1))" 2 "COUNT 2 with INTERVAL 250ms: lines"
"$PLUGDISK" top "$MNT" 0.1 1 </dev/null >"$T/count" 2>&1 || fail "top MNT 0.1 1"
assert_eq "$(($(wc -l <"$T/count") - 1))" 1 "COUNT 1: lines"
for bad in "0.2 0" "0.2 x" "0.2 -1" "5x 2" "0.001 2" "0.2 2 --once" "0.2 2 3"; do
	# shellcheck disable=SC2086
	expect_exit 2 "$PLUGDISK" top "$MNT" $bad
	grep -q "^plugdisk top: " "$T/out" || fail "top $bad: $(cat "$T/out")"
done
grep -q "COUNT" <("$PLUGDISK" top "$MNT" 0.2 0 2>&1) || fail "COUNT 0 does not name COUNT"

# Interactive mode with output to a pipe falls back to plain lines.
timeout -s INT 0.8 "$PLUGDISK" top "$MNT" 0.2 </dev/null | cat >"$T/pipe"
grep -q '^time ' "$T/pipe" || fail "top to a pipe printed no batch header"
if grep -q $'\033' "$T/pipe"; then fail "top to a pipe printed terminal escapes"; fi
pd_stop
