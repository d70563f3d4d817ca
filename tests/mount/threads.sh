#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mount.threads: the daemon runs that many FUSE receive threads (named plugdisk-fuse), a
# concurrent load is spread over them (on io_uring: carried by one plugdisk-ring thread per
# queue instead), and data verifies with one thread as with many.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd fio

# receive_threads PID: TIDs of the daemon's FUSE receive threads.
receive_threads() {
	local d
	for d in /proc/"$1"/task/*; do
		[ "$(cat "$d/comm" 2>/dev/null)" = plugdisk-fuse ] && basename "$d"
	done
}

# has_receive_threads N: whether the daemon has (named) N receive threads or more.
has_receive_threads() { [ "$(receive_threads "$PD_PID" | wc -l)" -ge "$1" ]; }

# ring_threads PID: TIDs of the daemon's FUSE io_uring queue threads.
ring_threads() {
	local d
	for d in /proc/"$1"/task/*; do
		[[ "$(cat "$d/comm" 2>/dev/null)" == plugdisk-ring* ]] && basename "$d"
	done
}

# busy_threads PID MIN: how many receive threads have slept in read() at least MIN times.
busy_threads() {
	local tid n=0
	for tid in $(receive_threads "$1"); do
		[ "$(awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$1/task/$tid/status")" -ge "$2" ] &&
			n=$((n + 1))
	done
	echo "$n"
}

verify_load() {
	local dev
	dev=$(loop_attach "$MNT/disk" --direct-io=on)
	loop_nomerges "$dev" 2
	fio_verify "$dev" threads randwrite 16M 32
	loop_detach "$dev"
}

for n in 1 8; do
	pd_start -s 32M --set mount.threads=$n
	# The mount answers once one thread reads: the others may still be starting.
	true_within 5 has_receive_threads "$n" || true
	assert_eq "$(receive_threads "$PD_PID" | wc -l)" "$n" "receive threads with mount.threads=$n"
	verify_load
	if [ "$PLUGDISK_TRANSPORT" = io_uring ]; then
		# The rings carry the requests, one thread per queue; the receive threads only
		# see FUSE_INIT, interrupts and forgets.
		assert_eq "$(ring_threads "$PD_PID" | wc -l)" "$(stat_get fuse_ring_queues)" \
			"ring threads, one per queue"
		assert_gt "$(stat_get fuse_ring_requests)" 4096 "requests through the rings"
	else
		busy=$(busy_threads "$PD_PID" 20)
		log "mount.threads=$n: $busy receive thread(s) served requests"
		if [ "$n" = 1 ]; then
			assert_eq "$busy" 1 "busy receive threads with one"
		else
			assert_gt "$busy" 1 "busy receive threads under iodepth 32"
		fi
	fi
	assert_identities
	assert_eq "$(stat_get write_errors)" 0 "write_errors"
	pd_stop
	rm -f "$T/disk.img"
done

# The default is documented as 2.
pd_start -s 16M
true_within 5 has_receive_threads 2 || true
assert_eq "$(receive_threads "$PD_PID" | wc -l)" 2 "receive threads by default"
pd_stop
