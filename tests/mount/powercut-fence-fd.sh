#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A descriptor of disk held across a power cut, direct or buffered, fails every request with
# EIO after poweron, for good; an open made after the cut (even while the power is off) works;
# poweron answers how many opens it fenced and stats count them and their refused requests.
# cache.keep_opens = true brings the descriptor back at poweron.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { timeout -k 5 20 "$PLUGDISK" ctl "$MNT" "$@"; }

# held NAME PDIO-ARGS...: run pdio in the background, its standard input a FIFO that the
# script holds open on a descriptor (go NAME writes the go-ahead); output in $T/NAME.out.
declare -A HELD_PID HELD_FD
held() {
	local name=$1 fd
	shift
	mkfifo "$T/$name.fifo"
	"$P" "$@" <"$T/$name.fifo" >"$T/$name.out" &
	HELD_PID[$name]=$!
	exec {fd}>"$T/$name.fifo"
	HELD_FD[$name]=$fd
}
go() { echo go >&"${HELD_FD[$1]}"; }
lines_are() { [ "$(wc -l <"$T/$1.out")" -ge "$2" ]; }
# finish NAME: let it go on, wait for it, and put its output on one line in OUT (pdio's
# exit status says only whether a command failed: the output says which). Not in a $(...),
# whose subshell could not wait for the shell's child.
finish() {
	go "$1"
	wait "${HELD_PID[$1]}" || true
	OUT=$(tr '\n' ' ' <"$T/$1.out")
}

pd_start -s 4M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.seed=7
held direct -d "$D" pwrite 0 4096 1 fsync waitin pwrite 0 4096 2 pread 0 4096 fsync \
	punch 0 4096 verify 0 4096 1
held buffered "$D" pwrite 65536 4096 3 fsync verify 65536 4096 3 waitin pwrite 65536 4096 4 \
	verify 65536 4096 3 fdatasync
true_within 10 lines_are direct 2 || fail "the direct writer did not start: $(cat "$T/direct.out")"
true_within 10 lines_are buffered 3 || fail "the buffered writer did not start"
assert_eq "$(stat_get disk_opens_fenced)" 0 "disk_opens_fenced before any cut"

ctl powercut mode=drop >/dev/null || fail "powercut"
# Opened while the power is off: not from before the cut.
held during -d "$D" waitin pwrite 131072 4096 5 verify 131072 4096 5
assert_eq "$(ctl poweron)" "poweron fenced_opens=2" "poweron's answer"
grep -q "poweron: 2 opens of disk from before the cut fenced" "$T/daemon.log" ||
	fail "the fence is not logged"

# A fresh open works, and sees what the cut kept (the fsynced writes).
assert_eq "$($P -d "$D" verify 0 4096 1)" "4096 ok" "a fresh open reads the kept write"
assert_eq "$($P -d "$D" pwrite 8192 4096 6)" 4096 "a fresh open writes"

# The direct descriptor: every request fails, and its write did not land.
finish direct
assert_eq "$OUT" "4096 0 ok EIO EIO EIO EIO 0 EIO " "the held direct descriptor"
# The buffered one: poweron dropped the page cache, so its read reaches the daemon too.
finish buffered
assert_eq "$OUT" "4096 0 4096 ok ok EIO 0 EIO EIO " \
	"the held buffered descriptor"
assert_eq "$($P -d "$D" verify 0 4096 1)" "4096 ok" "the fenced direct write is not on the disk"
assert_eq "$($P -d "$D" verify 65536 4096 3)" "4096 ok" "the fenced buffered write is not on the disk"
# ...nor in the kernel's page cache (a failed write leaves its page not up to date).
assert_eq "$($P "$D" verify 65536 4096 3)" "4096 ok" "a buffered read of the fenced write's page"
finish during
assert_eq "$OUT" "ok 4096 4096 ok " "an open made while the power was off"
assert_eq "$(stat_get disk_opens_fenced)" 2 "disk_opens_fenced"
# 5 of the direct descriptor, 3 or more of the buffered one (the kernel may read again).
n=$(stat_get disk_requests_fenced)
[ "$n" -ge 8 ] || fail "disk_requests_fenced: $n < 8"
# A poweron counts only the opens its own cut fenced.
ctl powercut mode=drop >/dev/null || fail "the second powercut"
assert_eq "$(ctl poweron)" "poweron fenced_opens=0" "a cut with no open of disk"
echo reset >"$MNT/stats" || fail "reset of stats"
assert_eq "$(stat_get disk_opens_fenced)" 0 "disk_opens_fenced after a reset"
assert_eq "$(stat_get disk_requests_fenced)" 0 "disk_requests_fenced after a reset"
pd_stop

# cache.keep_opens = true: no fence.
pd_start -s 4M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.seed=7 --set cache.keep_opens=true
rm -f "$T"/*.fifo
held kept -d "$D" pwrite 0 4096 1 fsync waitin pwrite 0 4096 2 verify 0 4096 2 fsync
true_within 10 lines_are kept 2 || fail "the writer did not start"
ctl powercut mode=drop >/dev/null || fail "powercut"
assert_eq "$(ctl poweron)" "poweron fenced_opens=0" "poweron's answer with keep_opens"
finish kept
assert_eq "$OUT" "4096 0 ok 4096 4096 ok 0 " "a held descriptor with keep_opens"
assert_eq "$(stat_get disk_requests_fenced)" 0 "disk_requests_fenced with keep_opens"
pd_stop
