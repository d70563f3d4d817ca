#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An O_DIRECT open of MNT/disk keeps every promise of a buffered one: it can be mmapped, and
# what it writes replaces what a buffered reader or a mapping had cached. (Whatever the open
# reply asks of the kernel for O_DIRECT opens, this must hold.)
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
pd_start -s 8M
D=$MNT/disk

# A shared writable mapping of an O_DIRECT descriptor (ENODEV without ALLOW_MMAP).
assert_eq "$($P -d "$D" mmapw 8192 12288 1 mmapv 8192 12288 1)" "$(printf '0\nok')" \
	"mmap of an O_DIRECT open"
assert_eq "$($P "$T/disk.img" verify 8192 12288 1)" "12288 ok" "its msync reached the image"

# Buffered views first (page cache and a mapping), then O_DIRECT writes over them.
assert_eq "$($P "$D" write 65536 16384 2 verify 65536 16384 2 mmapv 65536 16384 2)" \
	"$(printf '16384\n16384 ok\nok')" "buffered write, read and mapping"
assert_eq "$($P -d "$D" write 65536 16384 3)" 16384 "O_DIRECT write over cached pages"
assert_eq "$($P "$D" verify 65536 16384 3 mmapv 65536 16384 3)" "$(printf '16384 ok\nok')" \
	"buffered read and mapping see the O_DIRECT data"
# And the other way: a buffered write, then an O_DIRECT read (the write is flushed first).
assert_eq "$($P "$D" write 131072 8192 4)" 8192 "buffered write"
assert_eq "$($P -d "$D" verify 131072 8192 4)" "8192 ok" "O_DIRECT read of buffered data"
# Unaligned O_DIRECT I/O is still served (FUSE has no alignment rule of its own).
assert_eq "$($P -d "$D" write 200001 3000 5 verify 200001 3000 5)" "$(printf '3000\n3000 ok')" \
	"unaligned O_DIRECT write and read"
assert_identities
pd_stop
