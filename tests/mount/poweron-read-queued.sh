#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# poweron drops the kernel's cached pages of the disk without waiting for them: a buffered
# read queued behind `stop` holds its pages locked until `start`, and a poweron that waited
# for them would shut the control file, so that `start` could never get in. Here poweron
# returns, `start` lets the read go (it fails with EIO: it began before the cut), the stats
# file answers, and a read afterwards sees the disk.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { timeout -k 2 20 "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 4M --set cache.mode=writeback
assert_eq "$($P -d "$D" pwrite 0 65536 5)" 65536 "a write"
assert_eq "$($P "$D" fsync)" 0 "its flush"
ctl stop || fail "stop"
"$P" "$D" pread 1048576 4096 >"$T/r.out" &
rpid=$!
stat_wait_ge read_bios 1 "the buffered read reached the queue"
ctl powercut >/dev/null || fail "powercut"
("$PLUGDISK" ctl "$MNT" poweron >"$T/on.out" 2>&1; echo $? >"$T/on.rc") &
opid=$!
pid_gone_within 5 "$opid" || fail "poweron did not return within 5 s"
assert_eq "$(cat "$T/on.rc")" 0 "poweron's exit status: $(cat "$T/on.out")"
ctl start || fail "start"
pid_gone_within 5 "$rpid" || fail "the queued read did not end after start"
wait "$rpid"
case $(cat "$T/r.out") in 4096 | EIO) ;; *) fail "the queued read: $(cat "$T/r.out")" ;; esac
timeout 5 cat "$MNT/stats" >/dev/null || fail "stats does not answer"
assert_eq "$($P "$D" verify 0 65536 5)" "65536 ok" "the flushed write, read through the cache"
pd_stop
