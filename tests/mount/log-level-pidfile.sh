#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# -v / --log-level choose what is logged (debug lines appear only when asked for, info lines
# go at warning); --pidfile holds the daemon's PID while it runs, from the moment the start
# returns, and is removed when it stops, a relative path included.
. "$(dirname "$0")/../lib.sh"
require_fuse

# Default level: info, no debug.
pd_start
grep -q "mounted at" "$T/daemon.log" || fail "no info line at the default level"
grep -q "debug: " "$T/daemon.log" && fail "debug lines at the default level"
pd_stop

# -v: debug lines, among them each write's fate at a power cut (doc/power-loss.md's promise).
: >"$T/daemon.log"
pd_start -v --set cache.mode=writeback --set cache.destage_delay_ms=600000
dd if=/dev/urandom of="$MNT/disk" bs=4K count=4 oflag=direct conv=notrunc status=none ||
	fail "dd"
"$PLUGDISK" ctl "$MNT" powercut >/dev/null || fail "powercut"
grep -q "^plugdisk: debug: log level 3" "$T/daemon.log" || fail "no debug line with -v"
grep -q "^plugdisk: debug: powercut: write seq" "$T/daemon.log" ||
	fail "no write's fate at debug level: $(cat "$T/daemon.log")"
"$PLUGDISK" ctl "$MNT" poweron >/dev/null || fail "poweron"
pd_stop

# --log-level=warning: no info lines.
: >"$T/daemon.log"
pd_start --log-level=warning
grep -q "mounted at" "$T/daemon.log" && fail "info lines at --log-level=warning"
pd_stop
expect_exit 2 timeout -k 5 15 "$PLUGDISK" -f --log-level=loud "$MNT"
grep -q "^plugdisk: --log-level loud: must be error, warning, info or debug$" "$T/out" ||
	fail "--log-level loud: $(cat "$T/out")"

# --pidfile, as a daemon: there when the start returns, the PID of the process that serves the
# mount, removed when it stops. A relative path is the caller's working directory's.
cd "$T" || fail "cd"
"$PLUGDISK" --pidfile rel.pid -i "$T/disk.img" -s 64M "$MNT" >"$T/start.log" 2>&1 ||
	fail "the start failed: $(cat "$T/start.log")"
track_mount "$MNT"
[ -s "$T/rel.pid" ] || fail "no pidfile when the start returned"
pid=$(cat "$T/rel.pid")
_pd_pids+=("$pid")
[[ $pid =~ ^[0-9]+$ ]] || fail "pidfile holds '$pid'"
grep -q plugdisk "/proc/$pid/cmdline" || fail "PID $pid is not plugdisk"
mountpoint -q "$MNT" || fail "not mounted"
[ "$(stat_get disk_size_bytes)" = $((64 << 20)) ] || fail "the mount does not answer"
kill -TERM "$pid"
pid_gone_within 30 "$pid" || fail "the daemon did not stop"
[ -e "$T/rel.pid" ] && fail "the pidfile was left behind"
mountpoint -q "$MNT" && fail "the mount was left behind"

# In the foreground too.
pd_start --pidfile "$T/fg.pid"
assert_eq "$(cat "$T/fg.pid")" "$PD_PID" "foreground pidfile"
pd_stop
[ -e "$T/fg.pid" ] && fail "the foreground pidfile was left behind"

# A pidfile that cannot be written is refused before the mount (exit 2), and leaves no mount.
expect_exit 2 timeout -k 5 15 "$PLUGDISK" -f --pidfile "$T/nodir/x.pid" -i "$T/disk.img" \
	-s 64M "$MNT"
grep -q "^plugdisk: --pidfile $T/nodir/x.pid: No such file or directory" "$T/out" ||
	fail "unwritable pidfile: $(cat "$T/out")"
mountpoint -q "$MNT" && fail "a refused start left a mount"
exit 0
