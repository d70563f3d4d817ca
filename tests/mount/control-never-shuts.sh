#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A write into the control file returns promptly, whatever holds the disk: a command that
# would wait for a request a stall holds fails with EBUSY and says why (poweron behind a
# stalled destage, freeze behind a stalled write), while `release`, written by another
# process, gets in and lets the command succeed afterwards. A freeze waiting for a slow write
# is crossed by a thaw from another process (`plugdisk ctl` opens without O_TRUNC) and fails
# with ECANCELED.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { timeout -k 2 20 "$PLUGDISK" ctl "$MNT" "$@"; }

# bg_ctl NAME COMMAND...: `plugdisk ctl` in the background, its output in $T/NAME.out, its
# exit status in $T/NAME.rc; its pid in $bpid.
bg_ctl() {
	local name=$1
	shift
	("$PLUGDISK" ctl "$MNT" "$@" >"$T/$name.out" 2>&1; echo $? >"$T/$name.rc") &
	bpid=$!
}
# returns_within SECONDS WHAT: the background command ended in time (a writer stuck in the
# kernel behind the file cannot even be killed: the test fails, and its cleanup's stop of
# the daemon frees it).
returns_within() { pid_gone_within "$1" "$bpid" || fail "$2 did not return within $1 s"; }

pd_start -s 4M --set cache.mode=writeback --set cache.destage_delay_ms=0

# poweron behind a destage that a stall holds: EBUSY with the reason, and release gets in.
ctl fault add op=write stall >/dev/null || fail "fault add"
assert_eq "$($P -d "$D" pwrite 0 4096 1)" 4096 "a write into the cache"
stat_wait faults_held 1 "its destage is held"
ctl powercut >/dev/null || fail "powercut"
bg_ctl poweron poweron
returns_within 5 "poweron behind a stalled destage"
assert_eq "$(cat "$T/poweron.rc")" 1 "poweron's exit status"
grep -q "EBUSY\|busy" "$T/poweron.out" || fail "poweron's message: $(cat "$T/poweron.out")"
grep -q "release" "$T/poweron.out" || fail "poweron does not say what to do: $(cat "$T/poweron.out")"
assert_eq "$(stat_get cache_powered)" 0 "the power stays off"
assert_eq "$(ctl release)" 1 "release from another process"
ctl poweron >/dev/null || fail "poweron after the release"
assert_eq "$(stat_get cache_powered)" 1 "the power is back"
ctl fault clear || fail "fault clear"

# freeze behind a stalled write: EBUSY, nothing frozen; release, then freeze succeeds.
ctl fault add op=write offset=1M len=4K stall >/dev/null || fail "fault add 2"
"$P" -d "$D" pwrite 1048576 4096 2 >"$T/w.out" &
wpid=$!
stat_wait faults_held 1 "the destage of the write at 1 MiB is held"
bg_ctl freeze freeze
returns_within 5 "freeze behind a stalled write"
assert_eq "$(cat "$T/freeze.rc")" 1 "freeze's exit status"
grep -q "release" "$T/freeze.out" || fail "freeze's message: $(cat "$T/freeze.out")"
assert_eq "$(stat_get held)" 0 "a failed freeze holds nothing"
assert_eq "$(ctl release)" 1 "release"
wait "$wpid"
ctl freeze || fail "freeze once nothing is held"
ctl thaw || fail "thaw"
ctl fault clear || fail "fault clear 2"

# freeze waiting for a slow write (a latency fault: the write is in flight for 3 s): a thaw
# from another process gets in, and the freeze fails with ECANCELED.
ctl fault add op=write latency=3s first=1 >/dev/null || fail "fault add latency"
"$P" -d "$D" pwrite 2097152 4096 3 >"$T/w3.out" &
wpid=$!
stat_wait in_flight 1 "the slow write in flight"
bg_ctl freeze2 freeze
sleep 0.3
kill -0 "$bpid" 2>/dev/null || fail "freeze returned with a write in flight: $(cat "$T/freeze2.out")"
ctl thaw || fail "a thaw while the freeze waits"
returns_within 2 "the freeze crossed by a thaw"
assert_eq "$(cat "$T/freeze2.rc")" 1 "the thawed freeze's exit status"
grep -q "thawed" "$T/freeze2.out" || fail "the thawed freeze's message: $(cat "$T/freeze2.out")"
assert_eq "$(stat_get held)" 0 "nothing frozen after the thaw"
wait "$wpid"
assert_eq "$(cat "$T/w3.out")" 4096 "the slow write"
assert_eq "$($P -d "$D" verify 2097152 4096 3)" "4096 ok" "the slow write's data"
pd_stop
