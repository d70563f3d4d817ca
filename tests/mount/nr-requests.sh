#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Request-depletion throttling: with queue.nr_requests=2, one slow command slot and fio at
# iodepth 32 through a loop device, submitters wait for a free request (depletion_waits > 0);
# that is not an error: everything verifies and the identities hold.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd fio

pd_start -s 16M --set queue.nr_requests=2 --set queue.unplug_threshold=1 \
	--set controller.queue_depth=1 --set controller.latency_us=1000
assert_eq "$(stat_get queue_nr_requests)" 2 "queue_nr_requests"
dev=$(loop_attach "$MNT/disk" --direct-io=on)
loop_nomerges "$dev" 2
fio_verify "$dev" deplete randwrite 1M 32
loop_detach "$dev"
assert_identities
stats_save "$T/s1"
log "depletion_waits $(snap_get "$T/s1" depletion_waits), write_ios $(snap_get "$T/s1" write_ios)"
assert_gt "$(snap_get "$T/s1" depletion_waits)" 0 "depletion_waits with nr_requests=2"
assert_eq "$(snap_get "$T/s1" write_errors)" 0 "write_errors"
assert_gt "$(snap_get "$T/s1" queue_stops_slots)" 0 "queue_stops_slots with one slot"
pd_stop
