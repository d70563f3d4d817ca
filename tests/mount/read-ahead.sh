#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mount.read_ahead_kb: by default the mount's readahead is 1 MiB, and a buffered sequential
# read of disk reaches the queue as 1 MiB requests; a reload changes it at once; 0 leaves the
# kernel's default (below 1 MiB), and the same read then has no 1 MiB request.
. "$(dirname "$0")/../lib.sh"
require_fuse
[ "$(id -u)" = 0 ] || skip "setting a mount's readahead needs root"

ra_file() { echo "/sys/class/bdi/$(mountpoint -d "$MNT")/read_ahead_kb"; }
ra_is() { [ "$(cat "$(ra_file)")" = "$1" ]; }
# A fresh mount has nothing of disk cached: read 16 MiB of it through the page cache.
read_seq() { dd if="$MNT/disk" of=/dev/null bs=1M count=16 status=none || fail "dd read"; }

echo "disk = { image = \"$T/disk.img\"; size = \"64M\"; };" >"$T/pd.conf"
pd_start -c "$T/pd.conf"
true_within 5 ra_is 1024 || fail "readahead is $(cat "$(ra_file)") KiB, not the default 1024"
read_seq
stats_save "$T/s1"
assert_gt "$(snap_get "$T/s1" read_size_1m)" 0 "1 MiB reads with 1 MiB of readahead"

{ cat "$T/pd.conf"; echo "mount = { read_ahead_kb = 256; };"; } >"$T/pd.conf.new"
mv "$T/pd.conf.new" "$T/pd.conf"
kill -HUP "$PD_PID"
true_within 5 ra_is 256 || fail "reload: readahead is $(cat "$(ra_file)") KiB, not 256"
pd_stop

pd_start --set mount.read_ahead_kb=0
kernel=$(cat "$(ra_file)")
[ "$kernel" -lt 1024 ] || fail "mount.read_ahead_kb = 0: readahead is $kernel KiB"
read_seq
stats_save "$T/s2"
assert_gt "$(snap_get "$T/s2" read_ios)" 0 "reads counted"
assert_eq "$(snap_get "$T/s2" read_size_1m)" 0 "1 MiB reads with the kernel's $kernel KiB"
pd_stop
log "ok"
