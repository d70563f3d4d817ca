#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Paths on the command line are the caller's working directory's, though the daemon runs in /:
# a reload (SIGHUP) of a daemon started with a relative -c reads the same file again, and a
# relative -i and --pidfile work.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_transport

cd "$T" || fail "cd"
echo 'controller = { bandwidth = "10M"; };' >live.conf
"$PLUGDISK" "${PD_TRANSPORT_ARGS[@]}" -c live.conf -i disk.img -s 16M --pidfile pd.pid \
	mnt >start.out 2>&1 || fail "start: $(cat start.out)"
track_mount "$MNT"
PD_MNT=$MNT
pid=$(cat "$T/pd.pid")
_pd_pids+=("$pid")
assert_eq "$(stat_get limit_bandwidth_bytes)" $((10 << 20)) "limit before SIGHUP"
echo 'controller = { bandwidth = "20M"; };' >live.conf
kill -HUP "$pid"
true_within 10 _stat_is limit_bandwidth_bytes = $((20 << 20)) ||
	fail "a reload with a relative -c did not apply the file"
[ -s disk.img ] || [ -e disk.img ] || fail "relative -i not created in the caller's directory"
kill -TERM "$pid"
pid_gone_within 30 "$pid" || fail "the daemon did not stop"
exit 0
