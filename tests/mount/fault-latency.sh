#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A long-tail latency fault (Pareto with spikes) on reads: every read is delayed by at least
# the distribution's scale, the seeded spikes show in the p99.9 and the maximum, the fault's
# and the op's counters match the requests, and writes are untouched.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio

pd_start -s 16M --set "faults=op=read latency=pareto:500us:1.5 max=50ms spike=100ms spike_prob=0.01 seed=7"
fio --name=tail --filename="$MNT/disk" --rw=randread --bs=4k --direct=1 --iodepth=1 \
	--number_ios=500 --size=16M --randrepeat=1 --output="$T/fio.out" >/dev/null 2>&1 ||
	fail "fio: $(cat "$T/fio.out")"
dd if=/dev/zero of="$MNT/disk" bs=64K count=4 oflag=direct conv=notrunc status=none || fail "dd write"
ios=$(stat_get read_ios)
[ "$ios" -ge 500 ] || fail "only $ios read requests"
assert_eq "$(stat_get read_fault_delays)" "$ios" "every read was delayed"
assert_eq "$(stat_get fault_1_matched)" "$ios" "every read matched"
assert_eq "$(stat_get fault_1_injected)" "$ios" "every read injected"
assert_eq "$(stat_get write_fault_delays)" 0 "writes are not delayed"
p50=$(stat_get read_lat_p50_us) p999=$(stat_get read_lat_p999_us) max=$(stat_get read_lat_max_us)
log "read latency: p50 ${p50} us, p99.9 ${p999} us, max ${max} us"
# Latency is a floor: no read completes before the Pareto's scale (the histogram's error is
# at most 6.25%); 500 draws at 1% spike the seed's few reads by 100 ms.
[ "$p50" -ge 470 ] || fail "median $p50 us below the 500 us scale"
[ "$(stat_get read_lat_p90_us)" -ge "$p50" ] || fail "p90 below p50"
[ "$max" -ge 100000 ] || fail "no 100 ms spike: max $max us"
[ "$p999" -ge 94000 ] || fail "p99.9 $p999 us does not show the spikes"
pd_stop
