#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `plugdisk top MNT 0.5 --once` during a dd shows non-zero w/s and wMB/s in its iostat line,
# a write row in the per-op table, the state, slot and queue lines, and no terminal escapes.
# An idle disk shows 0 w/s. The write bandwidth limit only makes the dd outlast the interval.
. "$(dirname "$0")/../lib.sh"
require_fuse

# iostat_col FILE NAME: the value under column NAME of the line after the iostat header.
iostat_col() {
	awk -v c="$2" 'h { print $col; exit }
		$1 == "r/s" && $2 == "w/s" { for (i = 1; i <= NF; i++) if ($i == c) col = i; h = 1 }' "$1"
}

pd_start -s 64M --set controller.write_bandwidth=16M
expect_exit 0 "$PLUGDISK" top "$MNT" 0.3 --once
cp "$T/out" "$T/idle"
assert_eq "$(iostat_col "$T/idle" w/s)" 0.00 "w/s of an idle disk"

# About 4 s of writes at 16 MiB/s; top samples 0.5 s of it.
dd if=/dev/zero of="$MNT/disk" bs=64k oflag=direct conv=notrunc status=none 2>/dev/null &
dd_pid=$!
at_cleanup "kill $dd_pid 2>/dev/null; wait $dd_pid 2>/dev/null"
for i in $(seq 100); do [ "$(stat_get write_ios)" -gt 0 ] && break; sleep 0.02; done
"$PLUGDISK" top "$MNT" 0.5 --once </dev/null >"$T/once" 2>"$T/err" || {
	cat "$T/err" >&2
	fail "top --once failed"
}
kill "$dd_pid" 2>/dev/null
wait "$dd_pid" 2>/dev/null
cat "$T/once" >&2
ws=$(iostat_col "$T/once" w/s) wmb=$(iostat_col "$T/once" wMB/s)
[[ $ws =~ ^[0-9]+\.[0-9]+$ ]] || fail "no w/s value in the report"
awk -v v="$ws" 'BEGIN { exit !(v > 0) }' || fail "w/s is $ws during a dd"
awk -v v="$wmb" 'BEGIN { exit !(v > 0) }' || fail "wMB/s is $wmb during a dd"
# 16 MiB/s is the ceiling (a burst allowance aside).
awk -v v="$wmb" 'BEGIN { exit !(v < 24) }' || fail "wMB/s $wmb above the 16 MiB/s limit"
for re in '^state ' '^slots .*/32' '^queue .*/128' '^bucket .*write bandwidth' '^write '; do
	grep -q "$re" "$T/once" || fail "no line matching '$re' in the report"
done
if grep -q $'\033' "$T/once"; then fail "--once printed terminal escapes"; fi
pd_stop
