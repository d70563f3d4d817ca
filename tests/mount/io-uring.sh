#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mount.io_uring chooses the FUSE transport, whatever PLUGDISK_TRANSPORT says (each case sets
# it): auto takes FUSE over io_uring when the kernel offers it and falls back to /dev/fuse
# when the kernel parameter is off; on sets the parameter as root, or fails the start with
# exit 4 when it cannot; off stays classic. Each start logs one line naming the transport and
# why. On io_uring, stats shows one queue per possible CPU of mount.io_uring_depth entries,
# requests arrive through the rings, data verifies, and a SIGTERM under load exits 0 and
# unmounts. A word other than auto, on or off is refused (exit 2, naming the key).
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio
[ -e "$URING_PARAM" ] || skip "this kernel has no FUSE over io_uring ($URING_PARAM is missing)"
[ "$(id -u)" = 0 ] || skip "switching the kernel's enable_uring needs root"
_pd_uring_param0=$(cat "$URING_PARAM") # put back at cleanup
cd "$T" || fail "cd $T"

# The number of possible CPUs: the kernel makes one FUSE io_uring queue per possible CPU.
ncpu=0
IFS=, read -ra ranges </sys/devices/system/cpu/possible
for r in "${ranges[@]}"; do
	a=${r%-*} b=${r#*-}
	ncpu=$((ncpu + b - a + 1))
done

transport_lines() { grep -c 'FUSE transport:' "$T/daemon.log"; }

# start NAME ARGS...: a daemon with its own log, stopped by the caller.
start() {
	: >"$T/daemon.log"
	pd_start "$@"
}

# 1. auto, parameter off: classic, and the log says why and how to turn it on.
echo N >"$URING_PARAM"
start --set mount.io_uring=auto
assert_eq "$(stat_get fuse_transport)" classic "transport with enable_uring off"
assert_eq "$(stat_get fuse_ring_queues)" 0 "queues on classic"
assert_eq "$(transport_lines)" 1 "transport log lines"
grep -q 'classic /dev/fuse (mount.io_uring = auto: .*enable_uring' "$T/daemon.log" ||
	{ cat "$T/daemon.log" >&2; fail "no reason for the classic transport in the log"; }
dd if=/dev/urandom of="$MNT/disk" bs=64k count=16 oflag=direct conv=notrunc status=none ||
	fail "dd on classic"
assert_eq "$(cat "$URING_PARAM")" N "auto changed the kernel parameter"
pd_stop

# 2. on, parameter off, as root: plugdisk turns it on and uses io_uring.
start --set mount.io_uring=on --set mount.io_uring_depth=8
assert_eq "$(cat "$URING_PARAM")" Y "enable_uring after mount.io_uring = on"
assert_eq "$(stat_get fuse_transport)" io_uring "transport with mount.io_uring = on"
assert_eq "$(stat_get fuse_ring_queues)" "$ncpu" "one queue per possible CPU"
assert_eq "$(stat_get fuse_ring_depth)" 8 "queue depth"
assert_eq "$(transport_lines)" 1 "transport log lines"
grep -q "FUSE transport: io_uring, $ncpu queues of 8 entries" "$T/daemon.log" ||
	{ cat "$T/daemon.log" >&2; fail "no io_uring line in the log"; }
echo reset >"$MNT/stats"
fio_verify "$MNT/disk" ring randrw 16M 32
stats_save "$T/s"
ios=$(($(snap_get "$T/s" read_bios) + $(snap_get "$T/s" write_bios)))
assert_gt "$ios" 4000 "bios of 16 MiB of 4 KiB I/O"
# Every disk request came through a ring (and a few more: opens, stats).
[ "$(snap_get "$T/s" fuse_ring_requests)" -ge "$ios" ] ||
	fail "fuse_ring_requests $(snap_get "$T/s" fuse_ring_requests) < bios $ios"
# A SIGTERM under load: the daemon drains, exits 0 and the mount goes.
fio --name=busy --filename="$MNT/disk" --ioengine=libaio --direct=1 --iodepth=32 --bs=4k \
	--rw=randwrite --size=16M --time_based --runtime=30 --output="$T/busy.log" &
fio_pid=$!
at_cleanup "kill $fio_pid 2>/dev/null; wait $fio_pid 2>/dev/null"
sleep 1
pd_stop
wait "$fio_pid" 2>/dev/null
mountpoint -q "$MNT" && fail "still mounted after SIGTERM under load"

# 3. auto, parameter on: io_uring, with the default depth.
start
assert_eq "$(stat_get fuse_transport)" "$PLUGDISK_TRANSPORT" "transport of PLUGDISK_TRANSPORT"
pd_stop
start --set mount.io_uring=auto
assert_eq "$(stat_get fuse_transport)" io_uring "transport with auto and enable_uring on"
assert_eq "$(stat_get fuse_ring_depth)" 64 "default queue depth"
pd_stop

# 4. off: classic even though the kernel offers io_uring.
start --set mount.io_uring=off
assert_eq "$(stat_get fuse_transport)" classic "transport with mount.io_uring = off"
grep -q 'classic /dev/fuse (mount.io_uring = off' "$T/daemon.log" ||
	{ cat "$T/daemon.log" >&2; fail "no reason for off in the log"; }
pd_stop

# 5. on without the right to turn the parameter on: exit 4, with a message.
echo N >"$URING_PARAM"
if command -v setpriv >/dev/null && [ -u "$(command -v fusermount3)" ]; then
	nob=$T/nobody
	mkdir -p "$nob/mnt" && chown -R 65534:65534 "$nob" && chmod 755 "$T"
	expect_exit 4 timeout -k 5 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PLUGDISK" -f -i "$nob/img" -s 16M --set mount.io_uring=on "$nob/mnt"
	grep -q 'mount.io_uring = on, but FUSE over io_uring cannot be used' "$T/out" ||
		{ cat "$T/out" >&2; fail "no reason for the failed start"; }
	mountpoint -q "$nob/mnt" && fail "a failed start left its mount"
	assert_eq "$(cat "$URING_PARAM")" N "a user changed the kernel parameter"
else
	log "no setpriv or no set-uid fusermount3: the unprivileged 'on' case is not run"
fi

# 6. A bad word.
expect_exit 2 "$PLUGDISK" -f -i "$T/disk.img" --set mount.io_uring=maybe "$MNT"
grep -q 'mount.io_uring: must be one of auto, on, off' "$T/out" ||
	{ cat "$T/out" >&2; fail "the message does not name the key"; }
