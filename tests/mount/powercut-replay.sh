#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cache.log and plugdisk replay: a log of three flushed steps and an unflushed tail rebuilds
# the image at each flush boundary, and at crash states after the last flush: drop loses the
# tail, subset tears it only at the atomic unit, and the same seed replays the same state.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../replay-lib.sh"
require_fuse

for i in 1 2 3 4; do head -c 256K /dev/urandom >"$T/p$i"; done

pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.atomic_write=4096 --set "cache.log=$T/w.log"
for i in 1 2 3; do
	dd if="$T/p$i" of="$MNT/disk" bs=256K seek=$((i - 1)) oflag=direct conv=notrunc,fsync \
		status=none || fail "dd step $i"
done
# The tail: 64 writes of 4 KiB, never flushed.
dd if="$T/p4" of="$MNT/disk" bs=4K seek=192 oflag=direct conv=notrunc status=none ||
	fail "dd of the tail"
pd_stop

"$PLUGDISK" replay "$T/w.log" --list >"$T/list" || fail "replay --list failed"
cat "$T/list" >&2
[ "$(grep -c '^flush ' "$T/list")" -ge 3 ] || fail "the log lists fewer than 3 flushes"

# Each of the 3 flushes: fsync after step i makes steps 1..i durable (dd's fsync is the
# i-th flush the disk saw).
replay_flush_has 1 "1"
replay_flush_has 2 "1 2"
replay_flush_has 3 "1 2 3"
"$PLUGDISK" replay "$T/w.log" "$T/r.img" --flush 9 >/dev/null 2>&1 &&
	fail "replay --flush beyond the log succeeded"

# Crash states after flush 3: drop loses the whole tail.
rm -f "$T/r.img"
expect_exit 2 "$PLUGDISK" replay "$T/w.log" "$T/r.img" --crash 3 --mode bogus
grep -q "^plugdisk replay: --mode bogus: must be drop, prefix, subset or tear$" "$T/out" ||
	fail "--mode bogus: $(cat "$T/out")"
expect_exit 2 "$PLUGDISK" replay "$T/w.log" --bogus
grep -q "^plugdisk replay: unrecognized option '--bogus'" "$T/out" || fail "--bogus: $(cat "$T/out")"
"$PLUGDISK" replay "$T/w.log" "$T/r.img" --crash 3 --mode drop >"$T/out" ||
	fail "replay --crash 3 --mode drop failed"
cmp -s <(region "$T/r.img" 2) "$T/p3" || fail "--crash 3: step 3 lost"
cmp -s <(region "$T/r.img" 3) <(zero 256K) || fail "--crash 3 drop: the tail survived"

# subset: each 4 KiB unit of the tail is all new or all zero; seeds differ, a seed replays.
declare -A seen
for seed in 1 2 3 4 5; do
	for run in a b; do
		rm -f "$T/r$run.img"
		"$PLUGDISK" replay "$T/w.log" "$T/r$run.img" --crash 3 --mode subset \
			--seed "$seed" >/dev/null || fail "replay --crash 3 --seed $seed failed"
	done
	cmp -s "$T/ra.img" "$T/rb.img" || fail "seed $seed replayed two different images"
	# Units (4 KiB) of the tail that differ from the new data, and from zeros: a unit in
	# both is partly written.
	region "$T/ra.img" 3 >"$T/tail"
	cmp -l "$T/tail" "$T/p4" | awk '{print int(($1 - 1) / 4096)}' | sort -u >"$T/not-new"
	cmp -l "$T/tail" <(zero 256K) | awk '{print int(($1 - 1) / 4096)}' | sort -u >"$T/not-old"
	torn=$(comm -12 "$T/not-new" "$T/not-old" | head -n 3)
	[ -z "$torn" ] || fail "seed $seed: tail units partly written: $torn"
	kept=$((64 - $(wc -l <"$T/not-new")))
	seen[$kept]=1
	cmp -s <(region "$T/ra.img" 2) "$T/p3" || fail "seed $seed: a durable step was lost"
done
[ "${#seen[@]}" -ge 2 ] || fail "five seeds kept the same number of tail units"
