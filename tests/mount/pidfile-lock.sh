#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --pidfile is locked while its daemon runs: a second daemon given the same file is refused
# with exit 2, naming the holder, before it mounts anything, and the first keeps its file (the
# README's `kill $(cat PIDFILE)` still stops it). A file left by a daemon that died is
# replaced; a missing directory is refused up front.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_transport

mkdir -p "$T/mnt2"
pd_start --pidfile "$T/pd.pid"
assert_eq "$(cat "$T/pd.pid")" "$PD_PID" "first daemon's pid file"
for fg in -f ""; do
	# shellcheck disable=SC2086 # $fg is one option or none
	expect_exit 2 timeout 20 "$PLUGDISK" $fg "${PD_TRANSPORT_ARGS[@]}" -i "$T/disk2.img" \
		-s 16M --pidfile "$T/pd.pid" "$T/mnt2"
	grep -q "^plugdisk: --pidfile $T/pd.pid: held by a running plugdisk (PID $PD_PID)" "$T/out" ||
		fail "second daemon ($fg): $(cat "$T/out")"
	mountpoint -q "$T/mnt2" && fail "the refused daemon mounted"
	assert_eq "$(cat "$T/pd.pid")" "$PD_PID" "pid file after a refused start ($fg)"
done
kill -TERM "$(cat "$T/pd.pid")"
pid_gone_within 30 "$PD_PID" || fail "the README's kill \$(cat PIDFILE) did not stop the daemon"
[ -e "$T/pd.pid" ] && fail "pid file left behind"

# A stale file (its daemon died): replaced.
echo 999999999 >"$T/stale.pid"
pd_start --pidfile "$T/stale.pid"
assert_eq "$(cat "$T/stale.pid")" "$PD_PID" "stale pid file replaced"
pd_kill9
# Left by SIGKILL: the next start replaces it too.
[ -e "$T/stale.pid" ] || fail "SIGKILL cannot remove a pid file"
pd_start --pidfile "$T/stale.pid"
assert_eq "$(cat "$T/stale.pid")" "$PD_PID" "pid file of a killed daemon replaced"
pd_stop

# A missing directory: exit 2 before anything is mounted, as a daemon or in the foreground.
for fg in -f ""; do
	# shellcheck disable=SC2086
	expect_exit 2 timeout 20 "$PLUGDISK" $fg -i "$T/disk.img" -s 64M \
		--pidfile "$T/nodir/x.pid" "$MNT"
	grep -q "^plugdisk: --pidfile $T/nodir/x.pid: No such file or directory" "$T/out" ||
		fail "missing directory: $(cat "$T/out")"
	mountpoint -q "$MNT" && fail "a refused start left a mount"
done
exit 0
