#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A flush that fails in the middle of a recorded run (op=flush error=EIO below the cache) is
# logged as failed and not counted: flush N is the N-th completed flush in --list, --flush N
# and --crash N alike, and the completed flush after the failed one covers its writes.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../replay-lib.sh"
require_fuse

for i in 1 2 3 4; do head -c 256K /dev/urandom >"$T/p$i"; done
# step I: region I-1 written and fsynced (one flush each).
step() {
	dd if="$T/p$1" of="$MNT/disk" bs=256K seek=$(($1 - 1)) oflag=direct conv=notrunc,fsync \
		status=none
}

pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.atomic_write=4096 --set "cache.log=$T/w.log"
step 1 || fail "step 1"
"$PLUGDISK" ctl "$MNT" fault add op=flush error=EIO first=1 >/dev/null || fail "fault add"
step 2 2>/dev/null && fail "step 2's fsync succeeded through an EIO fault"
assert_eq "$(stat_get flush_fault_errors)" 1 "flushes failed by the fault"
step 3 || fail "step 3"
step 4 || fail "step 4"
pd_stop

"$PLUGDISK" replay "$T/w.log" --list >"$T/list" || fail "replay --list failed"
cat "$T/list" >&2
assert_eq "$(grep -c '^flush ' "$T/list")" 3 "completed flushes listed"
grep -q "^end after .*, 3 flushes$" "$T/list" || fail "the end line does not count 3 flushes"

# flush 1: step 1; flush 2 (step 3's fsync): steps 1-3, the failed step 2 included; flush 3:
# all four.
replay_flush_has 1 "1"
replay_flush_has 2 "1 2 3"
replay_flush_has 3 "1 2 3 4"
expect_exit 1 "$PLUGDISK" replay "$T/w.log" "$T/r.img" --flush 4
grep -q "the log has 3 flushes, not 4" "$T/out" || fail "--flush 4: $(cat "$T/out")"

assert_eq "$(grep -c '^failed flush ' "$T/list")" 1 "failed flushes listed"

# crash 1: flush 1 durable; steps 2 and 3 (before flush 2 was issued) go through the cut, so
# drop loses both, and step 4 never was.
rm -f "$T/r.img"
"$PLUGDISK" replay "$T/w.log" "$T/r.img" --crash 1 --mode drop >/dev/null ||
	fail "replay --crash 1 failed"
cmp -s <(region "$T/r.img" 0) "$T/p1" || fail "--crash 1: step 1 lost"
for j in 2 3 4; do
	cmp -s <(region "$T/r.img" $((j - 1))) <(zero 256K) || fail "--crash 1 drop: step $j present"
done
