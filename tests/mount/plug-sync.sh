#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A lone synchronous stream never waits for the unplug timer: with queue.unplug_delay_us at
# one second, 50 synchronous O_DIRECT writes unplug as idle (unplug_timer stays 0), and an
# fsync after them does not wait for the timer either. Counters only, no timing.
. "$(dirname "$0")/../lib.sh"
require_fuse

head -c 200K /dev/urandom >"$T/src"
pd_start -s 16M --set queue.unplug_delay_us=1000000
assert_eq "$(stat_get queue_unplug_delay_us)" 1000000 "queue_unplug_delay_us"
# If each write waited for the timer this would take 50 s: the timeout turns that into a
# clear failure rather than a hung test.
timeout 40 dd if="$T/src" of="$MNT/disk" bs=4k count=50 oflag=direct conv=notrunc status=none ||
	fail "50 synchronous writes did not finish within 40 s (waiting for the unplug timer?)"
pd_wait_idle
stats_save "$T/s1"
assert_eq "$(snap_get "$T/s1" unplug_timer)" 0 "unplug_timer after a synchronous stream"
assert_gt "$(snap_get "$T/s1" unplug_idle)" 49 "unplug_idle after 50 synchronous writes"
assert_eq "$(snap_get "$T/s1" write_ios)" 50 "write_ios"
sync "$MNT/disk" || fail "fsync of disk failed"
stats_save "$T/s2"
assert_eq "$(snap_get "$T/s2" unplug_timer)" 0 "unplug_timer after fsync"
log "flush_bios $(snap_get "$T/s2" flush_bios) unplug_flush $(snap_get "$T/s2" unplug_flush) unplug_idle $(snap_get "$T/s2" unplug_idle) plugs $(snap_get "$T/s2" plugs)"
assert_eq "$(dd if="$MNT/disk" bs=4k count=50 iflag=direct status=none | sha256sum | cut -d' ' -f1)" \
	"$(sha_of "$T/src")" "data"
assert_identities
pd_stop
