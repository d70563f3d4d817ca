#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGTERM stops a daemon whose client keeps it busy: with a sustained iodepth-32 writer on a
# 500-IOPS disk, the daemon exits 0 long before the writer would have ended (its new requests
# fail with EIO from the signal on), and every write the writer saw succeed is in the image
# after a restart. On a 512 B/s disk, a queued 64 KiB write (two minutes at that rate) is
# completed with the limits lifted, and verifies. On a disk out of burst credits, the queued
# writes are not held to the credit rate.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio jq
pd_start -s 64M --set controller.iops=500
fio --name=w --filename="$MNT/disk" --rw=write --bs=4k --size=64M --iodepth=32 \
	--ioengine=libaio --direct=1 --time_based --runtime=120 --verify=crc32c --do_verify=0 \
	--verify_state_save=0 --output-format=json --output="$T/fio.json" >/dev/null 2>&1 &
fio_pid=$!
at_cleanup "kill $fio_pid 2>/dev/null"
stat_wait_ge write_ios 500 "writes before the stop" 10
t0=$(date +%s)
# The bound: what is queued and in flight (at most nr_requests + queue_depth 4 KiB writes)
# takes milliseconds without the limits; 20 s only absorbs a loaded machine. The writer alone
# would keep a draining daemon busy for two minutes.
pd_term_within 20 "the daemon under load"
log "stopped in $(($(date +%s) - t0)) s"
grep -q "new requests fail with EIO" "$T/daemon.log" || fail "the stop was not logged"
wait $fio_pid 2>/dev/null || true
grep -q "Input/output error\|error=" "$T/fio.json" || log "note: fio reported no error"
done_bytes=$(jq '.jobs[0].write.io_bytes' "$T/fio.json")
assert_gt "$done_bytes" $((500 * 4096 - 1)) "bytes fio saw written"
# Sequential at iodepth 32: every write submitted before the signal completes normally and
# every later one fails, so what fio counts as written is a prefix of the disk.
# Sequential writes merge, so 500 commands/s can take the writer past the end of the disk,
# where it starts over: then the whole disk holds what fio saw written.
verify_bytes=$done_bytes
[ "$verify_bytes" -le $((64 << 20)) ] || verify_bytes=$((64 << 20))
pd_start -s 64M
fio --name=w --filename="$MNT/disk" --rw=write --bs=4k --size="$verify_bytes" --iodepth=32 \
	--ioengine=libaio --direct=1 --verify=crc32c --verify_only --verify_fatal=1 --verify_state_save=0 \
	--verify_state_load=0 --output="$T/verify.log" >/dev/null 2>&1 ||
	{ cat "$T/verify.log" >&2; fail "a write fio saw succeed did not verify"; }
pd_stop

# 512 B/s: one queued 64 KiB write, then SIGTERM.
rm -f "$T/disk.img"
pd_start -s 16M --set controller.bandwidth=512 --set controller.burst_ms=1
dd if=/dev/urandom of="$T/blob" bs=64k count=1 status=none
dd if="$T/blob" of="$MNT/disk" bs=64k seek=3 oflag=direct conv=notrunc status=none 2>"$T/dd.err" &
dd_pid=$!
stat_wait_ge write_bios 1 "the 64 KiB write queued"
sleep 0.5
pd_term_within 20 "the 512 B/s daemon"
wait $dd_pid || { cat "$T/dd.err" >&2; fail "the queued 64 KiB write failed"; }
assert_eq "$(sha_of "$T/disk.img" $((3 * 65536)) 65536)" "$(sha_of "$T/blob")" \
	"the queued write in the image"

# Out of burst credits at 1 I/O per second: the queued writes complete with the credit bucket
# lifted too, not one a second.
rm -f "$T/disk.img"
pd_start -s 16M --set queue.nomerges=2 --set controller.credit_capacity=8 \
	--set controller.credit_baseline_iops=1
fio --name=c --filename="$MNT/disk" --rw=randwrite --bs=4k --size=16M --iodepth=32 \
	--ioengine=libaio --direct=1 --time_based --runtime=120 >/dev/null 2>&1 &
fio_pid=$!
at_cleanup "kill $fio_pid 2>/dev/null"
stat_wait_ge queued_requests 24 "writes queued behind the empty credit bucket" 10
# At one a second, the 24 or more queued writes would keep the daemon over 20 s.
pd_term_within 20 "the daemon out of credits"
wait $fio_pid 2>/dev/null || true
