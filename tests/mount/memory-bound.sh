#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Data buffers in flight are bounded: 1 MiB direct writes and reads at iodepth 128 keep the
# daemon's peak RSS (VmHWM) under 64 MiB, and the data verifies.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio
if grep -q -e __asan_init -e __tsan_init "$PLUGDISK" 2>/dev/null; then
	skip "a sanitizer build's memory use says nothing about plugdisk's"
fi

pd_start -s 256M
for rw in write read; do
	fio --name=mem --filename="$MNT/disk" --rw=$rw --bs=1M --iodepth=128 --ioengine=libaio \
		--direct=1 --size=256M --verify=crc32c --verify_fatal=1 --do_verify=$([ $rw = read ] && echo 1 || echo 0) \
		--verify_state_save=0 --output="$T/fio-$rw.log" >/dev/null 2>&1 ||
		{ cat "$T/fio-$rw.log" >&2; fail "fio $rw failed"; }
done
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PD_PID/status")
log "peak RSS ${hwm} kB after 1 MiB I/O at iodepth 128"
[ "$hwm" -lt $((64 * 1024)) ] || fail "peak RSS $hwm kB is over 64 MiB"
assert_gt "$(stat_get write_bytes)" $((255 * 1024 * 1024)) "bytes written"
pd_stop
