#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MOUNTPOINT/control: 0600; its listing replays the state; stop holds dispatch while bios
# queue and merge, start lets them go; plug holds the plug until unplug; freeze waits until
# nothing is in flight; a bad command fails with EINVAL, logs one line and changes nothing.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio
pd_start -s 64M
assert_eq "$(stat -c %a "$MNT/control")" 600 "control's mode"
assert_eq "$(grep -v '^#' "$MNT/control" | tr '\n' ' ')" "start unplug thaw " "initial listing"

# stop: 16 adjacent 4 KiB direct writes at iodepth 16 queue and merge; nothing dispatches.
"$PLUGDISK" ctl "$MNT" stop || fail "plugdisk ctl stop failed"
assert_eq "$(grep -v '^#' "$MNT/control" | head -1)" stop "listing after stop"
fio --name=w --filename="$MNT/disk" --rw=write --bs=4k --size=64k --iodepth=16 \
	--ioengine=libaio --direct=1 --output="$T/fio.log" >/dev/null 2>&1 &
fio_pid=$!
for _ in $(seq 100); do
	[ "$(stat_get write_bios)" -ge 16 ] && break
	sleep 0.05
done
assert_eq "$(stat_get write_bios)" 16 "bios that arrived while stopped"
assert_eq "$(stat_get write_ios)" 0 "requests completed while stopped"
assert_eq "$(stat_get in_flight)" 0 "in flight while stopped"
kill -0 $fio_pid 2>/dev/null || fail "the writer finished while the queue was stopped"

# A bad command changes nothing and is logged.
(echo "bogus command" >"$MNT/control") 2>"$T/err" && fail "a bad command succeeded"
grep -q "Invalid argument" "$T/err" || { cat "$T/err" >&2; fail "bad command: not EINVAL"; }
grep -q "control: 'bogus command'" "$T/daemon.log" || fail "the bad command was not logged"
(echo "stop now" >"$MNT/control") 2>/dev/null && fail "'stop now' (extra word) succeeded"
assert_eq "$(grep -v '^#' "$MNT/control" | head -1)" stop "listing after bad commands"
assert_eq "$(stat_get write_ios)" 0 "requests completed after bad commands"

"$PLUGDISK" ctl "$MNT" start || fail "plugdisk ctl start failed"
wait $fio_pid || { cat "$T/fio.log" >&2; fail "fio failed"; }
pd_wait_idle
assert_gt "$(stat_get write_merges)" 0 "bios merged while stopped"
[ "$(stat_get write_ios)" -lt 16 ] || fail "no merging: $(stat_get write_ios) requests for 16 bios"

# plug holds past the unplug delay; unplug releases.
printf 'reset\n' >"$MNT/stats"
"$PLUGDISK" ctl "$MNT" plug || fail "plug failed"
fio --name=w --filename="$MNT/disk" --rw=write --bs=4k --size=32k --iodepth=8 \
	--ioengine=libaio --direct=1 --output="$T/fio.log" >/dev/null 2>&1 &
fio_pid=$!
for _ in $(seq 100); do
	[ "$(stat_get write_bios)" -ge 8 ] && break
	sleep 0.05
done
sleep 0.2 # well past the default 3 ms unplug delay
assert_eq "$(stat_get write_ios)" 0 "requests completed while plugged by hand"
echo unplug >"$MNT/control" || fail "unplug failed"
wait $fio_pid || { cat "$T/fio.log" >&2; fail "fio failed"; }
pd_wait_idle
assert_eq "$(stat_get write_ios)" 1 "8 adjacent bios held by the plug: one request"

# freeze returns with nothing in flight; thaw lets queued I/O go.
"$PLUGDISK" ctl "$MNT" freeze || fail "freeze failed"
assert_eq "$(stat_get in_flight)" 0 "in flight after freeze"
assert_eq "$(grep -v '^#' "$MNT/control" | tr '\n' ' ')" "start unplug freeze " "listing when frozen"
"$PLUGDISK" ctl "$MNT" thaw || fail "thaw failed"
assert_eq "$(grep -v '^#' "$MNT/control" | tr '\n' ' ')" "start unplug thaw " "listing after thaw"
"$PLUGDISK" ctl "$MNT" help >"$T/help" || fail "help failed"
grep -q '^freeze' "$T/help" || fail "help does not list freeze"
expect_exit 1 "$PLUGDISK" ctl "$MNT" frobnicate
grep -q "unknown command 'frobnicate'" "$T/out" || fail "ctl did not print the reason"
# A directory that is not a plugdisk mount: said so, with status 4, for reads and commands.
mkdir "$T/plain"
expect_exit 4 "$PLUGDISK" ctl "$T/plain"
grep -q "^plugdisk ctl: $T/plain is not a plugdisk mount" "$T/out" || fail "ctl on a plain directory: $(cat "$T/out")"
expect_exit 4 "$PLUGDISK" ctl "$T/plain" stop
grep -q "not a plugdisk mount" "$T/out" || fail "ctl stop on a plain directory: $(cat "$T/out")"
# help without a mount: the same commands the daemon lists.
"$PLUGDISK" ctl help >"$T/help0" || fail "ctl help without a mount"
diff "$T/help" "$T/help0" >&2 || fail "ctl help differs from the daemon's"
"$PLUGDISK" ctl "$T/plain" help >"$T/help1" || fail "ctl DIR help on a plain directory"
diff "$T/help" "$T/help1" >&2 || fail "ctl DIR help differs from the daemon's"
"$PLUGDISK" ctl --help >"$T/usage" || fail "ctl --help"
grep -q '^freeze' "$T/usage" || fail "ctl --help does not list the commands"
assert_identities
pd_stop

# A stop with control and stats held open: their releases never reach the daemon, which
# detaches the busy mount and exits 0 (the sanitizer builds also check that those opens'
# buffers are freed: a leak fails the exit).
pd_start -s 64M
exec 8<"$MNT/stats" 9<>"$MNT/control"
echo plug >&9 || fail "plug through a held control file"
head -c 1 <&8 >/dev/null || fail "read of a held stats file"
pd_stop
exec 8<&- 9<&-
grep -q "busy: detaching it lazily" "$T/daemon.log" || fail "the busy mount was not detached"
