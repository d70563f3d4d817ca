#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mmap of MNT/disk works: data written through a shared mapping (msync) reads back through
# pread, O_DIRECT and the backing image; data written with pwrite reads back via a mapping.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
pd_start -s 8M
D=$MNT/disk

assert_eq "$($P "$D" mmapw 4096 8192 1 mmapw 100001 50000 2 mmapw $(((8 << 20) - 777)) 777 3)" \
	"$(printf '0\n0\n0')" "writes through shared mappings"
assert_eq "$($P "$D" verify 4096 8192 1 verify 100001 50000 2 verify $(((8 << 20) - 777)) 777 3)" \
	"$(printf '8192 ok\n50000 ok\n777 ok')" "pread of mmap-written data"
# O_DIRECT goes to the daemon, not the page cache: the data reached the queue.
assert_eq "$($P -d "$D" pread 0 0)" 0 "O_DIRECT open"
assert_eq "$(dd if="$D" bs=4k skip=1 count=2 iflag=direct status=none | sha256sum)" \
	"$(dd if="$D" bs=4k skip=1 count=2 status=none | sha256sum)" "O_DIRECT view equals cached view"
assert_eq "$($P "$T/disk.img" verify 4096 8192 1 verify 100001 50000 2)" \
	"$(printf '8192 ok\n50000 ok')" "mmap-written data in the backing image"
assert_gt "$(stat_get write_bytes)" 58000 "write_bytes after msync"

assert_eq "$($P "$D" write 2000000 30000 4 fsync)" "$(printf '30000\n0')" "pwrite"
assert_eq "$($P "$D" mmapv 2000000 30000 4 mmapv 2000000 30000 5)" "$(printf 'ok\nbad@2000000')" \
	"mapping shows pwrite data"
assert_eq "$($P -r "$D" mmapv 4096 8192 1)" ok "read-only mapping"
assert_identities
pd_stop

pd_start -s 8M
assert_eq "$($P "$D" verify 4096 8192 1 verify 100001 50000 2 verify 2000000 30000 4)" \
	"$(printf '8192 ok\n50000 ok\n30000 ok')" "mmap-written data after remount"
pd_stop
