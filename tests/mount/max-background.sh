#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mount.max_background: on FUSE over io_uring auto gives the kernel 12 background requests
# while nothing in plugdisk holds requests, and the transport's most while something does (a
# stop, a fault, a service latency), looked at again after each control command and reload;
# on the classic transport auto keeps the most. The limit is in force in the kernel: with 12,
# a stopped queue sees exactly 12 of fio's 32 direct writes, with 13 exactly 13, and with auto
# all 32. A fixed value stays whatever holds. An NBD backend, a server behind a network,
# gets the most under auto.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_cmd fio
require_nbd
[ "$(id -u)" = 0 ] || skip "changing a FUSE connection's limit needs root"
FUSECTL=/sys/fs/fuse/connections
if [ -z "$(ls -A "$FUSECTL" 2>/dev/null)" ] && ! mountpoint -q "$FUSECTL"; then
	mount -t fusectl none "$FUSECTL" || fail "cannot mount fusectl on $FUSECTL"
	at_cleanup "umount $FUSECTL"
fi

ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }
# The connection's limit, as the kernel has it (its name is the kernel's dev_t of the mount).
kernel_bg() {
	local d
	d=$(mountpoint -d "$MNT")
	cat "$FUSECTL/$(( ${d%:*} << 20 | ${d#*:} ))/max_background"
}
bg_is() { [ "$(kernel_bg)" = "$1" ] && [ "$(stat_get fuse_max_background)" = "$1" ]; }
expect_bg() { true_within 5 bg_is "$1" ||
	fail "$2: the kernel has $(kernel_bg), stats say $(stat_get fuse_max_background), not $1"; }
if [ "$PLUGDISK_TRANSPORT" = io_uring ]; then MOST=48 IDLE=12; else MOST=256 IDLE=256; fi

# stopped_fio N: with the queue stopped, 32 direct 4 KiB writes from fio; exactly N of them
# reach the queue (none merge: queue.nomerges = 2), the rest wait in the kernel. Then start.
stopped_fio() {
	local fpid
	ctl stop >/dev/null || fail "stop"
	fio --name=bg --filename="$MNT/disk" --direct=1 --ioengine=libaio --rw=randwrite --bs=4k \
		--iodepth=32 --number_ios=32 --size=64M --randrepeat=0 --output=/dev/null &
	fpid=$!
	stat_wait_ge queued_requests "$1" "requests queued while stopped"
	sleep 0.5 # the kernel would have sent more by now
	assert_eq "$(stat_get queued_requests)" "$1" "requests that reached the stopped queue"
	ctl start >/dev/null || fail "start"
	wait "$fpid" || fail "fio failed"
}

echo "disk = { image = \"$T/disk.img\"; size = \"64M\"; }; queue = { nomerges = 2; };" >"$T/pd.conf"
pd_start -c "$T/pd.conf"
expect_bg "$IDLE" "nothing holds"
stopped_fio 32
expect_bg "$IDLE" "after start"
ctl stop >/dev/null
expect_bg "$MOST" "stopped"
ctl start >/dev/null
expect_bg "$IDLE" "started"
ctl fault add op=read offset=0 len=4K error=EIO >/dev/null || fail "fault add"
expect_bg "$MOST" "a fault"
ctl fault clear >/dev/null || fail "fault clear"
expect_bg "$IDLE" "the fault cleared"

# A reload to a service latency raises it; back to none lowers it.
echo "controller = { latency_us = 100; };" >>"$T/pd.conf"
kill -HUP "$PD_PID"
expect_bg "$MOST" "a service latency"
sed -i '/latency_us/d' "$T/pd.conf"
kill -HUP "$PD_PID"
expect_bg "$IDLE" "no latency"
pd_stop

# A fixed value holds whatever holds, and is what the kernel sends: 12 and 13 at the stop.
for n in 12 13; do
	pd_start -c "$T/pd.conf" --set mount.max_background=$n
	expect_bg "$n" "fixed"
	stopped_fio "$n"
	expect_bg "$n" "fixed, after a stop"
	pd_stop
done

nbdkit_start unix memory 64M
pd_start -i "$NBD_URI"
expect_bg "$MOST" "an NBD backend"
pd_stop
log "ok"
