#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Burst credits and the cost rule through a mount: an ebs-gp2 disk with its bucket scaled down
# to 300 credits starts full, each 4 KiB write spends one credit and each 1 MiB write four
# (256 KiB per I/O), and once the credits are spent the disk runs at its baseline: the queue
# stops for budget and the balance stays near zero while writes continue. `plugdisk top`
# shows the balance against the capacity with the baseline, earn and spend rates.
. "$(dirname "$0")/../lib.sh"
require_fuse

pd_start -s 64M --profile ebs-gp2 --set controller.credit_capacity=300 \
	--set controller.latency_us=0
stats_save "$T/s0"
assert_eq "$(snap_get "$T/s0" credit_balance)" 300 "starts full"
assert_eq "$(snap_get "$T/s0" credit_earn_per_s)" 0 "a full bucket earns nothing"
expect_exit 0 "$PLUGDISK" top "$MNT" 0.2 --once
grep -qE '^credits .* 300/300  baseline 100/s, earn 0/s, spend 0/s' "$T/out" ||
	{ cat "$T/out" >&2; fail "top: no credits line for a full bucket"; }

# Four 1 MiB direct writes: four I/Os each at 256 KiB per I/O.
head -c 4M /dev/urandom >"$T/big"
dd if="$T/big" of="$MNT/disk" bs=1M count=4 oflag=direct conv=notrunc status=none ||
	fail "dd 1M failed"
pd_wait_idle
stats_save "$T/s1"
ios=$(snap_get "$T/s1" write_ios)
spent=$(snap_get "$T/s1" credits_spent)
log "1 MiB writes: $ios commands, $spent credits"
[ "$(snap_get "$T/s1" write_size_1m)" -eq "$ios" ] || fail "the writes were not 1 MiB commands"
assert_eq "$spent" $((4 * ios)) "credits spent by 1 MiB writes at 256 KiB per I/O"

# 400 synchronous 4 KiB writes: more than the 284 credits left, so the last ones wait for
# the baseline (100 per second) to earn theirs.
head -c $((400 * 4096)) /dev/urandom >"$T/small"
dd if="$T/small" of="$MNT/disk" bs=4k count=400 seek=2048 oflag=direct conv=notrunc \
	status=none || fail "dd 4k failed"
pd_wait_idle
stats_save "$T/s2"
spent2=$(snap_get "$T/s2" credits_spent)
bal=$(snap_get "$T/s2" credit_balance)
log "4 KiB writes: credits spent $spent2, balance $bal, budget stops $(snap_get "$T/s2" queue_stops_budget)"
assert_eq "$((spent2 - spent))" 400 "one credit per 4 KiB write"
assert_gt "$(snap_get "$T/s2" queue_stops_budget)" 0 "no budget stop once the credits ran out"
[ "$bal" -lt 100 ] || fail "balance $bal: the credits were not spent"
assert_eq "$(snap_get "$T/s2" credit_earn_per_s)" 100 "an empty bucket earns the baseline"
expect_exit 0 "$PLUGDISK" top "$MNT" 0.2 --once
grep -qE '^credits .* -?[0-9]+/300  baseline 100/s, earn 100/s' "$T/out" ||
	{ cat "$T/out" >&2; fail "top: no credits line for a spent bucket"; }
assert_eq "$(sha_of "$MNT/disk" $((2048 * 4096)) $((400 * 4096)))" "$(sha_of "$T/small")" "data"
assert_identities
pd_stop
