#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Data buffers in flight are bounded: 1 MiB direct writes and reads at iodepth 128 keep the
# daemon's peak RSS (VmHWM) under 64 MiB (plus the io_uring entries' buffers on that
# transport, and the writes parked on the classic one), and the data verifies. Large buffers are reused:
# reading the disk four times over faults in few of the daemon's pages (a buffer freed to the
# kernel and allocated again is faulted in page by page). Once the I/O stops, the kept buffers
# go back: within a few seconds of idling, RSS is back near what it was before the I/O.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio
if grep -q -e __asan_init -e __tsan_init "$PLUGDISK" 2>/dev/null; then
	skip "a sanitizer build's memory use says nothing about plugdisk's"
fi

pd_start -s 256M
# FUSE over io_uring: the ring entries are the receive buffers, one payload of max_write per
# entry, resident once used (reads and writes use them in place, with no other buffer).
ring_kb=$(($(stat_get fuse_ring_queues) * $(stat_get fuse_ring_depth) * 1024))
minflt() { awk '{print $10}' "/proc/$PD_PID/stat"; }
rss0=$(pd_rss_kb)
# write, read back, then read 4 more times over (1 GiB), counting the daemon's page faults.
# fio stays on CPU 0: on io_uring a request goes to the queue of the CPU it came from, and a
# queue whose entries no earlier phase used would fault them in during the count.
for rw in write read read4; do
	[ $rw = read4 ] && flt0=$(minflt)
	taskset -c 0 fio --name=mem --loops=$([ $rw = read4 ] && echo 4 || echo 1) --filename="$MNT/disk" \
		--rw=${rw%4} --bs=1M --iodepth=128 --ioengine=libaio --direct=1 --size=256M \
		--verify=crc32c --verify_fatal=1 --do_verify=$([ $rw = write ] && echo 0 || echo 1) \
		--verify_state_save=0 --output="$T/fio-$rw.log" >/dev/null 2>&1 ||
		{ cat "$T/fio-$rw.log" >&2; fail "fio $rw failed"; }
done
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PD_PID/status")
# On the classic transport, the last receive thread not waiting for the data budget parks
# what it reads, so that stats always answer: each parked write holds its data (at most
# 1 MiB + a page), a memory the kernel's max_background bounds. Beyond that, nothing grows.
peak=$(stat_get fuse_parked_peak)
park_kb=$((peak * 1028))
log "peak RSS ${hwm} kB after 1 MiB I/O at iodepth 128 (at most $peak parked: ${park_kb} kB)"
[ "$hwm" -lt $((64 * 1024 + ring_kb + park_kb)) ] ||
	fail "peak RSS $hwm kB is over 64 MiB + ${ring_kb} kB of rings + ${park_kb} kB parked"
assert_gt "$(stat_get write_bytes)" $((255 * 1024 * 1024)) "bytes written"
# 1 GiB read = 262144 pages; with large buffers allocated afresh it is 2% to 15%, with
# buffers reused (all were touched by the first read) it is a few pages.
flt=$(($(minflt) - flt0))
log "$flt page faults while reading 1 GiB"
[ "$flt" -lt 2621 ] || fail "$flt page faults while reading 1 GiB (1% of its pages or more)"
# Up to 16 kept buffers of 1 MiB; idle, the daemon keeps only its receive threads' own.
max=$((rss0 + 8 * 1024 + ring_kb))
for _ in $(seq 40); do
	rss=$(pd_rss_kb)
	[ "$rss" -le "$max" ] && break
	sleep 0.5
done
log "RSS ${rss0} kB before the I/O, ${rss} kB after idling"
[ "$rss" -le "$max" ] || fail "RSS ${rss} kB after 20 s idle, over ${max} kB"
pd_stop
