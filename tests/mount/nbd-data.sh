#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NBD backend moves data: over nbdkit's memory plugin on a Unix socket and its file
# plugin on 127.0.0.1, buffered and O_DIRECT dd writes read back identical (through plugdisk
# and, for the file plugin, in the server's own file after the daemon stopped), with simple
# replies (the default) and with backend.structured_replies, which stats show; the size
# comes from the server; a wrong disk.size, a bad URI and an absent server are refused with
# the documented exit statuses.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd

dd if=/dev/urandom of="$T/a" bs=1M count=16 status=none
dd if=/dev/urandom of="$T/b" bs=64k count=16 status=none

# check_server WHAT STRUCTURED [plugdisk options...]
check_server() {
	local what=$1 structured=$2 D=$MNT/disk
	shift 2
	pd_start -i "$NBD_URI" "$@"
	assert_eq "$(stat -c %s "$D")" $((64 << 20)) "$what: disk size from the server"
	dd if="$T/a" of="$D" bs=1M conv=notrunc,fsync status=none || fail "$what: dd write"
	dd if="$T/b" of="$D" bs=64k seek=512 oflag=direct conv=notrunc status=none ||
		fail "$what: O_DIRECT dd write"
	assert_eq "$(sha_of "$D" 0 $((16 << 20)))" "$(sha_of "$T/a")" "$what: buffered read back"
	assert_eq "$(dd if="$D" bs=64k skip=512 count=16 iflag=direct status=none | sha256sum |
		cut -d' ' -f1)" "$(sha_of "$T/b")" "$what: O_DIRECT read back"
	stats_save "$T/s"
	assert_gt "$(snap_get "$T/s" nbd_connections_up)" 0 "$what: connections up"
	assert_eq "$(snap_get "$T/s" nbd_connections_up)" "$(snap_get "$T/s" nbd_connections)" \
		"$what: every connection up"
	assert_gt "$(snap_get "$T/s" write_ios)" 0 "$what: writes counted"
	assert_gt "$(snap_get "$T/s" flush_ios)" 0 "$what: flushes counted"
	assert_eq "$(snap_get "$T/s" nbd_structured_replies)" "$structured" \
		"$what: structured replies negotiated"
	grep -q '^# backend nbd' "$T/s" || fail "$what: no backend section in stats"
	pd_stop
}

nbdkit_start unix memory 64M
check_server "nbdkit memory, unix socket" 0
# A fresh server: the data read back must have been written with structured replies too.
nbd_kill
nbdkit_start unix memory 64M
check_server "nbdkit memory, unix socket, structured replies" 1 \
	--set backend.structured_replies=true

truncate -s 64M "$T/server.img"
nbdkit_start tcp file "$T/server.img"
check_server "nbdkit file, 127.0.0.1" 0
# Everything was flushed at stop: the server's file holds it.
assert_eq "$(sha_of "$T/server.img" 0 $((16 << 20)))" "$(sha_of "$T/a")" "data in the server's file"
assert_eq "$(sha_of "$T/server.img" $((512 * 65536)) $((16 * 65536)))" "$(sha_of "$T/b")" \
	"O_DIRECT data in the server's file"

# disk.size must be the export's size.
expect_exit 3 "$PLUGDISK" -f -i "$NBD_URI" -s 32M "$MNT"
grep -q 'disk.size' "$T/out" || fail "size mismatch message lacks disk.size: $(cat "$T/out")"
# A bad URI is a configuration error naming the key.
expect_exit 2 "$PLUGDISK" -f -i "nbd+unix:///x" "$MNT"
grep -q 'disk.image' "$T/out" || fail "bad URI message lacks disk.image: $(cat "$T/out")"
# No server: the image cannot be used.
nbd_kill
expect_exit 3 "$PLUGDISK" -f -i "$NBD_URI" "$MNT"
mountpoint -q "$MNT" && fail "mounted without a server"
log "ok"
