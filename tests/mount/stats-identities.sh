#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# After a mixed load (dd writes and reads of the disk file, fio through a direct-I/O loop
# device, fsync, punched holes and blkdiscard for discards), once idle, every op satisfies
# bios = ios + merges and merges = back + front + gap; each op's size histogram adds up to
# its ios, and avg_request_bytes = bytes / ios.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd fio fallocate
cd "$T" || fail "cd $T"	# fio writes state files into the working directory

pd_start -s 64M
D=$MNT/disk
dd if=/dev/urandom of="$D" bs=1M count=8 conv=notrunc,fsync status=none || fail "dd write"
dd if="$D" of=/dev/null bs=64k count=64 iflag=direct status=none || fail "dd read"
dev=$(loop_attach "$D" --direct-io=on)
loop_nomerges "$dev" 2	# let plugdisk do the merging
for rw in write read randwrite; do
	fio --name=$rw --filename="$dev" --ioengine=libaio --direct=1 --iodepth=32 --bs=4k \
		--rw=$rw --offset=16M --size=8M --output="$T/fio-$rw.log" ||
		{ cat "$T/fio-$rw.log" >&2; fail "fio $rw failed"; }
done
fallocate -p -o 1M -l 2M "$D" || fail "fallocate punch hole"
if command -v blkdiscard >/dev/null; then
	for off in 32 33 34 35; do blkdiscard -o $((off << 20)) -l 1M "$dev" || fail "blkdiscard"; done
fi
dd if=/dev/zero of="$D" bs=4k count=1 seek=100 conv=notrunc,fsync status=none || fail "fsync"
loop_detach "$dev"

assert_identities
stats_save "$T/s"
for op in read write flush discard; do
	b=$(snap_get "$T/s" ${op}_bios) i=$(snap_get "$T/s" ${op}_ios)
	m=$(snap_get "$T/s" ${op}_merges) by=$(snap_get "$T/s" ${op}_bytes)
	log "$op: bios $b ios $i merges $m (back $(snap_get "$T/s" ${op}_merges_back)" \
		"front $(snap_get "$T/s" ${op}_merges_front) gap $(snap_get "$T/s" ${op}_merges_gap))" \
		"bytes $by"
	assert_gt "$b" 0 "${op}_bios after the load"
	assert_eq "$(snap_get "$T/s" ${op}_errors)" 0 "${op}_errors"
	avg=0; [ "$i" = 0 ] || avg=$((by / i))
	assert_eq "$(snap_get "$T/s" ${op}_avg_request_bytes)" "$avg" "${op}_avg_request_bytes"
	[ $op = flush ] && continue
	h=$(awk -v p="${op}_size_" 'index($1, p) == 1 { s += $2 } END { print s + 0 }' "$T/s")
	assert_eq "$h" "$i" "$op: size histogram total vs ${op}_ios"
done
# The identities are not vacuous: the sequential fio runs were merged.
assert_gt "$(snap_get "$T/s" write_merges)" 0 "write_merges"
assert_gt "$(snap_get "$T/s" read_merges)" 0 "read_merges"
pd_stop
