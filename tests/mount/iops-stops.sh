#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# With controller.iops=200, synchronous 4 KiB direct writes run out of budget: the limiter
# stops the queue (queue_stops_budget > 0) and its timer starts it again; the data verifies.
. "$(dirname "$0")/../lib.sh"
require_fuse

n=100
head -c $((n * 4096)) /dev/urandom >"$T/src"
pd_start -s 16M --set controller.iops=200
assert_eq "$(stat_get limit_iops)" 200 "limit_iops"
dd if="$T/src" of="$MNT/disk" bs=4k seek=10 count=$n oflag=direct conv=notrunc status=none ||
	fail "dd failed"
pd_wait_idle
stats_save "$T/s1"
log "budget stops $(snap_get "$T/s1" queue_stops_budget), starts $(snap_get "$T/s1" queue_starts_budget)"
assert_gt "$(snap_get "$T/s1" queue_stops_budget)" 0 "queue_stops_budget at 200 IOPS"
assert_gt "$(snap_get "$T/s1" queue_starts_budget)" 0 "queue_starts_budget at 200 IOPS"
assert_eq "$(snap_get "$T/s1" queue_stops_budget)" "$(snap_get "$T/s1" queue_starts_budget)" \
	"every budget stop was ended by a start"
assert_eq "$(snap_get "$T/s1" write_ios)" $n "one command per synchronous write"
assert_eq "$(snap_get "$T/s1" stopped)" 0 "queue stopped while idle"
assert_eq "$(dd if="$MNT/disk" bs=4k skip=10 count=$n iflag=direct status=none | sha256sum |
	cut -d' ' -f1)" "$(sha_of "$T/src")" "data written at 200 IOPS"
assert_identities
pd_stop
