#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Without -f the daemon lets go of the caller's stdin, stdout and stderr once the start is
# reported: `plugdisk ... 2>&1 | cat` returns while the disk stays mounted, and the daemon's
# descriptors 0-2 are /dev/null. Its messages then go to --log-file, the start's included. A
# failure before the mount still reaches the caller's stderr with its exit status.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_transport

# bg_start LOGFILE ARGS...: start in the background through a pipe that only closes when
# every holder of its write end lets go; fails if that takes more than 20 s.
bg_start() {
	local out=$1
	shift
	timeout 20 bash -c '"$@" 2>&1 | cat' _ "$PLUGDISK" "${PD_TRANSPORT_ARGS[@]}" "$@" >"$out" ||
		{ cat "$out" >&2; fail "the start through a pipe did not return (rc $?)"; }
}

# No --log-file and no syslog socket: the start says where the messages go, and still lets go.
if ! [ -e /dev/log ]; then
	bg_start "$T/start2.out" -i "$T/disk.img" -s 16M --pidfile "$T/pd.pid" "$MNT"
	pid=$(cat "$T/pd.pid")
	_pd_pids+=("$pid")
	[ "$(readlink "/proc/$pid/fd/2")" = /dev/null ] || fail "stderr kept without syslog"
	grep -q "use --log-file" "$T/start2.out" || fail "no note about --log-file: $(cat "$T/start2.out")"
	kill -TERM "$pid"
	pid_gone_within 30 "$pid" || fail "the daemon did not stop"
fi

bg_start "$T/start.out" -i "$T/disk.img" -s 16M --pidfile "$T/pd.pid" --log-file "$T/pd.log" "$MNT"
track_mount "$MNT"
pid=$(cat "$T/pd.pid")
_pd_pids+=("$pid")
mountpoint -q "$MNT" || fail "not mounted after the start returned"
for fd in 0 1 2; do
	[ "$(readlink "/proc/$pid/fd/$fd")" = /dev/null ] ||
		fail "fd $fd of the daemon is $(readlink "/proc/$pid/fd/$fd"), not /dev/null"
done
grep -q "mounted at $MNT" "$T/pd.log" || fail "no start line in --log-file: $(cat "$T/pd.log")"
# A line logged after the start lands in the file, not with the caller.
echo "fault add op=wirte error=EIO" >"$MNT/control" 2>/dev/null
kill -HUP "$pid"
true_within 10 grep -q "reloaded" "$T/pd.log" || fail "no reload line in --log-file"
grep -q reloaded "$T/start.out" && fail "a line after the start reached the caller"
kill -TERM "$pid"
pid_gone_within 30 "$pid" || fail "the daemon did not stop"
grep -q "mounted at" "$T/start.out" || fail "the start line did not reach the caller: $(cat "$T/start.out")"

# A failure before the mount reaches the caller, with its status.
rc=0
timeout 20 bash -c '"$@" 2>&1 | cat; exit ${PIPESTATUS[0]}' _ "$PLUGDISK" -i "$T/disk.img" \
	-s 100000 "$MNT" >"$T/bad.out" || rc=$?
assert_eq "$rc" 2 "exit status of a bad size through a pipe"
grep -q "disk.size" "$T/bad.out" || fail "the reason did not reach the caller: $(cat "$T/bad.out")"
# A log file that cannot be opened is refused before the mount.
expect_exit 2 "$PLUGDISK" -i "$T/disk.img" -s 16M --log-file "$T/nodir/x.log" "$MNT"
grep -q "^plugdisk: --log-file $T/nodir/x.log: No such file or directory" "$T/out" ||
	fail "unopenable log file: $(cat "$T/out")"
mountpoint -q "$MNT" && fail "a refused start left a mount"
exit 0
