#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The control file under load: four writers send random commands, the blocking ones among
# them (freeze, poweron behind stalls, release, stop/start, plug, power cuts), from their own
# processes while fio writes, reads and flushes the disk. No command may keep the file shut:
# every writer ends its commands, afterwards the stats file answers within a second, and the
# daemon stops cleanly with status 0.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio
SECONDS_RUN=${CONTROL_STRESS_SECONDS:-15}

pd_start -s 64M --set cache.mode=writeback --set cache.destage_delay_ms=5
(cd "$T" && fio --name=load --filename="$MNT/disk" --ioengine=psync --direct=1 --bs=4k \
	--rw=randrw --size=32M --fsync=16 --numjobs=2 --continue_on_error=all --time_based --runtime=$((SECONDS_RUN + 10)) \
	--output="$T/fio.log" >/dev/null 2>&1) &
fio_pid=$!

# writer N SEED: random commands until the deadline; each must return within 10 s. Its
# count of commands goes to $T/writerN.
cmds=(freeze thaw stop start plug unplug release poweron "powercut mode=drop"
	"fault add op=write stall prob=0.2" "fault add op=read stall prob=0.1" "fault clear"
	"fault add op=write latency=50ms prob=0.3" thaw start release release "fault clear")
writer() {
	local n=$1 end=$((SECONDS + SECONDS_RUN)) c rc count=0
	RANDOM=$2
	while [ $SECONDS -lt $end ]; do
		c=${cmds[RANDOM % ${#cmds[@]}]}
		rc=0
		# shellcheck disable=SC2086 # a command is several words
		timeout -k 2 10 "$PLUGDISK" ctl "$MNT" $c >/dev/null 2>&1 || rc=$?
		[ "$rc" = 124 ] || [ "$rc" = 137 ] && { echo "stuck: $c" >"$T/writer$n"; return 1; }
		count=$((count + 1))
	done
	echo "$count" >"$T/writer$n"
}
pids=()
for n in 1 2 3 4; do
	writer $n $((n * 7919)) &
	pids+=($!)
done
for p in "${pids[@]}"; do
	pid_gone_within $((SECONDS_RUN + 20)) "$p" || fail "a control writer is stuck in the kernel"
	wait "$p" || fail "writer: $(cat "$T"/writer* 2>/dev/null | tr '\n' ' ')"
done
log "commands per writer: $(cat "$T"/writer[1-4] | tr '\n' ' ')"
# Let everything go, then the daemon answers at once.
for c in "fault clear" thaw start unplug poweron; do
	timeout -k 2 10 "$PLUGDISK" ctl "$MNT" $c >/dev/null 2>&1 || [ "$c" = poweron ] ||
		fail "$c after the run"
done
timeout -k 1 1 cat "$MNT/stats" >/dev/null || fail "stats did not answer within a second"
pd_stop
wait "$fio_pid" || true
