#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Data acknowledged by fsync survives kill -9 of the daemon, even with other writes in flight;
# after cleaning the stale mount a restart on the same image needs no manual step.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio

head -c 8M /dev/urandom >"$T/src"
pd_start -s 64M
dd if="$T/src" of="$MNT/disk" bs=1M seek=4 conv=notrunc,fsync status=none || fail "dd failed"
# Small unaligned writes, then fdatasync on the same descriptor.
assert_eq "$($P "$MNT/disk" write 33554433 100000 7 write 40000001 5 8 fdatasync)" \
	"$(printf '100000\n5\n0')" "pwrite + fdatasync"

# Unsynchronised writes keep going elsewhere while the daemon dies. nocreat: once the dead
# mount is detached, a dd must fail, not write a new file into the mountpoint directory.
(while dd if=/dev/urandom of="$MNT/disk" bs=64k seek=800 count=200 conv=notrunc,nocreat \
	oflag=direct 2>/dev/null; do :; done) &
bg=$!
sleep 0.3
pd_kill9
wait $bg 2>/dev/null
mountpoint -q "$MNT" && fail "stale mount still there after fusermount3 -u -z"

pd_start -s 64M
assert_eq "$(sha_of "$MNT/disk" $((4 << 20)) $((8 << 20)))" "$(sha_of "$T/src")" \
	"fsynced dd data after kill -9"
assert_eq "$($P -r "$MNT/disk" verify 33554433 100000 7 verify 40000001 5 8)" \
	"$(printf '100000 ok\n5 ok')" "fdatasynced pwrite data after kill -9"
# The restarted daemon works normally.
assert_eq "$($P "$MNT/disk" write 4096 8192 9 fsync verify 4096 8192 9)" \
	"$(printf '8192\n0\n8192 ok')" "I/O after restart"
pd_stop

# And once more, killed while idle, restarted without any cleanup left to do by hand
# except the stale mount.
pd_start -s 64M
pd_kill9
pd_start -s 64M
assert_eq "$(sha_of "$MNT/disk" $((4 << 20)) $((8 << 20)))" "$(sha_of "$T/src")" \
	"data after a second kill -9"
pd_stop
