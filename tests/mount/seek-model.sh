#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The seek model through a mount: with --profile hdd-7200 a rotating disk takes one read or
# write at a time, so under fio at iodepth 16 the queue stops for the head (stop reason
# "head") and starts again each time it frees, at most two commands are ever in flight, and
# the data verifies. With controller.reorder=sptf (the profile's) and =fifo alike.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio

for reorder in sptf fifo; do
	pd_start -s 64M --profile hdd-7200 --set controller.reorder=$reorder
	fio --name=seek --filename="$MNT/disk" --ioengine=libaio --direct=1 --rw=randwrite \
		--bs=4k --iodepth=16 --size=8M --number_ios=200 --verify=crc32c --do_verify=1 \
		--randrepeat=1 --verify_state_save=0 --output="$T/fio.out" >/dev/null 2>&1 ||
		{ cat "$T/fio.out" >&2; fail "$reorder: fio verify failed"; }
	pd_wait_idle
	stats_save "$T/s"
	stops=$(snap_get "$T/s" queue_stops_head) starts=$(snap_get "$T/s" queue_starts_head)
	log "$reorder: write_ios $(snap_get "$T/s" write_ios), head stops $stops, starts $starts"
	assert_gt "$stops" 0 "$reorder: no stop for the head at iodepth 16"
	assert_eq "$stops" "$starts" "$reorder: every head stop ended by a start"
	assert_eq "$(snap_get "$T/s" stopped)" 0 "$reorder: stopped while idle"
	assert_identities
	pd_stop
done
