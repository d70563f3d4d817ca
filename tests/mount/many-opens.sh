#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Hundreds of concurrent opens and closes of disk and stats from several processes: all
# succeed, the daemon's descriptor count returns to where it was, data stays intact.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
pd_start -s 8M
assert_eq "$($P "$MNT/disk" write 0 1048576 7 fsync)" "$(printf '1048576\n0')" "initial write"
fds0=$(ls /proc/$PD_PID/fd | wc -l)
ls -l /proc/$PD_PID/fd >"$T/fds0"

pids=()
for i in $(seq 8); do
	( for r in 1 2 3; do
		$P "$MNT/disk" opens 300
		$P -r "$MNT/stats" opens 100
		$P -d "$MNT/disk" opens 50
	done ) >"$T/opens.$i" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "opener $p failed"; done
for i in $(seq 8); do
	assert_eq "$(sort -u "$T/opens.$i" | tr '\n' ' ')" "100 300 50 " "opener $i results"
done
kill -0 "$PD_PID" || fail "daemon died"
pd_wait_idle
# FUSE sends RELEASE asynchronously: give the last ones up to 5 s to arrive.
for i in $(seq 100); do
	fds1=$(ls /proc/$PD_PID/fd | wc -l)
	[ "$fds1" -le "$fds0" ] && break
	sleep 0.05
done
[ "$fds1" = "$fds0" ] || { ls -l /proc/$PD_PID/fd | diff "$T/fds0" - >&2; }
assert_eq "$fds1" "$fds0" "daemon descriptors after 10800 opens and closes"
assert_eq "$($P -r "$MNT/disk" verify 0 1048576 7)" "1048576 ok" "data after many opens"
assert_identities
pd_stop
