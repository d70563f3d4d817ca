#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Power-cut cycles: plugdisk with cache.mode = writeback, a writer of self-describing blocks (or
# ext4, or SQLite) on it, a power cut at a random point (the powercut command, or a cut armed
# to fire on its own), then verification: every write acknowledged by fsync survives, others
# may be lost but no O_DIRECT write is torn inside the atomic write unit.
# Usage: powercut.sh [CYCLES=N] [SIZE=64M] [FS_SIZE=128M] [XFS_SIZE=320M] [SEED=N]
#   [MODES=disk,armed,poweron,ext4,xfs,sqlite] [CUT_MIN_MS=200] [CUT_MAX_MS=2000] [IGNORE=N]
# IGNORE=N (default 2) more cycles run with cache.flush = ignore: there the verifier must find
# losses, which proves that the cycles above could have failed.

. "$(dirname "$0")/../lib.sh"

CYCLES=10 SIZE=64M FS_SIZE=128M XFS_SIZE=320M SEED= MODES=disk,armed,poweron,ext4,xfs,sqlite
CUT_MIN_MS=200
CUT_MAX_MS=2000 IGNORE=2
for a; do
	case $a in
	CYCLES=* | SIZE=* | FS_SIZE=* | XFS_SIZE=* | SEED=* | MODES=* | CUT_MIN_MS=* | CUT_MAX_MS=* | IGNORE=*)
		printf -v "${a%%=*}" '%s' "${a#*=}" ;;
	*) fail "unknown argument '$a' (CYCLES= SIZE= FS_SIZE= XFS_SIZE= SEED= MODES= CUT_MIN_MS= CUT_MAX_MS= IGNORE=)" ;;
	esac
done
[[ $CYCLES =~ ^[0-9]+$ ]] || fail "CYCLES must be a number"
[[ $IGNORE =~ ^[0-9]+$ ]] || fail "IGNORE must be a number"
: "${SEED:=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}"
RANDOM=$SEED

require_fuse
require_cmd fusermount3 od
case $MODES in *ext4*) require_loop; require_cmd mkfs.ext4 e2fsck losetup ;; esac
case $MODES in *xfs*) require_loop; require_cmd mkfs.xfs xfs_repair losetup ;; esac
case $MODES in *sqlite*) require_loop; require_cmd mkfs.ext4 losetup sqlite3 ;; esac

. "$TESTS_DIR/crash/cycle-lib.sh"

IMG=$T/disk.img
FSIMG=$T/fs.img
FS=$T/fs
STATE=$T/disk.state
RUN=$((RANDOM * 32768 + RANDOM + 1))
mkdir -p "$FS"
track_mount "$FS"

# random_cache FLUSH: the cache settings of a cycle, in CACHE.
random_cache() {
	ATOMIC=$(pick 512 4096 16384)
	CUTMODE=$(pick drop prefix subset subset tear)
	CACHE=(--set cache.mode=writeback --set "cache.flush=$1" --set "cache.atomic_write=$ATOMIC"
		--set "cache.powercut=$CUTMODE" --set "cache.seed=$((SEED * 1000 + cycle))"
		--set "cache.destage_delay_ms=$(pick 0 20 200 1000)"
		--set "cache.destage_rate=$(pick 0 4M 32M)" --set "cache.size=$(pick 16M 64M)")
	[ $((RANDOM % 3)) = 0 ] && CACHE+=(--set "controller.latency_us=$(pick 50 500)")
	[ $((RANDOM % 3)) = 0 ] && CACHE+=(--set "controller.queue_depth=$(pick 1 4 32)")
	return 0
}

ctl() { echo "$*" >"$MNT/control" || fail "cycle $cycle: control '$*' failed"; }
powered() { awk '$1 == "cache_powered" {print $2}' "$MNT/stats"; }
# count_cut: add what the cut dropped to the totals.
count_cut() {
	local d
	d=$(awk '$1 == "cache_last_cut_dropped_bytes" {print $2}' "$MNT/stats")
	DROPPED=$((DROPPED + ${d:-0}))
	[ "${d:-0}" -gt 0 ] && CUTS_LOSING=$((CUTS_LOSING + 1))
	CUT_HOW="$CUT_HOW, dropped ${d:-0} bytes"
}

# cut HOW WRITER_PID: cut the power now (cmd) or arm a cut and wait for it (armed).
cut() {
	local how=$1 wpid=$2 i
	if [ "$how" = armed ]; then
		local arm
		arm=$(pick "random=$(rand 20 3000)" "flush=$(rand 1 40)" \
			"write=$(rand 1 200) after_flush=$(rand 0 20)")
		ctl "powercut arm $arm"
		CUT_HOW="armed $arm"
		for i in $(seq 100); do
			[ "$(powered)" = 0 ] && return 0
			kill -0 "$wpid" 2>/dev/null || break
			sleep 0.1
		done
		# Not reached in 10 s (or the writer ended first): cut by hand.
		CUT_HOW="$CUT_HOW (not reached: cut by command)"
		ctl powercut
		return 0
	fi
	sleep_ms "$(rand "$CUT_MIN_MS" "$CUT_MAX_MS")"
	CUT_HOW=command
	ctl powercut
}

stop_daemon() { pd_stop; forget_daemon; fusermount3 -u -z "$MNT" 2>/dev/null || true; }

# run_verify EXPECT ARGS...: EXPECT ok (must pass) or lost (must find LOST sectors).
run_verify() {
	local expect=$1 out rc=0 b
	shift
	out=$("$CT" verify "$@" 2>"$T/verify.err") || rc=$?
	echo "$out" >>"$T/verify.log"
	VERIFY_LINE=$out
	if [ "$expect" = lost ]; then
		[ $rc = 1 ] && [[ $out == *"lost="[1-9]* ]] || {
			echo "$out" >&2; head -n 20 "$T/verify.err" >&2
			fail "cycle $cycle: cache.flush=ignore lost nothing the verifier noticed (exit $rc; seed $SEED)"
		}
		b=${out##*lost=}; LOSSES=$((LOSSES + ${b%% *}))
		return 0
	fi
	if [ $rc != 0 ]; then
		echo "$out" >&2; head -n 40 "$T/verify.err" >&2
		tail -n 20 "$T/daemon.log" >&2
		fail "cycle $cycle ($mode, cut $CUT_HOW, ${CACHE[*]}): verification failed (seed $SEED)"
	fi
	b=${out##*bytes=}; BYTES=$((BYTES + ${b%% *}))
}

# disk_cycle HOW [FLUSH]: the writer on MNT/disk; HOW: command, armed or poweron.
disk_cycle() {
	local how=$1 flush=${2:-honour} log=$T/cycle$cycle.log wpid expect=ok
	random_cache "$flush"
	pd_start -i "$IMG" -s "$SIZE" "${CACHE[@]}"
	local wargs=(--threads "$(rand 1 4)" --direct-pct "$(pick 50 80 100)"
		--sync-pct "$(pick 2 5 10)" --seq-pct "$(pick 0 30 80)")
	if [ "$flush" = ignore ]; then
		# A finished run with fsyncs, then a cut that drops everything still cached.
		CACHE+=(--set cache.powercut=drop)
		pd_stop; forget_daemon
		pd_start -i "$IMG" -s "$SIZE" "${CACHE[@]}" --set cache.destage_delay_ms=600000 \
			--set cache.size=64M
		wargs=(--threads 2 --direct-pct 100 --sync-pct 10 --ops 100 --seq-pct 30)
		expect=lost
	fi
	"$CT" write --target "$MNT/disk" --log "$log" --run "$RUN" --gen-base $((cycle * 1000000000)) \
		--seed $((SEED * 100000 + cycle)) --quiet "${wargs[@]}" 2>"$T/writer.log" &
	wpid=$!
	if [ "$flush" = ignore ]; then
		wait_writer "$wpid" "the power cut"
		CUT_HOW=command
		ctl powercut
	else
		cut "$([ "$how" = armed ] && echo armed || echo command)" "$wpid"
		wait_writer "$wpid" "the power cut"
	fi
	WRITER_LINE=$(tail -n 1 "$T/writer.log")
	[ "$(powered)" = 0 ] || fail "cycle $cycle: the power is on after the cut"
	[ "$expect" = ok ] && count_cut
	if [ "$how" = poweron ]; then
		ctl poweron
	else
		stop_daemon
		pd_start -i "$IMG" -s "$SIZE"
	fi
	if [ "$expect" = lost ]; then
		run_verify lost --target "$MNT/disk" --log "$log" --state "$STATE" --ack fsync \
			--max-report 3
		# The image now holds losses the state does not describe: start the state afresh.
		stop_daemon
		rm -f "$IMG" "$STATE"
	else
		run_verify ok --target "$MNT/disk" --log "$log" --state "$STATE" --state-out "$STATE" \
			--ack fsync --atomic "$ATOMIC"
		stop_daemon
	fi
	rm -f "$log"
}

# fs_start [FSTYPE]: a fresh ext4 (or xfs) on the cached disk, mounted at FS.
fs_start() {
	FSTYPE=${1:-ext4}
	FSSIZE=$FS_SIZE
	[ "$FSTYPE" = xfs ] && FSSIZE=$XFS_SIZE
	rm -f "$FSIMG"
	random_cache honour
	pd_start -i "$FSIMG" -s "$FSSIZE" "${CACHE[@]}"
	attach_loop "$MNT/disk" --direct-io="$(pick on off)"
	if [ "$FSTYPE" = xfs ]; then
		mkfs.xfs -q -f -K "$DEV" >/dev/null || fail "cycle $cycle: mkfs.xfs failed"
	else
		mkfs.ext4 -q -F -E nodiscard "$DEV" >/dev/null || fail "cycle $cycle: mkfs.ext4 failed"
	fi
	mount -t "$FSTYPE" "$DEV" "$FS" || fail "cycle $cycle: mount failed"
}

# fs_after_cut [rw]: unmount what the cut left, restart, replay the journal, e2fsck (or
# xfs_repair -n) must be clean; then mount it again (read-only unless rw).
fs_after_cut() {
	local fsck opt=ro
	[ "${1:-}" = rw ] && opt=rw
	umount "$FS" 2>/dev/null || umount -l "$FS"
	losetup -d "$DEV"
	forget_loop
	stop_daemon
	pd_start -i "$FSIMG" -s "$FSSIZE"
	attach_loop "$MNT/disk"
	mount -t "$FSTYPE" "$DEV" "$FS" || fail "cycle $cycle: mount after the cut failed (seed $SEED)"
	umount "$FS"
	if [ "$FSTYPE" = xfs ]; then
		fsck=$(xfs_repair -n "$DEV" 2>&1) || {
			echo "$fsck" >&2
			fail "cycle $cycle (xfs, cut $CUT_HOW, ${CACHE[*]}): xfs_repair -n found errors after log replay (seed $SEED)"
		}
	else
		fsck=$(e2fsck -fn "$DEV" 2>&1) || {
			echo "$fsck" >&2
			fail "cycle $cycle (ext4, cut $CUT_HOW, ${CACHE[*]}): e2fsck -fn found errors after journal replay (seed $SEED)"
		}
	fi
	mount -t "$FSTYPE" -o "$opt" "$DEV" "$FS" || fail "cycle $cycle: mount -o $opt failed"
}

fs_end() {
	umount "$FS"
	losetup -d "$DEV"
	forget_loop
	stop_daemon
}

# fs_cycle FSTYPE: the writer on files in a fresh filesystem.
fs_cycle() {
	local log=$T/cycle$cycle.log wpid
	fs_start "$1"
	"$CT" write --dir "$FS" --log "$log" --seed $((SEED * 100000 + cycle)) --quiet \
		--threads "$(rand 1 3)" --files "$(rand 3 24)" --size "$(pick 1M 4M)" \
		--direct-pct "$(pick 0 50)" --sync-pct "$(pick 2 5 10)" 2>"$T/writer.log" &
	wpid=$!
	cut "$(pick command armed)" "$wpid"
	wait_writer "$wpid" "the power cut"
	WRITER_LINE=$(tail -n 1 "$T/writer.log")
	count_cut
	fs_after_cut
	run_verify ok --dir "$FS" --log "$log" --ack fsync
	fs_end
	rm -f "$log"
}

# sqlite_cycle: SQLite (WAL or rollback journal) commits rows; the client logs each COMMIT
# that returned. After the cut: integrity_check ok, and every row committed before the last
# flush that completed is there. With synchronous=EXTRA a COMMIT returns after its fsyncs,
# the directory's too, so every logged row must be there. (With FULL, a rollback-journal
# COMMIT does not sync the journal's unlink, and a cut right after it may roll the last
# transaction back, as SQLite documents; this harness catches that.)
sqlite_cycle() {
	local jm wpid db=$FS/test.db missing rows last ok
	jm=$(pick wal delete)
	fs_start ext4
	sqlite3 "$db" "PRAGMA journal_mode=$jm; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);" \
		>/dev/null || fail "cycle $cycle: sqlite3 create failed"
	(
		i=0
		while :; do
			i=$((i + 1))
			printf 'PRAGMA synchronous=EXTRA;\nBEGIN;\n'
			for j in 1 2 3 4; do
				printf "INSERT INTO t VALUES(%d, randomblob(%d));\n" $((i * 4 + j)) $((RANDOM % 9000 + 100))
			done
			printf 'COMMIT;\nSELECT %d;\n' "$i"
		done
	) | sqlite3 -batch -bail "$db" -cmd "PRAGMA journal_mode=$jm;" >"$T/commits.log" 2>"$T/sqlite.err" &
	wpid=$!
	CACHE_SQL=$jm
	cut "$(pick command armed)" "$wpid"
	# The client fails at the next I/O; the feeding loop ends with it (SIGPIPE).
	for _ in $(seq 600); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$wpid" 2>/dev/null && fail "cycle $cycle: sqlite3 still running 60 s after the cut"
	wait "$wpid" 2>/dev/null || true
	last=$(grep -E '^[0-9]+$' "$T/commits.log" | tail -n 1)
	last=${last:-0}
	WRITER_LINE="sqlite $jm: $last transactions committed before the cut"
	count_cut
	fs_after_cut rw	# SQLite recovers its journal or WAL on open
	ok=$(sqlite3 "$db" "PRAGMA integrity_check;" 2>&1) ||
		fail "cycle $cycle: sqlite3 cannot open the database after the cut: $ok"
	[ "$ok" = ok ] || fail "cycle $cycle (sqlite $jm, cut $CUT_HOW, ${CACHE[*]}): integrity_check: $ok (seed $SEED)"
	rows=$(sqlite3 "$db" "SELECT count(*) FROM t WHERE id <= $((last * 4 + 4));")
	missing=$((last * 4 - rows))
	[ "$missing" -le 0 ] || fail "cycle $cycle (sqlite $jm, cut $CUT_HOW, ${CACHE[*]}): $missing committed rows missing of $((last * 4)) (seed $SEED)"
	VERIFY_LINE="sqlite $jm: integrity_check ok, $rows rows, all $((last * 4)) committed rows present"
	BYTES=$((BYTES + $(stat -c %s "$db")))
	fs_end
}

IFS=, read -ra mode_list <<<"$MODES"
BYTES=0 LOSSES=0 DROPPED=0 CUTS_LOSING=0
declare -A count
start=$(date +%s)
log "seed $SEED, $CYCLES cycles, modes $MODES, then $IGNORE cycles with cache.flush=ignore"
total=$((CYCLES + IGNORE))
for ((cycle = 1; cycle <= total; cycle++)); do
	if [ "$cycle" -gt "$CYCLES" ]; then
		mode=ignore
	else
		mode=${mode_list[$(((cycle - 1) % ${#mode_list[@]}))]}
	fi
	t0=$(date +%s.%N)
	case $mode in
	disk) disk_cycle command ;;
	armed) disk_cycle armed ;;
	poweron) disk_cycle poweron ;;
	ignore) disk_cycle command ignore ;;
	ext4) fs_cycle ext4 ;;
	xfs) fs_cycle xfs ;;
	sqlite) sqlite_cycle ;;
	*) fail "unknown mode '$mode'" ;;
	esac
	count[$mode]=$((${count[$mode]:-0} + 1))
	secs=$(awk -v s="$t0" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
	log "cycle $cycle/$total $mode $(date +%T) ${secs}s cut: $CUT_HOW; ${CACHE[*]}"
	log "    ${WRITER_LINE#crashtool write: }"
	log "    ${VERIFY_LINE#crashtool verify: }"
done
summary=""
for m in disk armed poweron ext4 xfs sqlite ignore; do summary="$summary $m=${count[$m]:-0}"; done
log "$total cycles in $(($(date +%s) - start)) s, 0 failures, $BYTES bytes verified;" \
	"$CUTS_LOSING of $CYCLES honoured cuts dropped unflushed data ($DROPPED bytes);" \
	"$LOSSES lost sectors found with cache.flush=ignore, seed $SEED"
echo "powercut: cycles=$total$summary bytes_verified=$BYTES cuts_dropping=$CUTS_LOSING" \
	"dropped_bytes=$DROPPED ignore_lost_sectors=$LOSSES failures=0 seed=$SEED"
