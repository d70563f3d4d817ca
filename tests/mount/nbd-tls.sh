#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TLS: an nbds+unix:// URI with a pre-shared key reaches an nbdkit that requires TLS, and data
# reads back; the same server refuses a plain nbd+unix:// URI (exit status 3).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
build_helper pdio
P=$T/pdio

echo "alice:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/keys.psk"
chmod 600 "$T/keys.psk"
nbdkit_start unix --tls=require --tls-psk="$T/keys.psk" memory 16M
plain=$NBD_URI
tls="nbds+unix://alice@/?socket=$T/nbd.sock&tls-psk-file=$T/keys.psk"
pd_start -i "$tls" -s 16M
assert_eq "$(stat_get nbd_tls)" 1 "nbd_tls: TLS negotiated"
assert_eq "$($P -d "$MNT/disk" write 0 1048576 4 fsync verify 0 1048576 4)" \
	"$(printf '1048576\n0\n1048576 ok')" "data over TLS"
pd_stop
expect_exit 3 "$PLUGDISK" -f -i "$plain" -s 16M "$MNT"
log "without TLS: $(head -1 "$T/out")"
log "ok"
