#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# With --set queue.nomerges=2 the burst of merge-counters.sh is not merged at all:
# write_merges = 0 and write_bios = write_ios. The data verifies.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd fio

pd_start -s 64M --set queue.nomerges=2
assert_eq "$(stat_get queue_nomerges)" 2 "queue_nomerges in stats"
dev=$(loop_attach "$MNT/disk" --direct-io=on)
loop_nomerges "$dev" 2
fio_verify "$dev" burst write 16M 32
assert_identities
stats_save "$T/s1"
log "write: bios $(snap_get "$T/s1" write_bios) ios $(snap_get "$T/s1" write_ios)"
assert_eq "$(snap_get "$T/s1" write_merges)" 0 "write_merges with nomerges=2"
assert_eq "$(snap_get "$T/s1" read_merges)" 0 "read_merges with nomerges=2"
assert_eq "$(snap_get "$T/s1" write_bios)" "$(snap_get "$T/s1" write_ios)" "write bios = ios"
[ "$(snap_get "$T/s1" write_ios)" -ge 4096 ] || fail "fewer than 4096 write commands"
loop_detach "$dev"
pd_stop
