#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The write cliff through a mount: a 1 MiB fast write cache that drains in 10 s. Writing 4 MiB
# fills it (write_cache_bytes near 1 MiB) and sends about 3 MiB past the cliff
# (write_cliff_bytes); reads do not touch it; the data verifies.
. "$(dirname "$0")/../lib.sh"
require_fuse

pd_start -s 64M --set controller.write_cliff_bytes=1M --set controller.write_cliff_window_ms=10000 \
	--set controller.write_cliff_bandwidth=64M
assert_eq "$(stat_get write_cache_bytes)" 0 "an empty cache"
head -c 4M /dev/urandom >"$T/src"
dd if="$T/src" of="$MNT/disk" bs=256k oflag=direct conv=notrunc status=none || fail "dd failed"
pd_wait_idle
stats_save "$T/s"
cache=$(snap_get "$T/s" write_cache_bytes) past=$(snap_get "$T/s" write_cliff_bytes)
log "cache $cache bytes, past the cliff $past bytes"
# 4 MiB written, 1 MiB cache, at most 1 MiB / 10 s drained meanwhile
[ "$past" -ge $((3 * 1048576 - 262144)) ] && [ "$past" -le $((3 * 1048576)) ] ||
	fail "write_cliff_bytes $past, expected about 3 MiB"
[ "$cache" -ge $((1048576 - 262144)) ] || fail "write_cache_bytes $cache: the cache is not full"
dd if="$MNT/disk" of=/dev/null bs=1M count=4 iflag=direct status=none || fail "read failed"
assert_eq "$(stat_get write_cliff_bytes)" "$past" "reads went past the cliff"
assert_eq "$(sha_of "$MNT/disk" 0 4194304)" "$(sha_of "$T/src")" "data"
pd_stop
