#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A write log whose filesystem fills up is cut short: the daemon counts the error and the
# records it lost in its stats, and `replay --list`, replay and explore say that the log is
# cut short after record N, explore in its text and JSON reports and with exit status 5,
# incomplete (every state checked passed, but the states after the cut are unknown). A complete log of
# the same workload says nothing of the kind and explores to exit 0.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd jq xfs_io mount umount
[ "$(id -u)" = 0 ] || skip "mounting a small tmpfs for the log needs root"

# workload MNT: 256 direct 4 KiB writes (1 MiB, four times the log's filesystem), an fsync
# after every 16th.
workload() {
	local i
	for ((i = 0; i < 256; i++)); do
		xfs_io -d -c "pwrite -q -S $((i % 250 + 1)) $((i * 4096)) 4k" "$1/disk" ||
			fail "pwrite $i through the disk"
		if ((i % 16 == 15)); then xfs_io -c fsync "$1/disk" || fail "fsync after write $i"; fi
	done
}

truncate -s 16M "$T/disk.img" "$T/base.img"
printf '#!/bin/sh\nexit 0\n' >"$T/pass.sh"
chmod +x "$T/pass.sh"

# 1. The log on a 256 KiB tmpfs: it fills after about 60 of the writes.
mkdir "$T/logfs"
mount -t tmpfs -o size=256k,mode=0700 plugdisk-log "$T/logfs" || skip "cannot mount a tmpfs"
track_mount "$T/logfs"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/logfs/w.log"
workload "$MNT"
errors=$(stat_get cache_log_errors)
lost=$(stat_get cache_log_lost_records)
assert_gt "$errors" 0 "cache_log_errors after the log's filesystem filled"
assert_gt "$lost" 0 "cache_log_lost_records after the log's filesystem filled"
grep -q "cache.log: .*No space left on device; the log stops here" "$T/daemon.log" ||
	fail "the daemon did not log where the log stops"
pd_stop
log "log full: cache_log_errors $errors, cache_log_lost_records $lost"

"$PLUGDISK" replay "$T/logfs/w.log" --list >"$T/list.out" 2>"$T/list.err" ||
	fail "replay --list of a log cut short"
line=$(grep '^LOG: the log is cut short after record ' "$T/list.out") ||
	fail "replay --list does not say that the log is cut short: $(tail -3 "$T/list.out")"
grep -q 'warning: the log is cut short after record ' "$T/list.err" ||
	fail "replay --list gives no warning on stderr"
n=$(sed -E 's/^LOG: the log is cut short after record ([0-9]+) .*/\1/' <<<"$line")
# The records before the cut: every write and flush the daemon logged until the disk filled
# (about 60 writes of 4 KiB and their fsyncs in 256 KiB), fewer than the workload's 272.
[ "$n" -gt 16 ] && [ "$n" -lt 272 ] || fail "cut short after record $n: not where the log filled"
grep -q "no state past it is known" <<<"$line" || fail "the warning does not say what it means"

"$PLUGDISK" replay "$T/logfs/w.log" "$T/r.img" --flush 1 >/dev/null 2>"$T/replay.err" ||
	fail "replay --flush 1 of a log cut short"
grep -q "warning: the log is cut short after record $n " "$T/replay.err" ||
	fail "replay --flush gives no warning: $(cat "$T/replay.err")"

rc=0
"$PLUGDISK" explore -j 2 --budget 40 "$T/logfs/w.log" "$T/base.img" -- "$T/pass.sh" \
	>"$T/x.out" 2>"$T/x.err" || rc=$?
assert_eq "$rc" 5 "explore's status over a log cut short, every state passing"
grep -q "^explore: LOG: the log is cut short after record $n " "$T/x.out" ||
	fail "explore's report does not say that the log is cut short: $(head -3 "$T/x.out")"
grep -q "^explore: not every crash state: the log is cut short after record $n" "$T/x.out" ||
	fail "explore's verdict does not say that the states after the cut are unknown"
grep -q "warning: the log is cut short after record $n " "$T/x.err" ||
	fail "explore gives no warning on stderr"
rc=0
"$PLUGDISK" explore -j 2 --budget 40 --json "$T/logfs/w.log" "$T/base.img" -- "$T/pass.sh" \
	>"$T/x.json" 2>/dev/null || rc=$?
assert_eq "$rc" 5 "explore --json's status over a log cut short"
assert_eq "$(jq -c '.log_cut_short | {after_record}' "$T/x.json")" "{\"after_record\":$n}" \
	"explore --json's log_cut_short"
jq -e '.failed == 0 and .checked > 0' "$T/x.json" >/dev/null || fail "explore --json's counts"
# Shards of it, and their merged report, say the same.
for i in 0 1; do
	rc=0
	"$PLUGDISK" explore -j 2 --budget 40 --json --shard "$i/2" "$T/logfs/w.log" "$T/base.img" \
		-- "$T/pass.sh" >"$T/s$i.json" 2>/dev/null || rc=$?
	assert_eq "$rc" 5 "explore --shard $i/2's status over a log cut short"
done
rc=0
"$PLUGDISK" explore --merge --json "$T/s0.json" "$T/s1.json" >"$T/m.json" || rc=$?
assert_eq "$rc" 5 "explore --merge's status over a log cut short"
assert_eq "$(jq -c '.log_cut_short.after_record' "$T/m.json")" "$n" "the merged log_cut_short"
# A failing state still exits 1: the failures are real, cut short or not.
rc=0
"$PLUGDISK" explore -j 2 --budget 10 "$T/logfs/w.log" "$T/base.img" -- false >/dev/null \
	2>&1 || rc=$?
assert_eq "$rc" 1 "explore's status over a log cut short, every state failing"
log "cut short after record $n: replay and explore say so; explore exits 5"

# 2. The same workload with the log where it fits: a whole log, nothing said.
rm -f "$T/logfs/w.log"
truncate -s 0 "$T/disk.img"
truncate -s 16M "$T/disk.img"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/w.log"
workload "$MNT"
assert_eq "$(stat_get cache_log_errors)" 0 "cache_log_errors with room for the log"
assert_eq "$(stat_get cache_log_lost_records)" 0 "cache_log_lost_records with room for the log"
pd_stop
"$PLUGDISK" replay "$T/w.log" --list >"$T/list2.out" 2>"$T/list2.err" ||
	fail "replay --list of a whole log"
! grep -q "cut short" "$T/list2.out" "$T/list2.err" || fail "a whole log is said to be cut short"
grep -q '^flush 16 ' "$T/list2.out" || fail "the whole log does not hold the 16 fsyncs"
rc=0
"$PLUGDISK" explore -j 2 --budget 40 --json "$T/w.log" "$T/base.img" -- "$T/pass.sh" \
	>"$T/y.json" 2>"$T/y.err" || rc=$?
assert_eq "$rc" 0 "explore's status over a whole log"
jq -e '.log_cut_short == null' "$T/y.json" >/dev/null || fail "a whole log has log_cut_short"
! grep -q "cut short" "$T/y.err" || fail "explore warns of a whole log"
log "a whole log: nothing said, explore exits 0"
