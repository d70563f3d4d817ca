#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# On FUSE over io_uring a ring thread runs under SCHED_BATCH while it handles several requests
# per wake-up (direct I/O at queue depth 32), and goes back to SCHED_OTHER when it handles
# one (queue depth 1), where a woken SCHED_BATCH thread would wait for a busy CPU's running
# task. Idle, every thread is SCHED_OTHER; no thread but a ring thread ever changes its
# policy, so on the classic transport none does. fio runs on CPU 0, so that its requests all
# go to the ring queue of CPU 0.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio taskset

# policies: "COMM POLICY" for each thread of the daemon (stat's field 41: 0 SCHED_OTHER,
# 3 SCHED_BATCH; the fields are counted after the command name, which may hold spaces).
policies() {
	local t
	for t in /proc/"$PD_PID"/task/*; do
		printf '%s %s\n' "$(cat "$t/comm")" "$(sed 's/^.*) //' "$t/stat" | awk '{print $39}')"
	done
}
# batch_threads [COMM-PATTERN]: how many threads (matching the pattern) are under SCHED_BATCH.
batch_threads() { policies | awk -v p="${1:-.}" '$1 ~ p && $2 == 3' | wc -l; }
# others_changed: threads other than ring threads whose policy is not SCHED_OTHER.
others_changed() { policies | awk '$1 !~ /^plugdisk-ring/ && $2 != 0' | wc -l; }

# load DEPTH SECONDS: direct random reads on the disk file from CPU 0, in the background.
load() {
	taskset -c 0 fio --name="qd$1" --filename="$MNT/disk" --direct=1 --ioengine=libaio \
		--rw=randread --bs=4k --iodepth="$1" --time_based --runtime="$2" \
		--output="$T/fio-qd$1.log" &
	FIO_PID=$!
}

pd_start -s 256M
ring0=plugdisk-ring0
if [ "$PLUGDISK_TRANSPORT" = io_uring ]; then
	assert_gt "$(policies | grep -c '^plugdisk-ring')" 0 "ring threads of the daemon"
	policies | grep -q "^$ring0 " || skip "no ring queue for CPU 0"
fi
assert_eq "$(batch_threads)" 0 "threads under SCHED_BATCH while idle"

# 1. Queue depth 32: the ring thread of CPU 0 takes SCHED_BATCH within the run.
load 32 4
seen=0
for _ in $(seq 35); do
	sleep 0.1
	[ "$(batch_threads "^$ring0\$")" = 1 ] && seen=$((seen + 1))
	assert_eq "$(others_changed)" 0 "threads other than ring threads with another policy"
done
wait "$FIO_PID" || fail "fio at queue depth 32: $(tail -3 "$T/fio-qd32.log")"
log "queue depth 32: $ring0 under SCHED_BATCH in $seen of 35 samples"
if [ "$PLUGDISK_TRANSPORT" = io_uring ]; then
	assert_gt "$seen" 0 "samples with $ring0 under SCHED_BATCH at queue depth 32"
else
	assert_eq "$seen" 0 "samples with a thread under SCHED_BATCH on the classic transport"
fi

# 2. Queue depth 1, right after: the same thread goes back to SCHED_OTHER and stays there.
load 1 4
sleep 1.5
for _ in $(seq 10); do
	assert_eq "$(batch_threads "^$ring0\$")" 0 "$ring0 under SCHED_BATCH at queue depth 1"
	sleep 0.2
done
wait "$FIO_PID" || fail "fio at queue depth 1: $(tail -3 "$T/fio-qd1.log")"
assert_eq "$(others_changed)" 0 "threads other than ring threads with another policy"
pd_stop
