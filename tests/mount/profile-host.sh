#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A profile absorbs the host's turnaround (controller.latency_absorb_host): synchronous reads
# through a loop device on an sd-a1 disk start where the read before ended, which
# latency_host_starts counts and latency_host_us measures; with the key set false by the
# user, none does. Counters only: the rate it gives is the bench's to measure.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop

N=300
# reads N: N synchronous 4 KiB reads through a loop device (direct I/O) on the disk.
reads() {
	local dev
	dev=$(loop_attach "$MNT/disk" --direct-io=on)
	dd if="$dev" of=/dev/null bs=4k count="$1" iflag=direct status=none ||
		fail "dd through $dev failed"
	loop_detach "$dev"
}

pd_start -s 16M --profile sd-a1
assert_eq "$(stat_get latency_absorb_host)" 1 "the profile sets latency_absorb_host"
reads $N
stats_save "$T/s"
starts=$(snap_get "$T/s" latency_host_starts)
ios=$(snap_get "$T/s" read_ios)
[ "$ios" -ge "$N" ] || fail "read_ios $ios, want at least $N"
# Each read after the first comes back within 500 us unless the machine stalls.
[ "$starts" -ge $((N / 4)) ] || fail "latency_host_starts $starts of $ios reads, want >= $((N / 4))"
[ "$starts" -le "$ios" ] || fail "latency_host_starts $starts above read_ios $ios"
[ "$(snap_get "$T/s" latency_host_us)" -gt 0 ] || fail "latency_host_us is 0 after $starts starts"
pd_stop

pd_start -s 16M --profile sd-a1 --set controller.latency_absorb_host=false
assert_eq "$(stat_get latency_absorb_host)" 0 "--set wins over the profile"
reads $N
stats_save "$T/s"
assert_eq "$(snap_get "$T/s" latency_host_starts)" 0 "no start across a turnaround when off"
[ "$(snap_get "$T/s" read_ios)" -ge "$N" ] || fail "read_ios below $N"
pd_stop
