#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# crc32c-verified fio at iodepth 1, 32 and 128 over the NBD backend, mixing reads, writes,
# flushes and discards (the shared jobs of helpers/fio-verify.bash): on MNT/disk over nbdkit's
# memory plugin on a Unix socket, and through a direct-I/O loop device over its file plugin on
# 127.0.0.1; every kind of op was issued, none failed, and bios = ios + merges; some
# commands were started by a connection's loop thread, deferred to it while it read replies.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
. "$(dirname "$0")/helpers/fio-verify.bash"
require_fuse
require_nbd
require_cmd fio
cd "$T" || fail "cd $T"
build_helper pdio

nbdkit_start unix memory 16M
pd_start -i "$NBD_URI" -s 16M
fv_run "$MNT/disk" file "nbdkit memory, unix"
fv_check_stats "nbdkit memory, unix"
# Commands that came while the loop thread was reading replies were started by it.
stats_save "$T/s1"
assert_gt "$(snap_get "$T/s1" nbd_deferred)" 0 \
	"nbdkit memory, unix: commands deferred to the loop thread"
pd_stop
nbd_kill

if [ -e /dev/loop-control ] && [ "$(id -u)" = 0 ]; then
	truncate -s 16M "$T/server.img"
	nbdkit_start tcp file "$T/server.img"
	pd_start -i "$NBD_URI" -s 16M
	dev=$(loop_attach "$MNT/disk" --direct-io=on)
	fv_run "$dev" loop "nbdkit file, tcp, loop"
	loop_detach "$dev" || fail "losetup -d failed"
	fv_check_stats "nbdkit file, tcp, loop"
	stats_save "$T/s2"
	assert_gt "$(snap_get "$T/s2" nbd_deferred)" 0 \
		"nbdkit file, tcp, loop: commands deferred to the loop thread"
	pd_stop
else
	log "no loop devices here: the loop part is skipped"
fi
log "ok"
