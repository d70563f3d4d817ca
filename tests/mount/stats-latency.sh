#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# With controller.latency_us=2000 every command holds its slot for 2 ms, so synchronous 4 KiB
# reads and writes (one at a time, nothing to queue behind) show a latency p50 of at least
# 2000 us and an average service time (ticks_us / ios) of 2000 us, less the lateness the
# controller absorbs into each service time (latency_absorbed_us) and the 5% width of the
# latency buckets. The upper bounds
# are loose enough for a loaded 2-core machine (3900 us: under twice the latency, so a
# latency applied twice still fails); without the latency a p50 is tens of microseconds.
. "$(dirname "$0")/../lib.sh"
require_fuse

LAT=2000 HI=3900
pd_start -s 16M --set controller.latency_us=$LAT
D=$MNT/disk
assert_eq "$(stat_get limit_latency_us)" $LAT "limit_latency_us"
dd if=/dev/zero of="$D" bs=4k count=100 oflag=direct conv=notrunc status=none || fail "dd write"
dd if="$D" of=/dev/null bs=4k count=100 iflag=direct status=none || fail "dd read"
pd_wait_idle
stats_save "$T/s"
for op in write read; do
	ios=$(snap_get "$T/s" ${op}_ios)
	p50=$(snap_get "$T/s" ${op}_lat_p50_us) p90=$(snap_get "$T/s" ${op}_lat_p90_us)
	p99=$(snap_get "$T/s" ${op}_lat_p99_us) max=$(snap_get "$T/s" ${op}_lat_max_us)
	ticks=$(snap_get "$T/s" ${op}_ticks_us)
	[ "$ios" -ge 100 ] || fail "$op: only $ios ios for 100 direct 4 KiB commands"
	avg=$((ticks / ios))
	log "$op: ios $ios p50 $p50 p90 $p90 p99 $p99 max $max us, service time $avg us per command"
	absorbed=$(snap_get "$T/s" latency_absorbed_us)
	# The controller ends each service time early by the path's own lateness, so that what a
	# user sees is the set latency; the percentiles come from buckets about 5% wide.
	lo=$((LAT - absorbed - LAT / 20))
	[ "$p50" -ge $lo ] ||
		fail "$op: p50 $p50 us < $lo us (latency_us $LAT less $absorbed us absorbed): the latency is not applied"
	[ "$p50" -lt $HI ] || fail "$op: p50 $p50 us >= $HI us for latency_us $LAT"
	[ "$avg" -ge $lo ] ||
		fail "$op: service time $avg us < $lo us (latency_us $LAT less $absorbed us absorbed)"
	[ "$avg" -lt $HI ] || fail "$op: service time $avg us >= $HI us for latency_us $LAT"
done
pd_stop
