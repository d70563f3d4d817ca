#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Crash-consistency cycles: start plugdisk with random limits, write self-describing blocks through
# the disk file or through ext4 on a loop device, kill -9 the daemon at a random moment, clean
# the stale mount, restart, verify. "term" cycles stop the daemon with SIGTERM under load instead.
# Usage: crash.sh [CYCLES=N] [SIZE=64M] [FS_SIZE=128M] [SEED=N] [MODES=disk,ext4,disk,term]
#   [KILL_MIN_MS=200] [KILL_MAX_MS=3000] [ACK=all|direct|fsync] [SELFTEST=1]

. "$(dirname "$0")/../lib.sh"

CYCLES=20 SIZE=64M FS_SIZE=128M SEED= MODES=disk,ext4,disk,term KILL_MIN_MS=200 KILL_MAX_MS=3000
SELFTEST=0 ACK=all
for a; do
	case $a in
	CYCLES=* | SIZE=* | FS_SIZE=* | SEED=* | MODES=* | KILL_MIN_MS=* | KILL_MAX_MS=* | SELFTEST=* | ACK=*)
		printf -v "${a%%=*}" '%s' "${a#*=}" ;;
	*) fail "unknown argument '$a' (CYCLES= SIZE= FS_SIZE= SEED= MODES= KILL_MIN_MS= KILL_MAX_MS= ACK= SELFTEST=)" ;;
	esac
done
[[ $CYCLES =~ ^[0-9]+$ ]] && [ "$CYCLES" -gt 0 ] || fail "CYCLES must be a positive number"
: "${SEED:=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}"
RANDOM=$SEED

require_fuse
require_cmd fusermount3 od
case $MODES in *ext4*) require_loop; require_cmd mkfs.ext4 e2fsck losetup ;; esac

. "$TESTS_DIR/crash/cycle-lib.sh"

IMG=$T/disk.img		# disk cycles: carries its content from cycle to cycle
FSIMG=$T/fs.img		# ext4 cycles: a fresh mkfs each cycle
FS=$T/fs
STATE=$T/disk.state	# what the last disk verification found, per sector
RUN=$((RANDOM * 32768 + RANDOM + 1))
mkdir -p "$FS"
track_mount "$FS"

# random_limits: fill LIMITS with a random set of --set options (some cycles get none).
random_limits() {
	LIMITS=()
	[ $((RANDOM % 5)) = 0 ] && return 0
	[ $((RANDOM % 2)) = 0 ] && LIMITS+=(--set "controller.iops=$(pick 200 1000 5000 20000)")
	[ $((RANDOM % 3)) = 0 ] && LIMITS+=(--set "controller.write_iops=$(pick 300 2000)")
	[ $((RANDOM % 2)) = 0 ] && LIMITS+=(--set "controller.bandwidth=$(pick 4M 16M 64M 256M)")
	[ $((RANDOM % 2)) = 0 ] && LIMITS+=(--set "controller.latency_us=$(pick 50 200 1000 3000)")
	[ $((RANDOM % 3)) = 0 ] && LIMITS+=(--set "controller.flush_latency_us=$(pick 100 2000)")
	[ $((RANDOM % 2)) = 0 ] && LIMITS+=(--set "controller.queue_depth=$(pick 1 2 4 8 32 64)")
	[ $((RANDOM % 3)) = 0 ] && LIMITS+=(--set "controller.workers=$(pick 1 2 8)")
	[ $((RANDOM % 2)) = 0 ] && LIMITS+=(--set "queue.nomerges=$(pick 0 1 2)")
	[ $((RANDOM % 3)) = 0 ] && LIMITS+=(--set "queue.max_request_size=$(pick 4K 64K 128K 1M)")
	[ $((RANDOM % 4)) = 0 ] && LIMITS+=(--set "queue.plug=$(pick false true)")
	# unplug_threshold may not exceed nr_requests (default threshold 32): set them together.
	if [ $((RANDOM % 3)) = 0 ]; then
		local nr th
		nr=$(pick 4 16 128) th=$(pick 1 4 32)
		[ "$th" -le "$nr" ] || th=$nr
		LIMITS+=(--set "queue.nr_requests=$nr" --set "queue.unplug_threshold=$th")
	elif [ $((RANDOM % 3)) = 0 ]; then
		LIMITS+=(--set "queue.unplug_threshold=$(pick 1 4 32)")
	fi
	return 0
}

# crash_daemon: kill -9 the daemon (it must still be alive: dying on its own is a bug).
crash_daemon() {
	kill -0 "$PD_PID" 2>/dev/null || { tail -n 30 "$T/daemon.log" >&2; fail "cycle $cycle: daemon died before the kill"; }
	kill -KILL "$PD_PID"
	wait "$PD_PID" 2>/dev/null || true
	forget_daemon
}

# term_daemon: SIGTERM under load; the daemon must drain and exit 0 within 60 s.
term_daemon() {
	local rc=0
	kill -0 "$PD_PID" 2>/dev/null || { tail -n 30 "$T/daemon.log" >&2; fail "cycle $cycle: daemon died before SIGTERM"; }
	kill -TERM "$PD_PID"
	if ! pid_gone_within 60 "$PD_PID"; then
		tail -n 30 "$T/daemon.log" >&2
		fail "cycle $cycle: daemon still running 60 s after SIGTERM under load (seed $SEED)"
	fi
	wait "$PD_PID" || rc=$?
	forget_daemon
	[ $rc = 0 ] || { tail -n 30 "$T/daemon.log" >&2; fail "cycle $cycle: daemon exited with status $rc on SIGTERM under load"; }
}

# run_verify ARGS...: run the verifier, add its byte count to the total, fail on a mismatch.
run_verify() {
	local out rc=0
	out=$("$CT" verify "$@" 2>"$T/verify.err") || rc=$?
	echo "$out" >>"$T/verify.log"
	if [ $rc != 0 ]; then
		echo "$out" >&2; cat "$T/verify.err" >&2
		[ $rc -gt 128 ] && log "the verifier was killed by signal $((rc - 128))"
		log "verifier exit status $rc; daemon alive: $(kill -0 "$PD_PID" 2>/dev/null && echo yes || echo no)"
		# A second pass tells a transient read problem from what is really in the image.
		"$CT" verify "$@" --max-report 5 >&2 2>&1 && log "a second verification passed"
		tail -n 30 "$T/daemon.log" >&2
		fail "cycle $cycle ($mode, limits: ${LIMITS[*]:-none}): verification failed (seed $SEED)"
	fi
	local b=${out##*bytes=}; b=${b%% *}
	BYTES=$((BYTES + b))
	VERIFY_LINE=$out
}

disk_cycle() {
	local log=$T/cycle$cycle.log wpid threads stop=${1:-kill}
	threads=$(rand 1 6)
	pd_start -i "$IMG" -s "$SIZE" "${LIMITS[@]}"
	"$CT" write --target "$MNT/disk" --log "$log" --run "$RUN" --gen-base $((cycle * 1000000000)) \
		--seed $((SEED * 100000 + cycle)) --threads "$threads" --quiet \
		--direct-pct "$(pick 0 50 100)" --sync-pct "$(pick 1 4 10)" --seq-pct "$(pick 0 30 80)" \
		2>"$T/writer.log" &
	wpid=$!
	sleep_ms "$(rand "$KILL_MIN_MS" "$KILL_MAX_MS")"
	if [ "$stop" = term ]; then term_daemon; else crash_daemon; fi
	fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	wait_writer "$wpid" "the daemon was killed"
	WRITER_LINE=$(tail -n 1 "$T/writer.log")

	pd_start -i "$IMG" -s "$SIZE"
	# plugdisk acknowledges a write only once it reached the image and has no writeback cache,
	# so by default every completed write must survive the daemon's death (ACK=all).
	run_verify --target "$MNT/disk" --log "$log" --state "$STATE" --state-out "$STATE" --ack "$ACK"
	pd_stop
	forget_daemon
	rm -f "$log"
}

ext4_cycle() {
	local log=$T/cycle$cycle.log wpid dev dio fsck
	dio=$(pick on off)
	pd_start -i "$FSIMG" -s "$FS_SIZE" "${LIMITS[@]}"
	attach_loop "$MNT/disk" --direct-io="$dio"
	dev=$DEV
	mkfs.ext4 -q -F $(pick "" "-E nodiscard") "$dev" >/dev/null || fail "cycle $cycle: mkfs.ext4 failed"
	mount -t ext4 "$dev" "$FS" || fail "cycle $cycle: mount failed"
	"$CT" write --dir "$FS" --log "$log" --seed $((SEED * 100000 + cycle)) --quiet \
		--threads "$(rand 1 3)" --files "$(rand 3 24)" --size "$(pick 1M 4M)" \
		--direct-pct "$(pick 0 50)" --sync-pct "$(pick 2 5 10)" 2>"$T/writer.log" &
	wpid=$!
	sleep_ms "$(rand "$KILL_MIN_MS" "$KILL_MAX_MS")"
	crash_daemon
	wait_writer "$wpid" "the daemon was killed"
	WRITER_LINE=$(tail -n 1 "$T/writer.log")
	umount "$FS" 2>/dev/null || umount -l "$FS"
	losetup -d "$dev"
	forget_loop
	fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true

	pd_start -i "$FSIMG" -s "$FS_SIZE"
	attach_loop "$MNT/disk"
	dev=$DEV
	# Mounting replays the journal; the unmount leaves a clean filesystem for e2fsck.
	mount -t ext4 "$dev" "$FS" || fail "cycle $cycle: mount after the crash failed (seed $SEED)"
	umount "$FS"
	fsck=$(e2fsck -fn "$dev" 2>&1) || {
		echo "$fsck" >&2
		fail "cycle $cycle (ext4, limits: ${LIMITS[*]:-none}): e2fsck -fn found errors after journal replay (seed $SEED)"
	}
	mount -t ext4 -o ro "$dev" "$FS" || fail "cycle $cycle: read-only mount failed"
	run_verify --dir "$FS" --log "$log" --ack fsync
	umount "$FS"
	losetup -d "$dev"
	forget_loop
	pd_stop
	forget_daemon
	rm -f "$log"
}

# selftest: corrupt one acknowledged sector of the disk image with the daemon stopped; the
# verifier must notice. Proves that the cycles above could have failed.
selftest() {
	local log=$T/selftest.log line off
	pd_start -i "$IMG" -s "$SIZE"
	"$CT" write --target "$MNT/disk" --log "$log" --run "$RUN" --gen-base $(((CYCLES + 1) * 1000000000)) \
		--ops 200 --sync-pct 10 2>>"$T/writer.log" || fail "selftest: writer failed"
	pd_stop
	forget_daemon
	line=$("$CT" acked --log "$log" | tail -n 1)
	[ -n "$line" ] || fail "selftest: no acknowledged write"
	off=$(echo "$line" | awk '{print $2}')
	printf 'torn' | dd of="$IMG" bs=1 seek=$((off + 200)) conv=notrunc status=none
	pd_start -i "$IMG" -s "$SIZE"
	if "$CT" verify --target "$MNT/disk" --log "$log" --state "$STATE" --max-report 1 \
		>"$T/selftest.out" 2>&1; then
		cat "$T/selftest.out" >&2
		fail "selftest: a corrupted acknowledged sector at byte $off was not detected"
	fi
	grep -q 'BAD TORN' "$T/selftest.out" || { cat "$T/selftest.out" >&2; fail "selftest: wrong diagnosis"; }
	pd_stop
	forget_daemon
	log "selftest: the verifier caught a corrupted sector at byte $off"
}

IFS=, read -ra mode_list <<<"$MODES"
BYTES=0 ndisk=0 next4=0 nterm=0
start=$(date +%s)
log "seed $SEED, $CYCLES cycles, modes $MODES, disk $SIZE, ext4 image $FS_SIZE, crashtool $CT"
for ((cycle = 1; cycle <= CYCLES; cycle++)); do
	mode=${mode_list[$(((cycle - 1) % ${#mode_list[@]}))]}
	random_limits
	t0=$(date +%s.%N)
	case $mode in
	disk) disk_cycle kill; ndisk=$((ndisk + 1)) ;;
	term) disk_cycle term; nterm=$((nterm + 1)) ;;
	ext4) ext4_cycle; next4=$((next4 + 1)) ;;
	*) fail "unknown mode '$mode'" ;;
	esac
	secs=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
	log "cycle $cycle/$CYCLES $mode $(date +%T) ${secs}s limits: ${LIMITS[*]:-none}"
	log "    ${WRITER_LINE#crashtool write: }"
	log "    ${VERIFY_LINE#crashtool verify: }"
done
[ "$SELFTEST" = 1 ] && selftest
log "$CYCLES cycles ($ndisk disk, $next4 ext4, $nterm SIGTERM) in $(($(date +%s) - start)) s, 0 failures," \
	"$BYTES bytes verified ($((BYTES >> 20)) MiB), seed $SEED"
echo "crash: cycles=$CYCLES disk=$ndisk ext4=$next4 term=$nterm bytes_verified=$BYTES failures=0 seed=$SEED"
