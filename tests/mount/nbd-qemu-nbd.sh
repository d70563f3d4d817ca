#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NBD backend over qemu-nbd exporting a qcow2 image (the way to Ceph RBD and other qemu
# block drivers): dd and O_DIRECT data read back, ext4 through a loop device is e2fsck clean,
# verified fio at iodepth 1, 32 and 128 passes, and qemu-img check finds the qcow2 image clean.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_cmd qemu-nbd qemu-img fio
build_helper pdio
P=$T/pdio
D=$MNT/disk
cd "$T" || fail "cd $T"

qemu-img create -q -f qcow2 "$T/disk.qcow2" 64M || fail "qemu-img create"
qemu_nbd_start "$T/disk.qcow2" --format=qcow2 --cache=none --discard=unmap
pd_start -i "$NBD_URI" -s 64M
log "qemu-nbd: multi-conn $(stat_get nbd_can_multi_conn), $(stat_get nbd_connections) connection(s), zero $(stat_get nbd_can_zero), trim $(stat_get nbd_can_trim)"
if [ "$(stat_get nbd_can_multi_conn)" = 0 ]; then
	assert_eq "$(stat_get nbd_connections)" 1 "one connection without multi-conn"
fi
dd if=/dev/urandom of="$T/a" bs=1M count=8 status=none
dd if="$T/a" of="$D" bs=1M conv=notrunc,fsync status=none || fail "dd write"
assert_eq "$(sha_of "$D" 0 $((8 << 20)))" "$(sha_of "$T/a")" "dd read back"
assert_eq "$($P -d "$D" write $((9 << 20)) 1048576 3 verify $((9 << 20)) 1048576 3)" \
	"$(printf '1048576\n1048576 ok')" "O_DIRECT"
for qd in 1 32 128; do
	fio_verify "$D" "qd$qd" randwrite 8M "$qd" --offset=16M
done
assert_eq "$($P "$D" punch $((16 << 20)) 1048576 zero $((17 << 20)) 1048576 fsync)" \
	"$(printf '0\n0\n0')" "discard and zero range"
assert_eq "$($P -d "$D" zeros $((16 << 20)) 2097152)" "2097152 ok" "zeroes after discard and zero range"
if [ -e /dev/loop-control ] && [ "$(id -u)" = 0 ]; then
	ext4_roundtrip "$D" "qemu-nbd qcow2"
fi
assert_identities
pd_stop
nbd_kill
qemu-img check -q "$T/disk.qcow2" || fail "qemu-img check: the qcow2 image is not clean"
log "ok"
