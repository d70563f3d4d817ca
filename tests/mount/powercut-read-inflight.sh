#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A read in flight across powercut and poweron fails with EIO, as on a device that lost power:
# it does not return the cached write the cut dropped, which the kernel would otherwise keep
# in its page cache (the disk is opened with keep_cache) for later reads to find.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

[ "$(nproc)" -ge 2 ] || skip "needs two CPUs"
pd_start -s 4M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.seed=7
# The cache waits for the image in the thread that runs the read, so the held read holds a
# receive thread, and on io_uring the queue of the CPU it came from: the read runs on CPU 0,
# everything else on CPU 1.
taskset -pc 1 $$ >/dev/null || fail "taskset"
assert_eq "$($P -d "$D" pwrite 1048576 4096 8)" 4096 "the unflushed write"
assert_eq "$(stat_get cache_dirty_bytes)" 4096 "the write is in the cache"
# A direct read of it, held below the cache after it read the image. (A buffered one would
# hold its page locked, and poweron, which drops the kernel's cached pages, would wait for it.)
ctl fault add op=read offset=1M len=4K stall >/dev/null || fail "fault add"
taskset -c 0 "$P" -d "$D" pread 1048576 4096 >"$T/r.out" &
r=$!
stat_wait faults_held 1 "the read is held"
ctl powercut mode=drop >/dev/null || fail "powercut"
ctl poweron >/dev/null || fail "poweron"
assert_eq "$(ctl release)" 1 "release answers how many it released"
wait "$r" || fail "pdio failed"
assert_eq "$(cat "$T/r.out")" EIO "a read in flight at the cut"
ctl fault clear || fail "fault clear"
# What the disk came back with: the cut dropped the write, buffered and direct reads agree.
assert_eq "$($P "$D" zeros 1048576 4096)" "4096 ok" "a buffered read after the cut"
assert_eq "$($P -d "$D" zeros 1048576 4096)" "4096 ok" "a direct read after the cut"
pd_stop
