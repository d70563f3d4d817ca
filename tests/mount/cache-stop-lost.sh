#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A writeback cache that cannot be written out at SIGTERM (its image on a full tmpfs): the
# daemon exits non-zero and logs how many acknowledged writes and bytes were lost, with
# their ranges, and never claims that every acknowledged write is in the image.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio

mkdir "$T/small"
mount -t tmpfs -o size=17M tmpfs "$T/small" || skip "cannot mount a tmpfs"
track_mount "$T/small"
pd_start -i "$T/small/disk.img" -s 16M --set cache.mode=writeback \
	--set cache.size=16M --set cache.destage_delay_ms=600000
# Fill the filesystem, then leave 1 MiB free.
dd if=/dev/zero of="$T/small/filler" bs=64k 2>/dev/null
truncate -s -1M "$T/small/filler"
# 4 MiB of acknowledged, never flushed writes: they fit the cache, not the tmpfs.
assert_eq "$("$T/pdio" -d "$MNT/disk" write 0 4194304 1)" 4194304 "writes into the cache"
assert_eq "$(stat_get cache_dirty_bytes)" 4194304 "bytes the cache holds"

rc=0
kill -TERM "$PD_PID"
pid_gone_within 60 "$PD_PID" || fail "the daemon still runs 60 s after SIGTERM"
wait "$PD_PID" || rc=$?
cat "$T/daemon.log" >&2
[ "$rc" != 0 ] || fail "exit status 0 after the cache could not be written out"
grep -E "destaging at exit failed: No space left on device; [0-9]+ acknowledged writes \([0-9]+ bytes\) are lost" \
	"$T/daemon.log" >"$T/lost" || fail "no line saying what was lost"
lost=$(sed -E 's/.*; ([0-9]+) acknowledged writes \(([0-9]+) bytes\).*/\1 \2/' "$T/lost")
read -r nlost blost <<<"$lost"
assert_gt "$nlost" 0 "writes lost"
# Whatever fitted on the tmpfs was written; the rest is lost, and nothing else.
[ "$blost" -gt $((2 * 1048576)) ] && [ "$blost" -le 4194304 ] ||
	fail "bytes lost: $blost, want more than 2 MiB and at most 4 MiB"
grep -qE "offset\+len [0-9]+\+[0-9]+" "$T/lost" || fail "no range in: $(cat "$T/lost")"
grep -q "every acknowledged write is in the image" "$T/daemon.log" &&
	fail "the log claims every acknowledged write is in the image"
exit 0
