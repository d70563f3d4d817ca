#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A read-only NBD export (nbdkit -r) makes a read-only disk: the disk file is 0400, opening it
# for writing fails with EROFS, reads work, and nothing reaches the server as a write.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
build_helper pdio
P=$T/pdio
D=$MNT/disk

head -c $((4 << 20)) /dev/urandom >"$T/server.img"
truncate -s 16M "$T/server.img"
nbdkit_start unix -r --filter=log file "$T/server.img" logfile="$T/log"
pd_start -i "$NBD_URI" -s 16M
assert_eq "$(stat_get nbd_read_only)" 1 "nbd_read_only"
assert_eq "$(stat -c %a "$D")" 400 "mode of a read-only disk"
assert_eq "$($P "$D" size)" "open EROFS" "open for reading and writing"
assert_eq "$($P -w "$D" size)" "open EROFS" "open for writing"
dd if=/dev/zero of="$D" bs=4k count=1 conv=notrunc 2>"$T/dd.err" && fail "dd wrote to a read-only disk"
grep -q 'Read-only file system' "$T/dd.err" || fail "dd: $(cat "$T/dd.err")"
assert_eq "$(sha_of "$D" 0 $((4 << 20)))" "$(sha_of "$T/server.img" 0 $((4 << 20)))" "reads"
assert_eq "$($P -r -d "$D" pread 0 65536)" 65536 "O_DIRECT read"
grep -qE "(Write|Trim|Zero) id=" "$T/log" && fail "a write reached a read-only server"
assert_eq "$(stat_get write_ios)" 0 "write_ios"
pd_stop
log "ok"
