#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The backing filesystem fills up (image on a small tmpfs): writers get ENOSPC (or EIO) as an
# errno, the daemon stays up and logs the fault once, not once per request; acknowledged
# data stays intact; once space is freed the same writes succeed.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio

mkdir "$T/small"
mount -t tmpfs -o size=8M tmpfs "$T/small" || skip "cannot mount a tmpfs"
track_mount "$T/small"
pd_start -i "$T/small/disk.img" -s 6M
D=$MNT/disk
assert_eq "$($P "$D" write 0 1048576 1 fsync)" "$(printf '1048576\n0')" "initial write"
# Fill the filesystem, then leave 256 KiB free.
dd if=/dev/zero of="$T/small/filler" bs=64k 2>/dev/null
truncate -s -256K "$T/small/filler"
log0=$(wc -l <"$T/daemon.log")

# 40 O_DIRECT writes of 64 KiB at fresh offsets: the first few fit, then ENOSPC.
ok=() failed=()
for i in $(seq 0 39); do
	off=$((2097152 + i * 65536))
	r=$($P -d "$D" pwrite $off 65536 $((100 + i)))
	case $r in
	65536) ok+=($i) ;;
	ENOSPC | EIO) failed+=($i) ;;
	*) fail "write $i at $off: unexpected '$r'" ;;
	esac
done
log "${#ok[@]} writes fitted, ${#failed[@]} failed ($r)"
[ ${#failed[@]} -ge 30 ] || fail "only ${#failed[@]} of 40 writes failed on a full filesystem"
kill -0 "$PD_PID" || fail "daemon died on ENOSPC"
assert_eq "$($P "$D" verify 0 1048576 1)" "1048576 ok" "acknowledged data while full"
for i in "${ok[@]}"; do
	assert_eq "$($P "$D" verify $((2097152 + i * 65536)) 65536 $((100 + i)))" "65536 ok" \
		"write $i acknowledged while filling"
done
if grep -q '^write_errors ' "$MNT/stats"; then
	assert_gt "$(stat_get write_errors)" 0 "write_errors"
fi
faultlines=$(tail -n +$((log0 + 1)) "$T/daemon.log" | grep -c 'errors are not logged until')
log "log lines about the fault: $faultlines"
[ "$faultlines" -ge 1 ] || { cat "$T/daemon.log" >&2; fail "the fault was not logged"; }
[ "$faultlines" -le 1 ] || { cat "$T/daemon.log" >&2; fail "$faultlines log lines for one fault"; }

# Free the space: the failed writes now succeed, and everything verifies.
rm "$T/small/filler"
for i in "${failed[@]}"; do
	assert_eq "$($P -d "$D" pwrite $((2097152 + i * 65536)) 65536 $((100 + i)))" 65536 \
		"write $i after freeing space"
done
assert_eq "$($P "$D" fsync)" 0 "fsync after recovery"
pd_stop
pd_start -i "$T/small/disk.img" -s 6M
assert_eq "$($P "$D" verify 0 1048576 1)" "1048576 ok" "initial data after restart"
for i in $(seq 0 39); do
	assert_eq "$($P "$D" verify $((2097152 + i * 65536)) 65536 $((100 + i)))" "65536 ok" \
		"write $i after restart"
done
pd_stop
