#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: plugdisk side by side with the raw image, a minimal FUSE disk and nbdfuse+nbdkit,
# then plugdisk's own figures (rate accuracy, merge gain, plug cost, CPU and memory).
# Usage: bench.sh [--quick]. Needs root. Tables go to stdout and to $RESULTS (Markdown).
#
# Environment: PLUGDISK, REF_FUSE, CORE_BENCH (binaries), RESULTS (Markdown output),
# BENCH_TARGETS (default "raw ref nbd pd pdnbd pdu"; pd is plugdisk on the classic /dev/fuse
# transport, pdu the same on FUSE over io_uring, pdnbd plugdisk's NBD backend over the same
# nbdkit file server as nbdfuse's), BENCH_SECTIONS (default "compare accuracy nbdrate
# merge plug cpu stats fidelity core"), BENCH_PHASES (the comparison's, default "dd fio ext4").
# BENCH_ROUNDS, BENCH_REPS and BENCH_RUNTIME override the comparison's rounds (dd runs three
# times as many), the other sections' repetitions and the seconds per timed run.
# BENCH_HP: libfuse's example/passthrough_hp from a libfuse with FUSE over io_uring (3.18 and
# later; built apart, never by this script), for the optional hp target: that daemon on a
# directory holding the image, --nopassthrough --nosplice --nocache -o io_uring. Its
# libfuse3.so comes from BENCH_HP_LIBDIR, else from LD_LIBRARY_PATH. Set, hp joins the default
# targets; unset, an hp target is left out with a note.
# FIDELITY_PROFILES: the profiles the fidelity section measures (default all; with --quick,
# hdd-7200 ebs-gp2 sd-a1).

set -u
export LC_ALL=C

QUICK=0
for a in "$@"; do
	case $a in
	--quick) QUICK=1 ;;
	-h | --help) sed -n '3,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "bench.sh: unknown argument '$a'" >&2; exit 2 ;;
	esac
done

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${PLUGDISK:=$TOP/build/plugdisk}"
: "${REF_FUSE:=$TOP/build/tests/bench/ref_fuse}"
: "${CORE_BENCH:=$TOP/build/tests/bench/core_bench}"
: "${RESULTS:=$TOP/build/bench-results.md}"
: "${BENCH_HP:=}"
: "${BENCH_HP_LIBDIR:=${LD_LIBRARY_PATH:-}}"
if [ -z "${BENCH_TARGETS:-}" ]; then
	BENCH_TARGETS="raw ref nbd pd pdnbd pdu"
	[ -n "$BENCH_HP" ] && BENCH_TARGETS+=" hp"
fi
: "${BENCH_SECTIONS:=compare accuracy nbdrate merge plug cpu stats fidelity core}"
: "${BENCH_PHASES:=dd fio ext4}"

# Seconds per timed run: the comparison (CMP_RT), the accuracy windows (ACC_RT), the device
# profiles (FID_RT) and the rest (MISC_RT). RT is the one in force; each section sets it. RAMP
# is the accuracy windows' ramp (a bucket starts full); FIO_RAMP that of the other fio runs,
# none in a quick run, which has to stay under 3 minutes.
# A quick run checks one rate of each kind (ACC_BW, ACC_IOPS) and, unless FIDELITY_PROFILES
# says otherwise, the profiles whose models do most (FID_DEFAULT).
if [ $QUICK = 1 ]; then
	ROUNDS=1 DD_PASSES=1 REPS=1 CMP_RT=2 ACC_RT=2 MISC_RT=1 FID_RT=1 RAMP=1 FIO_RAMP=0
	ACC_BW=20M ACC_IOPS=1000 FID_DEFAULT="hdd-7200 ebs-gp2 sd-a1"
else
	ROUNDS=9 DD_PASSES=3 REPS=5 CMP_RT=4 ACC_RT=10 MISC_RT=10 FID_RT=10 RAMP=1 FIO_RAMP=1
	ACC_BW="1M 20M 200M" ACC_IOPS="100 1000 10000" FID_DEFAULT=
fi
ROUNDS=${BENCH_ROUNDS:-$ROUNDS}
# A dd round is short and its figure swings most (a pass runs at about 400 or about 1500 MB/s,
# through every FUSE disk alike), so dd runs three times the rounds.
DD_ROUNDS=$ROUNDS
[ $QUICK = 1 ] || DD_ROUNDS=$((ROUNDS * 3))
REPS=${BENCH_REPS:-$REPS}
if [ -n "${BENCH_RUNTIME:-}" ]; then
	CMP_RT=$BENCH_RUNTIME ACC_RT=$BENCH_RUNTIME MISC_RT=$BENCH_RUNTIME FID_RT=$BENCH_RUNTIME
fi
RT=$CMP_RT
# A quick run's images are half the size: writing six of them in full is part of its time.
SIZE_MB=512
[ $QUICK = 1 ] && SIZE_MB=256
SIZE=${SIZE_MB}M

die() { echo "bench: $*" >&2; exit 1; }
say() { printf '[%s] %s\n' "$(date +%T)" "$*"; }

[ "$(id -u)" = 0 ] || die "needs root (loop devices, mounts, drop_caches)"
for c in fio jq losetup mkfs.ext4 fusermount3 nbdkit nbdfuse dd awk timeout; do
	command -v "$c" >/dev/null || die "$c is not installed (run 'make deps')"
done
[ -c /dev/fuse ] || die "/dev/fuse is missing"
[ -e /dev/loop-control ] || die "loop devices are missing"
# The pdu target (mount.io_uring = on) sets the kernel's enable_uring; cleanup puts it back.
URING_PARAM=/sys/module/fuse/parameters/enable_uring
URING_PARAM0=$(cat "$URING_PARAM" 2>/dev/null)
# plugdisk sets its connection's background limit through fusectl (mount.max_background), as
# on a machine whose systemd mounted it at boot; mounted here when it is not, undone at cleanup.
FUSECTL=/sys/fs/fuse/connections FUSECTL_MOUNTED=0

# ---- Scratch space and cleanup -------------------------------------------------------------
# Everything lives under $W: a private tmpfs ($W/shm) holds the image, so that the backing
# store is never the limit. Cleanup unmounts in reverse order, detaches loop devices and ends
# the daemons this script started, by PID.
W=$(mktemp -d /tmp/plugdisk-bench.XXXXXX) || die "mktemp failed"
SHM=$W/shm MNT=$W/mnt IMG=$W/shm/disk.img
mkdir -p "$SHM" "$MNT"
LOOPS=() PIDS=() FUSE_MNTS=() FS_MNTS=()

cleanup() {
	local rc=$? i p
	set +e
	for ((i = ${#FS_MNTS[@]} - 1; i >= 0; i--)); do
		mountpoint -q "${FS_MNTS[i]}" && { umount "${FS_MNTS[i]}" || umount -l "${FS_MNTS[i]}"; }
	done
	for p in "${LOOPS[@]}"; do losetup -d "$p" 2>/dev/null; done
	for ((i = ${#FUSE_MNTS[@]} - 1; i >= 0; i--)); do
		mountpoint -q "${FUSE_MNTS[i]}" && { fusermount3 -u "${FUSE_MNTS[i]}" ||
			fusermount3 -u -z "${FUSE_MNTS[i]}"; }
	done
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do
		for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$p" 2>/dev/null
	done
	mountpoint -q "$SHM" && umount "$SHM"
	[ "$FUSECTL_MOUNTED" = 0 ] || umount "$FUSECTL"
	[ -z "$URING_PARAM0" ] || [ "$(cat "$URING_PARAM")" = "$URING_PARAM0" ] ||
		echo "$URING_PARAM0" >"$URING_PARAM"
	if [ "$rc" = 0 ]; then rm -rf "$W"; else echo "bench: logs kept in $W" >&2; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Room for every target's image (written in full) and two more for the other phases.
case $SIZE in
*M) shm_mb=$(( ($(wc -w <<<"$BENCH_TARGETS") + 2) * ${SIZE%M} + 256 )) ;;
*) shm_mb=8192 ;;
esac
mount -t tmpfs -o size=${shm_mb}M,mode=0700 plugdisk-bench "$SHM" || die "cannot mount tmpfs on $SHM"
if ! mountpoint -q "$FUSECTL"; then
	mount -t fusectl none "$FUSECTL" || die "cannot mount fusectl on $FUSECTL"
	FUSECTL_MOUNTED=1
fi

# ---- Small helpers ---------------------------------------------------------------------------

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# forget_word ARRAY WORD: drop WORD from the named cleanup list.
forget_word() {
	local -n list=$1
	local e keep=()
	for e in "${list[@]}"; do [ "$e" = "$2" ] || keep+=("$e"); done
	list=("${keep[@]}")
}
# Drop a finished PID from the cleanup list.
forget_pid() { forget_word PIDS "$1"; }

# dd_mbps DD-ARGS...: run dd, print decimal MB/s computed from its byte count and seconds.
dd_mbps() {
	local out
	out=$(timeout -k 5 300 dd "$@" 2>&1) || { echo "$out" | tail -2 >&2; echo NA; return 1; }
	echo "$out" | awk '/ copied, / { for (i = 1; i <= NF; i++) if ($i == "s,") s = $(i - 1);
		printf "%.1f\n", $1 / s / 1e6 }'
}

# run_fio JSON FIO-ARGS...: run one fio job for $RT seconds with JSON output in JSON.
run_fio() {
	local json=$1; shift
	timeout -k 10 $((RT * 3 + 120)) fio --output-format=json --output="$json" --runtime="$RT" "$@" \
		>>"$W/fio.log" 2>&1 || { echo "bench: fio failed: $*" >&2; tail -5 "$W/fio.log" >&2; return 1; }
}
# jqn JSON EXPR: one number from a fio JSON file.
jqn() { jq -r "$2" "$1" 2>/dev/null || echo NA; }

# A fio job against a block device or the disk file: O_DIRECT, libaio, time based.
FIO_DIRECT=(--name=bench --ioengine=libaio --direct=1 --time_based --ramp_time="$FIO_RAMP" --fallocate=none --norandommap --randrepeat=0 --group_reporting)

# loop_attach LOSETUP-ARGS...: attach a loop device, set LOOPDEV (no subshell: the cleanup
# list must be updated in this shell).
loop_attach() {
	LOOPDEV=$(losetup -f --show "$@") || return 1
	LOOPS+=("$LOOPDEV")
}
# loop_detach DEV: detach and wait (10 s) until the device has really let go of its file: a
# detach is deferred while someone (udev probing after an umount) holds the device open, and
# until then the FUSE mount under it cannot be unmounted.
loop_detach() {
	local i sys
	sys=/sys/block/$(basename "$1")/loop/backing_file
	losetup -d "$1"
	for i in $(seq 100); do [ -e "$sys" ] || break; sleep 0.1; done
	[ -e "$sys" ] && echo "bench: $1 still attached after 10 s" >&2
	forget_word LOOPS "$1"
}
loop_dio() { cat "/sys/block/$(basename "$1")/loop/dio" 2>/dev/null || echo '?'; }

# wait_file PATH PID: wait (10 s) until PATH exists on a live mount; fail if PID died.
wait_file() {
	local i
	for i in $(seq 200); do
		[ -e "$1" ] && mountpoint -q "$MNT" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

fresh_image() { rm -f "$IMG"; fallocate -l "$SIZE" "$IMG"; }

# ---- Targets ---------------------------------------------------------------------------------
# start_target NAME [plugdisk args]: sets DISK (the file to benchmark) and DPID (the daemon
# whose CPU and memory are measured; empty for raw). stop_target undoes it.
TARGET=

# start_nbdkit [nbdkit args: filters, plugin, params]: start nbdkit on the Unix socket
# $MNT.sock, set NBDKIT_PID and wait (10 s) until the socket is there.
start_nbdkit() {
	local sock=$MNT.sock i
	rm -f "$sock"
	nbdkit -f -U "$sock" "$@" >>"$W/nbdkit.log" 2>&1 &
	NBDKIT_PID=$!
	PIDS+=("$NBDKIT_PID")
	for i in $(seq 200); do [ -S "$sock" ] && return 0; sleep 0.05; done
	echo "bench: nbdkit did not start" >&2
	return 1
}

start_target() {
	TARGET=$1; shift
	DPID='' NBDKIT_PID=''
	case $TARGET in
	raw)
		DISK=$IMG
		;;
	ref)
		"$REF_FUSE" "$IMG" "$MNT" -f >>"$W/ref.log" 2>&1 &
		DPID=$!
		;;
	nbd | nbdrate)
		local filter=()
		[ "$TARGET" = nbdrate ] && filter=(--filter=rate)
		start_nbdkit "${filter[@]}" file "$IMG" "$@" || return 1
		nbdfuse "$MNT/disk" --unix "$MNT.sock" >>"$W/nbdfuse.log" 2>&1 &
		DPID=$!
		;;
	pd | pdu)
		[ -x "$PLUGDISK" ] || { echo "bench: $PLUGDISK is not built" >&2; return 1; }
		local transport=off
		[ "$TARGET" = pdu ] && transport=on
		"$PLUGDISK" -f -i "$IMG" -s "$SIZE" --set mount.io_uring=$transport "$@" "$MNT" \
			>>"$W/plugdisk.log" 2>&1 &
		DPID=$!
		;;
	pdnbd)
		# plugdisk's NBD backend over nbdkit's file plugin on a Unix socket: the server
		# nbdfuse has in the nbd target. On FUSE over io_uring, like pdu: the fast path
		# the service's unit gives.
		[ -x "$PLUGDISK" ] || { echo "bench: $PLUGDISK is not built" >&2; return 1; }
		start_nbdkit file "$IMG" || return 1
		"$PLUGDISK" -f -i "nbd+unix:///?socket=$MNT.sock" --set mount.io_uring=on "$@" "$MNT" \
			>>"$W/plugdisk.log" 2>&1 &
		DPID=$!
		;;
	hp)
		# libfuse's own FUSE-over-io_uring daemon, as a yardstick for the transport: the
		# image is the file "disk" of the directory it passes through.
		mkdir -p "$IMG.d" && ln -f "$IMG" "$IMG.d/disk" || return 1
		# It falls back to /dev/fuse quietly when the kernel's switch is off.
		echo 1 >"$URING_PARAM" || return 1
		LD_LIBRARY_PATH=$BENCH_HP_LIBDIR "$BENCH_HP" --foreground --nopassthrough --nosplice \
			--nocache -o io_uring "$IMG.d" "$MNT" >>"$W/hp.log" 2>&1 &
		DPID=$!
		;;
	*) die "unknown target $TARGET" ;;
	esac
	if [ "$TARGET" != raw ]; then
		PIDS+=("$DPID")
		FUSE_MNTS+=("$MNT")
		DISK=$MNT/disk
		wait_file "$DISK" "$DPID" || { echo "bench: $TARGET did not mount" >&2; stop_target; return 1; }
	fi
	return 0
}

# wait_exit PID SECS: wait for a child to exit; SIGKILL it after SECS. Returns its status.
wait_exit() {
	local i
	for i in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$1" 2>/dev/null; then
		echo "bench: PID $1 still running after $2 s; killing it" >&2
		kill -KILL "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
}

# fuse_unmount: unmount $MNT, retrying while it is busy (10 s), then lazily.
fuse_unmount() {
	local i
	for i in $(seq 50); do
		mountpoint -q "$MNT" || return 0
		fusermount3 -u "$MNT" 2>/dev/null && return 0
		sleep 0.2
	done
	echo "bench: $MNT still busy after 10 s; unmounting lazily" >&2
	fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT"
}

stop_target() {
	local rc
	case $TARGET in
	raw) ;;
	pd | pdu | pdnbd)
		kill -TERM "$DPID" 2>/dev/null
		wait_exit "$DPID" 60
		rc=$?
		[ "$rc" = 0 ] || echo "bench: plugdisk exited with status $rc (see $W/plugdisk.log)" >&2
		;;
	*)
		fuse_unmount
		wait_exit "$DPID" 30
		;;
	esac
	# The NBD server last: the client above it (plugdisk, nbdfuse) flushes as it goes.
	if [ -n "$NBDKIT_PID" ]; then
		kill -TERM "$NBDKIT_PID" 2>/dev/null
		wait_exit "$NBDKIT_PID" 30
		forget_pid "$NBDKIT_PID"
	fi
	if [ -n "$DPID" ]; then forget_pid "$DPID"; fi
	fuse_unmount
	forget_word FUSE_MNTS "$MNT"
	TARGET=
}

# proc_cpu_ticks PID: utime + stime in clock ticks.
proc_cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
proc_hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

# ---- Results store and tables ----------------------------------------------------------------
DATA=$W/results.tsv
: >"$DATA"
put() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$DATA"; }

# median_of: the median of the numbers on stdin, one per line (NA when none).
median_of() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print "NA"
		else if (NR % 2) print v[(NR + 1) / 2]
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# median TARGET WORKLOAD: the median of the recorded values (NA when none).
median() {
	awk -F'\t' -v t="$1" -v w="$2" '$1 == t && $2 == w && $3 != "NA" { print $3 }' "$DATA" |
		median_of
}

# fmt VALUE UNIT: human figure. IOPS and ops/s get a k suffix.
fmt() {
	awk -v v="$1" -v u="$2" 'BEGIN {
		if (v == "NA") { print "n/a"; exit }
		if (u == "iops" || u == "ops") {
			if (v >= 10000) printf "%.0fk\n", v / 1000
			else if (v >= 1000) printf "%.1fk\n", v / 1000
			else printf "%.0f\n", v
		} else if (v >= 100) printf "%.0f\n", v; else printf "%.1f\n", v }'
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "NA" || b == "NA" || b == 0) print "n/a"; else printf "%.2f×\n", a / b }'
}

# round_ratios TARGET REF WORKLOAD: TARGET's figure divided by REF's from the same round, one
# line per round. The two ran seconds apart, so a machine that is slower for a while (a shared
# 2-core VM) moves both and the ratio keeps its meaning.
round_ratios() {
	awk -F'\t' -v t="$1" -v r="$2" -v w="$3" '
		$2 != w { next }
		$1 == t { a[++na] = $3 }
		$1 == r { b[++nb] = $3 }
		END {
			for (i = 1; i <= na && i <= nb; i++)
				if (a[i] != "NA" && b[i] != "NA" && b[i] > 0) print a[i] / b[i]
		}' "$DATA"
}
# median_ratio TARGET REF WORKLOAD: the median of the per-round ratios.
median_ratio() {
	round_ratios "$@" | median_of | awk '{ if ($1 == "NA") print "n/a"; else printf "%.2f×\n", $1 }'
}
# quartile_ratios TARGET REF WORKLOAD: the middle half of the per-round ratios, "Q1–Q3" (the
# quarter of the rounds below and the quarter above left out), or n/a below 4 rounds.
quartile_ratios() {
	round_ratios "$@" | sort -g | awk '{ v[NR] = $1 } END {
		if (NR < 4) { print "n/a"; exit }
		k = int(NR / 4) + 1
		printf "%.2f–%.2f\n", v[k], v[NR + 1 - k] }'
}

# md LINE...: print to stdout and append to the results file.
md() { printf '%s\n' "$@" | tee -a "$RESULTS"; }

# ---- Section: the comparison -----------------------------------------------------------------

WL=(ddw ddr rw4k rr4k rr4k1 sw4k ext4)
WL_UNIT=(mbs mbs iops iops iops mbs ops)
WL_HEAD=("dd seq write MB/s" "dd seq read MB/s" "randwrite 4k IOPS" "randread 4k IOPS"
	"randread 4k QD1 IOPS" "seq write 4k MB/s" "ext4 small files ops/s")
declare -A TNAME=([raw]="raw tmpfs file" [ref]="minimal FUSE reference"
	[nbd]="nbdfuse + nbdkit file" [pd]="plugdisk (defaults, classic /dev/fuse)"
	[pdu]="plugdisk (defaults, FUSE over io_uring)"
	[pdnbd]="plugdisk NBD backend (io_uring) + nbdkit file"
	[hp]="libfuse passthrough_hp (FUSE over io_uring)")
declare -A TSHORT=([raw]="raw" [ref]="reference" [nbd]="nbdfuse" [pd]="plugdisk"
	[pdu]="plugdisk io_uring" [pdnbd]="plugdisk NBD" [hp]="passthrough_hp")

# Every comparison target stays mounted for the whole comparison, each on its own image and
# mountpoint. The comparison runs in three phases (dd, fio through a loop device, ext4); each
# phase runs $ROUNDS rounds, and a round runs one workload on every target back to back, in an
# order that rotates between rounds. A target and its reference are so measured seconds apart,
# neither is always first, and a round's ratio is not skewed by the machine being slower for a
# while (a shared 2-core VM).
declare -A C_DISK=() C_DPID=() C_NBDPID=() C_DEV=()
declare -A WL_UNIT_OF=()
for i in "${!WL[@]}"; do WL_UNIT_OF[${WL[i]}]=${WL_UNIT[i]}; done

# cmp_up: start every target on an image of its own, written in full first, so that every
# round finds every image in the same state (a first write into a fresh tmpfs page costs more
# than an overwrite). A target that fails is left out (its figures are NA). The target state
# that start_target sets is local here: the other sections keep $MNT and $IMG.
cmp_up() {
	local t MNT IMG TARGET DISK DPID NBDKIT_PID
	for t in $BENCH_TARGETS; do
		if [ "$t" = hp ] && ! [ -x "$BENCH_HP" ]; then
			say "  hp left out: BENCH_HP names no passthrough_hp (see tests/bench/bench.sh)"
			continue
		fi
		MNT=$W/mnt-$t IMG=$SHM/cmp-$t.img
		mkdir -p "$MNT"
		rm -f "$IMG"
		dd if=/dev/zero of="$IMG" bs=1M count=$SIZE_MB status=none || die "cannot write $IMG"
		start_target "$t" || { say "  $t did not start; its figures are n/a"; continue; }
		C_DISK[$t]=$DISK C_DPID[$t]=$DPID C_NBDPID[$t]=$NBDKIT_PID
	done
}

cmp_down() {
	local t MNT TARGET DPID NBDKIT_PID
	for t in "${!C_DISK[@]}"; do
		TARGET=$t MNT=$W/mnt-$t DPID=${C_DPID[$t]} NBDKIT_PID=${C_NBDPID[$t]}
		stop_target
		rm -rf "$SHM/cmp-$t.img" "$SHM/cmp-$t.img.d"
	done
	C_DISK=() C_DPID=() C_NBDPID=()
}

# rotate N WORD...: the words, starting at the N-th (0-based, modulo their number).
rotate() {
	local n=$1
	shift
	local a=("$@") i
	for i in "${!a[@]}"; do printf '%s ' "${a[(i + n) % ${#a[@]}]}"; done
}

# cmp_round ROUND WORKLOAD LABEL FN [ARGS...]: one round of WORKLOAD: `FN TARGET ARGS...` on
# every target, in an order rotated by the round number. FN prints the figure; a target that
# is not up or an FN that fails gets NA. Logs the round on one line.
cmp_round() {
	local rep=$1 wl=$2 line="  round $1 $3:" fn=$4 t v
	shift 4
	# shellcheck disable=SC2046,SC2086 # the lists are split on purpose
	for t in $(rotate $((rep - 1)) $BENCH_TARGETS); do
		v=NA
		if [ -n "${C_DISK[$t]:-}" ]; then v=$("$fn" "$t" "$@") || v=NA; fi
		put "$t" "$wl" "$v"
		line+=" $t $(fmt "$v" "${WL_UNIT_OF[$wl]}")"
	done
	say "$line"
}

# cmp_loops: a loop device with direct I/O over every live target (C_DEV).
cmp_loops() {
	local t
	C_DEV=()
	for t in "${!C_DISK[@]}"; do
		loop_attach --direct-io=on "${C_DISK[$t]}" || continue
		C_DEV[$t]=$LOOPDEV
		[ "$(loop_dio "$LOOPDEV")" = 1 ] || say "  warning: $LOOPDEV over $t has no direct I/O"
	done
}
cmp_unloop() {
	local t
	for t in "${!C_DEV[@]}"; do loop_detach "${C_DEV[$t]}"; done
	C_DEV=()
}

# dd_passes DD-ARGS...: run dd $DD_PASSES times, caches dropped before each; print the
# rate over all of them (total bytes over total time), or NA if any failed. A single dd of
# the disk takes a fraction of a second here, and lands in a slow spell often enough to
# skew a median of single runs.
dd_passes() {
	local i v all=
	for i in $(seq "$DD_PASSES"); do
		drop_caches
		v=$(dd_mbps "$@")
		[ "$v" = NA ] && { echo NA; return; }
		all+=" $v"
	done
	echo "$all" | awk '{ for (i = 1; i <= NF; i++) s += 1 / $i; printf "%.1f\n", NF / s }'
}
dd_write() { dd_passes if=/dev/zero of="${C_DISK[$1]}" bs=1M count=$SIZE_MB conv=fdatasync,notrunc; }
dd_read() { dd_passes if="${C_DISK[$1]}" of=/dev/null bs=1M count=$SIZE_MB; }

phase_dd() {
	local rep
	for rep in $(seq "$DD_ROUNDS"); do
		cmp_round "$rep" ddw "dd write ($DD_PASSES pass(es))" dd_write
		cmp_round "$rep" ddr "dd read ($DD_PASSES pass(es))" dd_read
	done
}

# The loop-device workloads: fio's --rw, its queue depth and the JSON expression of the figure.
# At QD1 a request's round trip is all there is: the receive threads' wakeups show.
declare -A FIO_RW=([rw4k]=randwrite [rr4k]=randread [rr4k1]=randread [sw4k]=write)
declare -A FIO_QD=([rw4k]=32 [rr4k]=32 [rr4k1]=1 [sw4k]=32)
declare -A FIO_JQ=([rw4k]='.jobs[0].write.iops' [rr4k]='.jobs[0].read.iops'
	[rr4k1]='.jobs[0].read.iops' [sw4k]='.jobs[0].write.bw_bytes / 1e6')

# fio_loop TARGET WORKLOAD: the workload on the target's loop device. Also records fio's own
# CPU per request (user and system time over the job's runtime, over its requests) as
# WORKLOAD_cpu: through a loop device it shows the device's regime (doc/benchmarks.md: it
# rises when the loop worker idles and fio must wake it for each request).
fio_loop() {
	local j=$W/fio.json
	[ -n "${C_DEV[$1]:-}" ] &&
		run_fio "$j" "${FIO_DIRECT[@]}" --filename="${C_DEV[$1]}" --rw="${FIO_RW[$2]}" \
			--bs=4k --iodepth="${FIO_QD[$2]}" || return 1
	put "$1" "$2_cpu" "$(jqn "$j" '(.jobs[0].read.total_ios + .jobs[0].write.total_ios) as $n |
		if $n > 0 then (.jobs[0].usr_cpu + .jobs[0].sys_cpu) * .jobs[0].job_runtime * 10 / $n
		else "NA" end')"
	jqn "$j" "${FIO_JQ[$2]}"
}

phase_fio() {
	local rep t wl
	cmp_loops
	for t in "${!C_DEV[@]}"; do
		echo 2 >"/sys/block/$(basename "${C_DEV[$t]}")/queue/nomerges" 2>/dev/null || true
	done
	for rep in $(seq "$ROUNDS"); do
		for wl in rw4k rr4k rr4k1 sw4k; do
			cmp_round "$rep" "$wl" "${FIO_RW[$wl]} 4k QD${FIO_QD[$wl]}" fio_loop "$wl"
		done
	done
	cmp_unloop
}

# fio_ext4 TARGET: many small files on the target's ext4, random 4 KiB reads and writes, fsync
# every 8 writes. The figure is reads + writes per second. Every filesystem is synced first, so
# the dirty pages a run leaves behind are written back before the next target starts, not
# during its run.
fio_ext4() {
	local j=$W/fio.json dir=$W/ext4-$1
	mountpoint -q "$dir" && sync &&
		run_fio "$j" --name=smallfiles --directory="$dir" --numjobs=4 --nrfiles=256 \
			--filesize=4k-64k --bs=4k --rw=randrw --rwmixread=50 --fsync=8 --ioengine=psync \
			--file_service_type=random --openfiles=32 --time_based --ramp_time="$FIO_RAMP" \
			--group_reporting &&
		jqn "$j" '.jobs[0].read.iops + .jobs[0].write.iops'
}

# ext4 on a loop device over each disk, one filesystem per target for all rounds.
phase_ext4() {
	local rep t dir
	cmp_loops
	for t in "${!C_DEV[@]}"; do
		dir=$W/ext4-$t
		mkdir -p "$dir"
		mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "${C_DEV[$t]}" &&
			mount "${C_DEV[$t]}" "$dir" && FS_MNTS+=("$dir")
	done
	for rep in $(seq "$ROUNDS"); do cmp_round "$rep" ext4 "ext4 small files" fio_ext4; done
	for t in "${!C_DEV[@]}"; do
		dir=$W/ext4-$t
		mountpoint -q "$dir" && umount "$dir"
		forget_word FS_MNTS "$dir"
	done
	cmp_unloop
}

section_compare() {
	local t i row ref phase
	RT=$CMP_RT
	say "comparison: $ROUNDS round(s), ${RT} s per fio run, images of $SIZE on tmpfs"
	cmp_up
	for phase in $BENCH_PHASES; do
		case $phase in dd | fio | ext4) "phase_$phase" ;; *) die "unknown phase $phase" ;; esac
	done
	cmp_down
	md "" "### Throughput, median of $ROUNDS round(s) ($DD_ROUNDS for dd)" ""
	row="| |"; for i in "${!WL[@]}"; do row+=" ${WL_HEAD[i]} |"; done; md "$row"
	row="|---|"; for i in "${!WL[@]}"; do row+="---|"; done; md "$row"
	for t in $BENCH_TARGETS; do
		row="| ${TNAME[$t]} |"
		for i in "${!WL[@]}"; do row+=" $(fmt "$(median "$t" "${WL[i]}")" "${WL_UNIT[i]}") |"; done
		md "$row"
	done
	# The reference ÷ nbdfuse row shows how far the FUSE round trip alone gets past nbdfuse.
	for t in $BENCH_TARGETS; do
		[ "$t" = nbd ] && continue
		for ref in ref nbd; do
			[ "$t" = ref ] && [ "$ref" = ref ] && continue
			case " $BENCH_TARGETS " in *" $ref "*) ;; *) continue ;; esac
			row="| ${TSHORT[$t]} ÷ ${TSHORT[$ref]} |"
			for i in "${!WL[@]}"; do
				row+=" $(median_ratio "$t" "$ref" "${WL[i]}") |"
			done
			md "$row"
		done
	done
	# The NBD backend against the file backend: what the hop through nbdkit costs.
	# Both on FUSE over io_uring: pdu, else the classic pd.
	local fileb=pdu
	[[ " $BENCH_TARGETS " == *" pdu "* ]] || fileb=pd
	if [[ " $BENCH_TARGETS " == *" $fileb "* && " $BENCH_TARGETS " == *" pdnbd "* ]]; then
		row="| ${TSHORT[pdnbd]} ÷ ${TSHORT[$fileb]} (file backend): the NBD hop |"
		for i in "${!WL[@]}"; do row+=" $(median_ratio pdnbd $fileb "${WL[i]}") |"; done
		md "$row"
	fi
	# The io_uring transport against the classic one and against the raw file's limit.
	if [[ " $BENCH_TARGETS " == *" pdu "* ]]; then
		for ref in pd raw; do
			case " $BENCH_TARGETS " in *" $ref "*) ;; *) continue ;; esac
			row="| ${TSHORT[pdu]} ÷ ${TSHORT[$ref]} |"
			for i in "${!WL[@]}"; do row+=" $(median_ratio pdu "$ref" "${WL[i]}") |"; done
			md "$row"
		done
	fi
	# plugdisk on either transport against libfuse's own io_uring daemon.
	if [[ " $BENCH_TARGETS " == *" hp "* ]]; then
		for t in pdu pd; do
			case " $BENCH_TARGETS " in *" $t "*) ;; *) continue ;; esac
			row="| ${TSHORT[$t]} ÷ ${TSHORT[hp]} |"
			for i in "${!WL[@]}"; do row+=" $(median_ratio "$t" hp "${WL[i]}") |"; done
			md "$row"
			if ((ROUNDS >= 4)); then
				row="| ${TSHORT[$t]} ÷ ${TSHORT[hp]}, middle half of rounds |"
				for i in "${!WL[@]}"; do row+=" $(quartile_ratios "$t" hp "${WL[i]}") |"; done
				md "$row"
			fi
		done
	fi
	# How much the rounds agree: a median ratio is only as good as the spread around it (not
	# shown under 4 rounds, where there is no middle half to show).
	for t in pd pdu; do
		if [[ " $BENCH_TARGETS " == *" $t "* && " $BENCH_TARGETS " == *" ref "* ]] && ((ROUNDS >= 4)); then
			row="| ${TSHORT[$t]} ÷ ${TSHORT[ref]}, middle half of rounds |"
			for i in "${!WL[@]}"; do row+=" $(quartile_ratios "$t" ref "${WL[i]}") |"; done
			md "$row"
		fi
	done
	md "" "dd: 1 MiB blocks over the whole ${SIZE_MB} MiB disk, caches dropped before each;" \
		"write ends with fdatasync; a round's figure is the rate over $DD_PASSES pass(es)." \
		"fio: through \`losetup --direct-io=on\` (loop nomerges=2), libaio, iodepth 32 (1 for the QD1 column), ${RT} s." \
		"ext4: mkfs.ext4 on the same kind of loop device, fio with" \
		"4 jobs × 256 files of 4-64 KiB, random 4 KiB reads and writes, fsync every 8 writes" \
		"(one filesystem per target for all rounds). All targets stay mounted side by side, each" \
		"on its own image; a round runs one workload on each in turn, in an order that rotates." \
		"Figures are medians over the rounds; a ratio is the median of the per-round ratios" \
		"(both sides measured seconds apart in the same round); the middle half of the rounds" \
		"is the range of those ratios with the lowest and highest quarter left out."
	# fio's own CPU per request through the loop device: the device's regime.
	[[ " $BENCH_PHASES " == *" fio "* ]] || return 0
	local wl
	md "" "### fio's CPU per request through the loop device, µs (median of the rounds)" ""
	row="|"
	for wl in rw4k rr4k rr4k1 sw4k; do row+=" ${FIO_RW[$wl]} 4k QD${FIO_QD[$wl]} |"; done
	md "| $row" "|---|---|---|---|---|"
	for t in $BENCH_TARGETS; do
		row="| ${TNAME[$t]} |"
		for wl in rw4k rr4k rr4k1 sw4k; do
			row+=" $(fmt "$(median "$t" "${wl}_cpu")" us) |"
		done
		md "$row"
	done
	md "" "Through a loop device at queue depth 32, fio's figure rises by about 2 µs when the" \
		"device's worker runs out of requests and fio has to wake it for each one it submits:" \
		"a target that answers faster than fio resubmits can be slower for it" \
		"(doc/benchmarks.md, \"the loop device's two regimes\")."
}

# ---- Section: rate accuracy (plugdisk only) --------------------------------------------------

# mib BYTES_PER_S: "12.345 MiB/s".
mib() { awk -v b="$1" 'BEGIN { if (b == "NA") print "n/a"; else printf "%.3f MiB/s\n", b / 1048576 }'; }
# iops VALUE: "1234.5 IOPS".
iops() { awk -v v="$1" 'BEGIN { if (v == "NA") print "n/a"; else printf "%.1f IOPS\n", v }'; }
# err_pct MEASURED EXPECTED
err_pct() { awk -v m="$1" -v e="$2" 'BEGIN { if (m == "NA") print "n/a"; else printf "%+.1f%%\n", (m - e) / e * 100 }'; }

# stats_sum NAMES...: the sum of the named counters in $MNT/stats.
stats_sum() {
	awk -v names=" $* " 'index(names, " " $1 " ") { s += $2 } END { printf "%.0f\n", s }' \
		"$MNT/stats"
}

# window_run COUNTER FIO-ARGS...: run fio on $DISK for RAMP + RT + 1 s and, from plugdisk's
# stats, measure COUNTER's rate over exactly the RT seconds after the ramp: the device's own
# view, free of fio's start and end effects. Sets WIN (per second, or NA) and leaves fio's
# JSON in $W/fio.json (fio's own figure covers its whole run).
window_run() {
	local counter=$1 j=$W/fio.json fpid c0 c1 t0 t1; shift
	WIN=NA
	timeout -k 10 $((RT * 3 + 120)) fio --output-format=json --output="$j" --name=bench \
		--ioengine=libaio --direct=1 --time_based --runtime=$((RAMP + RT + 1)) \
		--fallocate=none --norandommap --randrepeat=0 --group_reporting --filename="$DISK" \
		"$@" >>"$W/fio.log" 2>&1 &
	fpid=$!
	sleep "$RAMP"
	t0=$EPOCHREALTIME c0=$(stats_sum "$counter")
	sleep "$RT"
	t1=$EPOCHREALTIME c1=$(stats_sum "$counter")
	if wait "$fpid"; then
		WIN=$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" 'BEGIN { printf "%.3f\n", (b - a) / (e - s) }')
	else
		echo "bench: fio failed: $*" >&2
		return 1
	fi
}

# show_limits: log the limits plugdisk reports in force, so a run shows what it measured.
show_limits() {
	say "  plugdisk: $(awk '($1 == "queue_depth" || $1 ~ /^limit_/) && $2 != 0 { printf "%s=%s ", $1, $2 }' \
		"$MNT/stats")"
}

section_accuracy() {
	local j=$W/fio.json rate bs bytes f rows=()
	RT=$ACC_RT
	say "rate accuracy: ${RT} s windows after ${RAMP} s of ramp"
	fresh_image
	for rate in $ACC_BW; do
		case $rate in 1M) bytes=1048576 bs=4k ;; 20M) bytes=20971520 bs=64k ;;
			200M) bytes=209715200 bs=256k ;; esac
		WIN=NA f=NA
		if start_target pd --set controller.bandwidth=$rate; then
			show_limits
			window_run read_bytes --rw=randread --bs=$bs --iodepth=16 &&
				f=$(jqn "$j" '.jobs[0].read.bw_bytes')
			stop_target
		fi
		rows+=("| controller.bandwidth=$rate | $(mib "$bytes") | $(mib "$WIN") | $(err_pct "$WIN" "$bytes") | $(mib "$f") | $(err_pct "$f" "$bytes") |")
	done
	for rate in $ACC_IOPS; do
		WIN=NA f=NA
		if start_target pd --set controller.iops=$rate; then
			show_limits
			window_run read_ios --rw=randread --bs=4k --iodepth=32 &&
				f=$(jqn "$j" '.jobs[0].read.iops')
			stop_target
		fi
		rows+=("| controller.iops=$rate | $rate IOPS | $(iops "$WIN") | $(err_pct "$WIN" $rate) | $(iops "$f") | $(err_pct "$f" $rate) |")
	done
	WIN=NA f=NA
	if start_target pd --set controller.queue_depth=8 --set controller.latency_us=2000; then
		window_run read_ios --rw=randread --bs=4k --iodepth=32 &&
			f=$(jqn "$j" '.jobs[0].read.iops')
		stop_target
	fi
	rows+=("| Little's law: queue_depth=8, latency_us=2000, fio iodepth 32 | 4000 IOPS | $(iops "$WIN") | $(err_pct "$WIN" 4000) | $(iops "$f") | $(err_pct "$f" 4000) |")
	f=NA
	if start_target pd --set controller.latency_us=1000; then
		show_limits
		run_fio "$j" "${FIO_DIRECT[@]}" --filename="$DISK" --rw=randread --bs=4k --iodepth=1 &&
			f=$(jqn "$j" '.jobs[0].read.clat_ns.percentile["50.000000"] / 1000')
		stop_target
	fi
	rows+=("| controller.latency_us=1000, fio iodepth 1, clat p50 | 1000 µs | | | $f µs | $(err_pct "$f" 1000) |")
	md "" "### Rate accuracy (plugdisk; fio on the disk file, O_DIRECT, libaio)" ""
	md "| setting | configured | measured over ${RT} s (stats) | error | fio's figure | fio error |" \
		"|---|---|---|---|---|---|" "${rows[@]}"
	md "" "Targets: bandwidth and IOPS ±2%, Little's law ±3%, latency p50 within +10%." \
		"\"measured\" is the change of plugdisk's read_bytes or read_ios counter over a ${RT} s window" \
		"taken after ${RAMP} s of load; fio's figure is fio's own average over the same run (its" \
		"edges included). Bandwidth runs use random reads (4k, 64k, 256k blocks at iodepth 16) so" \
		"that the figure is the limiter's, not merging's; IOPS runs use 4k random reads at iodepth 32."
}

# ---- Section: nbdkit's rate filter through nbdfuse, against plugdisk, with dd ----------------

# nbdrate_dd: two dd writes back to back: the first, of WARM MiB, includes the initial burst;
# the second, of MB MiB, starts with the bucket empty and shows the steady rate. Sets D1, D2 (B/s).
nbdrate_dd() {
	D1=NA D2=NA
	drop_caches
	D1=$(dd_mbps if=/dev/zero of="$DISK" bs=1M count="$warm" conv=fdatasync,notrunc)
	D2=$(dd_mbps if=/dev/zero of="$DISK" bs=1M count="$mb" seek="$warm" conv=fdatasync,notrunc)
	D1=$(awk -v v="$D1" 'BEGIN { if (v == "NA") print v; else print v * 1e6 }')
	D2=$(awk -v v="$D2" 'BEGIN { if (v == "NA") print v; else print v * 1e6 }')
}

section_nbdrate() {
	local warm=30 mb=100 bytes=10485760 n1=NA n2=NA p1=NA p2=NA
	[ $QUICK = 1 ] && mb=30
	say "rate filter comparison: dd of $warm MiB then $mb MiB at 10 MiB/s"
	fresh_image
	# nbdkit's rate is in bits per second: 80M bits/s = 10 MiB/s.
	if start_target nbdrate rate=80M; then
		nbdrate_dd; n1=$D1 n2=$D2
		stop_target
	fi
	if start_target pd --set controller.bandwidth=10M; then
		nbdrate_dd; p1=$D1 p2=$D2
		stop_target
	fi
	md "" "### The same limit with dd: nbdkit rate filter against plugdisk (10 MiB/s)" ""
	md "| | first dd, $warm MiB (burst included) | error | then dd, $mb MiB (steady) | error |" \
		"|---|---|---|---|---|"
	md "| nbdkit --filter=rate rate=80M (bits/s) via nbdfuse | $(mib "$n1") | $(err_pct "$n1" $bytes) | $(mib "$n2") | $(err_pct "$n2" $bytes) |"
	md "| plugdisk controller.bandwidth=10M | $(mib "$p1") | $(err_pct "$p1" $bytes) | $(mib "$p2") | $(err_pct "$p2" $bytes) |"
	md "" "dd if=/dev/zero bs=1M conv=fdatasync,notrunc, caches dropped first. nbdkit's bucket" \
		"holds 2 s of rate (burstiness=2.0), plugdisk's controller.burst_ms (default 10 ms)."
}

# ---- Section: merge gain at controller.iops=1000 ---------------------------------------------

# merge_run [plugdisk args]: sets RUN_V to the IOPS of the merge workload (no subshell, so
# that the daemon and the loop device stay in this shell's cleanup lists).
merge_run() {
	local j=$W/fio.json
	RUN_V=NA
	if start_target pd --set controller.iops=1000 "$@"; then
		if loop_attach --direct-io=on "$DISK"; then
			# The loop device itself must not merge, so that what merges is plugdisk.
			echo 2 >"/sys/block/$(basename "$LOOPDEV")/queue/nomerges"
			run_fio "$j" "${FIO_DIRECT[@]}" --filename="$LOOPDEV" --rw=write --bs=4k \
				--iodepth=32 && RUN_V=$(jqn "$j" '.jobs[0].write.iops')
			loop_detach "$LOOPDEV"
		fi
		stop_target
	fi
}

section_merge() {
	local a b
	RT=$MISC_RT
	say "merge gain: sequential 4k direct writes, iodepth 32, controller.iops=1000"
	fresh_image
	merge_run; a=$RUN_V
	merge_run --set queue.nomerges=2; b=$RUN_V
	md "" "### Merge gain at controller.iops=1000" ""
	md "| queue.nomerges | seq write 4k IOPS | MB/s |" "|---|---|---|"
	md "| 0 (merging) | $(fmt "$a" iops) | $(awk -v v="$a" 'BEGIN{ if (v == "NA") print "n/a"; else printf "%.1f", v * 4096 / 1e6 }') |"
	md "| 2 (no merging) | $(fmt "$b" iops) | $(awk -v v="$b" 'BEGIN{ if (v == "NA") print "n/a"; else printf "%.1f", v * 4096 / 1e6 }') |"
	md "| **gain** | **$(ratio "$a" "$b")** | |"
	md "" "fio, libaio, iodepth 32, ${RT} s, through \`losetup --direct-io=on\` with the loop" \
		"device's own nomerges=2. Target: ≥ 16×."
}

# ---- Section: plug cost ----------------------------------------------------------------------

section_plug() {
	local rep reps=$REPS count=50000 plug v
	RT=$MISC_RT
	# Short dd runs are noisy: at least 3 alternating pairs, median of each side.
	[ $QUICK = 1 ] && count=20000
	[ "$reps" -ge 3 ] || reps=3
	local tt transports=pd
	[[ " $BENCH_TARGETS " == *" pdu "* ]] && transports="pd pdu"
	say "plug cost: dd oflag=direct bs=4k count=$count, queue.plug on/off ($transports)"
	fresh_image
	for rep in $(seq "$reps"); do
		for tt in $transports; do
			for plug in true false; do
				v=NA
				if start_target "$tt" --set queue.plug=$plug; then
					v=$(dd_mbps if=/dev/zero of="$DISK" bs=4k count=$count oflag=direct conv=notrunc)
					stop_target
				fi
				put "plug-$tt" "$plug" "$v"
			done
		done
	done
	local on off
	md "" "### Plug cost: a lone synchronous stream (dd oflag=direct bs=4k, $count blocks)" ""
	md "| transport | queue.plug true MB/s | false MB/s (median of $reps) | **on ÷ off** |" "|---|---|---|---|"
	for tt in $transports; do
		on=$(median "plug-$tt" true) off=$(median "plug-$tt" false)
		md "| ${TNAME[$tt]} | $(fmt "$on" mbs) | $(fmt "$off" mbs) | **$(ratio "$on" "$off")** |"
	done
	md "" "Target: ≥ 0.95× on each transport."
}

# ---- Section: daemon CPU per GiB and peak RSS ------------------------------------------------

# cpu_run TARGET FIO-ARGS...: sets RUN_CPU (daemon CPU s per GiB moved) and RUN_HWM (KiB).
cpu_run() {
	local t=$1 j=$W/fio.json c0 c1 bytes hz; shift
	hz=$(getconf CLK_TCK)
	RUN_CPU=NA RUN_HWM=NA
	start_target "$t" || return
	c0=$(proc_cpu_ticks "$DPID")
	if run_fio "$j" --name=cpu --ioengine=libaio --direct=1 --time_based \
		--fallocate=none --norandommap --randrepeat=0 --iodepth=128 --filename="$DISK" "$@"; then
		c1=$(proc_cpu_ticks "$DPID")
		bytes=$(jqn "$j" '.jobs[0].read.io_bytes + .jobs[0].write.io_bytes')
		RUN_CPU=$(awk -v a="$c0" -v b="$c1" -v hz="$hz" -v n="$bytes" \
			'BEGIN { printf "%.2f", (b - a) / hz / (n / 1073741824) }')
		RUN_HWM=$(proc_hwm_kib "$DPID")
	fi
	stop_target
}

section_cpu() {
	local t wl
	RT=$MISC_RT
	say "daemon CPU per GiB and peak RSS at iodepth 128"
	fresh_image
	md "" "### Daemon CPU seconds per GiB moved and peak RSS (fio on the disk file, O_DIRECT, iodepth 128, ${RT} s)" ""
	md "| daemon | workload | CPU s/GiB | peak RSS (VmHWM) |" "|---|---|---|---|"
	local daemons="pd pdu ref"
	[ $QUICK = 1 ] && daemons="pd pdu"
	[[ " $BENCH_TARGETS " == *" pdu "* ]] || daemons=${daemons/ pdu/}
	for t in $daemons; do
		for wl in "randrw 4k:--rw=randrw --bs=4k" "seq write 1M:--rw=write --bs=1M" \
			"seq read 1M:--rw=read --bs=1M"; do
			# shellcheck disable=SC2086
			cpu_run "$t" ${wl#*:}
			md "| ${TNAME[$t]} | ${wl%%:*} | $RUN_CPU | $(awk -v k="$RUN_HWM" 'BEGIN { if (k == "NA") print "n/a"; else printf "%.1f MiB", k / 1024 }') |"
		done
	done
	md "" "Target: plugdisk's peak RSS ≤ 64 MiB at iodepth 128, whatever the disk size (on io_uring," \
		"plus the rings' buffers: queues × mount.io_uring_depth × 1 MiB, resident once used)."
}

# ---- Section: cost of reading stats under load -----------------------------------------------

section_stats() {
	local j=$W/fio.json rep v rp
	RT=$MISC_RT
	say "stats read cost: fio randread 4k QD 32 with and without a reader of stats every 10 ms"
	fresh_image
	for rep in $(seq "$REPS"); do
		start_target pd || break
		run_fio "$j" "${FIO_DIRECT[@]}" --filename="$DISK" --rw=randread --bs=4k --iodepth=32 &&
			v=$(jqn "$j" '.jobs[0].read.iops') || v=NA
		put stats off "$v"
		# The same reader on a plain file of the same size: what spawning cat and sleep 100
		# times a second costs on this machine, apart from plugdisk.
		cat "$MNT/stats" >"$W/stats.copy"
		for what in control on; do
			src=$W/stats.copy
			[ $what = on ] && src=$MNT/stats
			(while :; do cat "$src" >/dev/null 2>&1; sleep 0.01; done) &
			rp=$!
			PIDS+=("$rp")
			run_fio "$j" "${FIO_DIRECT[@]}" --filename="$DISK" --rw=randread --bs=4k \
				--iodepth=32 && v=$(jqn "$j" '.jobs[0].read.iops') || v=NA
			put stats $what "$v"
			kill "$rp"; wait "$rp" 2>/dev/null; forget_pid "$rp"
		done
		stop_target
	done
	local a b c
	a=$(median stats off) b=$(median stats on) c=$(median stats control)
	md "" "### Cost of reading stats under load (plugdisk, fio randread 4k, iodepth 32, disk file, ${RT} s)" ""
	md "| | IOPS (median of $REPS) |" "|---|---|" "| no reader | $(fmt "$a" iops) |" \
		"| \`cat\` of a plain file of the same size every 10 ms (control) | $(fmt "$c" iops) |" \
		"| \`cat stats\` every 10 ms | $(fmt "$b" iops) |" \
		"| **stats reader ÷ control reader** | **$(ratio "$b" "$c")** |" \
		"| stats reader ÷ no reader | $(ratio "$b" "$a") |"
}

# ---- Section: core microbenchmark ------------------------------------------------------------

section_core() {
	say "core microbenchmark"
	if [ ! -x "$CORE_BENCH" ]; then say "  $CORE_BENCH is not built; skipped"; return; fi
	md "" "### Core microbenchmark (no FUSE, fake controller)" ""
	local args=()
	[ $QUICK = 1 ] && args=(--quick)
	"$CORE_BENCH" "${args[@]}" | tee -a "$RESULTS"
}

# ---- Section: device profiles against their data sheets (tests/bench/fidelity.sh) -----------

. "$TOP/tests/bench/fidelity.sh"

# ---- Main ------------------------------------------------------------------------------------

mkdir -p "$(dirname "$RESULTS")"
{
	echo "## plugdisk benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')$([ $QUICK = 1 ] && echo ' (quick)')"
	echo
	echo "Machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)),"
	echo "$(awk '/^MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)," \
		"$(. /etc/os-release && echo "$PRETTY_NAME"); image $SIZE on tmpfs; fio $(fio --version | sed 's/^fio-//'),"
	echo "nbdkit $(nbdkit --version | awk '{print $2}'), libnbd $(nbdfuse --version | awk '/^libnbd/ {print $2}')," \
		"libfuse $(pkg-config --modversion fuse3 2>/dev/null || echo '?')."
	echo "Load average when the run started: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews figures)."
} >"$RESULTS"
cat "$RESULTS"

START=$(date +%s)
for s in $BENCH_SECTIONS; do
	case $s in
	compare) section_compare ;;
	accuracy | nbdrate | merge | plug | cpu | stats | fidelity)
		case " $BENCH_TARGETS " in *" pd "*) ;; *) say "skipping $s: plugdisk not among the targets"; continue ;; esac
		[ -x "$PLUGDISK" ] || { say "skipping $s: $PLUGDISK is not built"; continue; }
		"section_$s"
		;;
	core) section_core ;;
	*) die "unknown section $s" ;;
	esac
done
md "" "Run took $(($(date +%s) - START)) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
say "done; tables in $RESULTS"
