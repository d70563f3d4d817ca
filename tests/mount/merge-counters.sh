#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A burst of sequential 4 KiB direct writes through `losetup --direct-io=on` (fio, libaio,
# iodepth 32) is merged by plugdisk's queue: write_merges > 0, and once the queue is idle
# write_bios = write_ios + write_merges. The data verifies.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd fio

pd_start -s 64M
dev=$(loop_attach "$MNT/disk" --direct-io=on)
# The loop device must not merge first, or plugdisk would only see large requests.
loop_nomerges "$dev" 2
[ "$(cat /sys/block/$(basename "$dev")/loop/dio)" = 1 ] || fail "loop device refused direct I/O"
stats_save "$T/s0"
fio_verify "$dev" burst write 16M 32
assert_identities
stats_save "$T/s1"
w_bytes=$(($(snap_get "$T/s1" write_bytes) - $(snap_get "$T/s0" write_bytes)))
w_bios=$(($(snap_get "$T/s1" write_bios) - $(snap_get "$T/s0" write_bios)))
w_merges=$(snap_get "$T/s1" write_merges)
log "write: bios $w_bios ios $(snap_get "$T/s1" write_ios) merges $w_merges bytes $w_bytes"
# fio may write a header block more than once; at least the 16 MiB arrive.
[ "$w_bytes" -ge $((16 << 20)) ] || fail "write_bytes $w_bytes < 16 MiB"
# The loop device did not merge: roughly one bio per 4 KiB.
[ "$w_bios" -ge $((16 << 20 >> 12)) ] || fail "only $w_bios write bios for 4096 writes"
assert_gt "$w_merges" 0 "write_merges after a sequential burst"
assert_eq "$(snap_get "$T/s1" queue_nomerges)" 0 "queue_nomerges"
loop_detach "$dev"
pd_stop
