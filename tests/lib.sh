# SPDX-License-Identifier: MIT
# Shared helpers for plugdisk's mount tests. Source it from a test script:
#   . "$(dirname "$0")/../lib.sh"      (adjust the path to reach tests/lib.sh)
# It gives each test a scratch directory, a log, the real daemon and a cleanup trap that
# unmounts, detaches loop devices and kills the daemons it started, by PID, even on failure.
# A test exits 0 for pass, 77 for skip (always with a reason), anything else for fail.

set -u

TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$TESTS_DIR/.." && pwd)
: "${PLUGDISK:=$TOP/build/plugdisk}"
# A relative path (PLUGDISK=build/plugdisk) keeps working when a test changes directory.
case $PLUGDISK in /*) ;; */*) PLUGDISK=$PWD/$PLUGDISK ;; esac
TEST_NAME=$(basename "$0" .sh)

# The FUSE transport every daemon started by pd_start uses: classic (/dev/fuse read and
# writev; the default) or io_uring (FUSE over io_uring, mount.io_uring = on: the daemon, as
# root, turns the kernel's enable_uring parameter on, and the parameter's old value is put
# back at cleanup). tests/run-tests.sh runs the mount tests once with each.
: "${PLUGDISK_TRANSPORT:=classic}"
URING_PARAM=/sys/module/fuse/parameters/enable_uring
case $PLUGDISK_TRANSPORT in
classic) PD_TRANSPORT_ARGS=(--set mount.io_uring=off) ;;
io_uring) PD_TRANSPORT_ARGS=(--set mount.io_uring=on) ;;
*) printf '%s: PLUGDISK_TRANSPORT must be classic or io_uring (got %s)\n' "$TEST_NAME" \
	"$PLUGDISK_TRANSPORT" >&2; exit 1 ;;
esac
_pd_uring_param0=

# Scratch space: the image lives on a tmpfs-backed directory when possible (fast, no disk wear).
T=$(mktemp -d "${TMPDIR:-/tmp}/plugdisk-$TEST_NAME.XXXXXX")
MNT=$T/mnt
mkdir -p "$MNT"

_pd_pids=()
_pd_loops=()
_pd_mounts=()	# non-FUSE mounts (ext4 on loop), unmounted first
_pd_cleanups=()

log() { printf '%s: %s\n' "$TEST_NAME" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
skip() { log "SKIP: $*"; exit 77; }

# Run a command string at cleanup time (before the standard cleanup).
at_cleanup() { _pd_cleanups+=("$1"); }

# _pd_loop_id DEV: the device and inode of DEV's backing file ("MAJ:MIN INO"), or nothing.
_pd_loop_id() { losetup -n -O BACK-MAJ:MIN,BACK-INO "$1" 2>/dev/null | awk '{print $1, $2}'; }

# _pd_release: unmount the test's filesystems, detach its loop devices, and stop its daemons
# (SIGTERM, then SIGKILL after 5 s): what stacks on a plugdisk goes first.
_pd_release() {
	local i m l f
	for ((i = ${#_pd_mounts[@]} - 1; i >= 0; i--)); do
		m=${_pd_mounts[i]}
		mountpoint -q "$m" 2>/dev/null && { umount "$m" 2>/dev/null || umount -l "$m"; }
	done
	for l in "${_pd_loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
	# Devices attached from a subshell: detach each one still backed by the same file.
	if [ -f "$T/.loops" ]; then
		while read -r l f; do
			[ "$(_pd_loop_id "$l")" = "$f" ] && losetup -d "$l" 2>/dev/null
		done <"$T/.loops"
	fi
	_pd_term "${_pd_pids[@]}"
}

# true_within SECONDS COMMAND...: whether COMMAND succeeds within SECONDS, a whole number
# (tried every 50 ms, and once more at the deadline).
true_within() {
	local i n=$1
	shift
	[[ $n =~ ^[0-9]+$ ]] || fail "true_within: '$n' is not a whole number of seconds"
	for i in $(seq $((n * 20))); do "$@" && return 0; sleep 0.05; done
	"$@"
}

# pid_gone PID: whether PID has ended (a zombie has: only its reaping is left).
pid_gone() {
	kill -0 "$1" 2>/dev/null || return 0
	[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

# pid_gone_within SECONDS PID: whether PID has ended within SECONDS.
pid_gone_within() { true_within "$1" pid_gone "$2"; }

# _pd_term PID...: SIGTERM each process, then SIGKILL whichever still runs after 5 s.
_pd_term() {
	local p
	for p; do kill -TERM "$p" 2>/dev/null || true; done
	for p; do
		pid_gone_within 5 "$p" || kill -KILL "$p" 2>/dev/null || true
	done
}

_pd_cleanup() {
	local rc=$? i m l p _pd_ci
	# The cleanup commands run with eval: their own variables (often i) must not be the
	# loop counter, hence the unusual name.
	for ((_pd_ci = ${#_pd_cleanups[@]} - 1; _pd_ci >= 0; _pd_ci--)); do
		eval "${_pd_cleanups[_pd_ci]}" || true
	done
	_pd_release
	# A sanitizer build reports to the daemon's log; such a report fails a passing test.
	if [ "$rc" = 0 ] && [ -f "$T/daemon.log" ] &&
		grep -qE 'ERROR: [A-Za-z]+Sanitizer|WARNING: ThreadSanitizer|runtime error:' "$T/daemon.log"; then
		grep -m5 -E 'Sanitizer|runtime error:' "$T/daemon.log" >&2
		log "FAIL: sanitizer report in $T/daemon.log"
		rc=1
	fi
	for m in $(awk -v t="$T" '$2 ~ "^"t {print $2}' /proc/mounts | sort -r); do
		fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	# The kernel parameter as it was before the test (an io_uring daemon may have set it).
	if [ -n "$_pd_uring_param0" ] && [ "$(cat "$URING_PARAM" 2>/dev/null)" != "$_pd_uring_param0" ]; then
		echo "$_pd_uring_param0" >"$URING_PARAM" 2>/dev/null || true
	fi
	if [ "$rc" = 0 ] || [ "$rc" = 77 ]; then rm -rf "$T"; else log "kept $T for inspection"; fi
	exit "$rc"
}
trap _pd_cleanup EXIT
trap 'exit 130' INT TERM

# Skip when the machine cannot run FUSE or loop devices.
require_fuse() {
	[ -c /dev/fuse ] || skip "/dev/fuse is missing"
	command -v fusermount3 >/dev/null || skip "fusermount3 is missing"
	[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"
}
require_loop() {
	[ -e /dev/loop-control ] || skip "loop devices are missing"
	[ "$(id -u)" = 0 ] || skip "loop devices need root"
}
require_cmd() { local c; for c; do command -v "$c" >/dev/null || skip "$c is not installed"; done; }

# require_transport: skip when $PLUGDISK_TRANSPORT cannot be had on this machine; note the
# kernel parameter's value, for cleanup to restore it.
require_transport() {
	[ "$PLUGDISK_TRANSPORT" = io_uring ] || return 0
	[ -e "$URING_PARAM" ] || skip "this kernel has no FUSE over io_uring ($URING_PARAM is missing)"
	[ -n "$_pd_uring_param0" ] || _pd_uring_param0=$(cat "$URING_PARAM")
	[ "$_pd_uring_param0" = Y ] || [ "$(id -u)" = 0 ] ||
		skip "FUSE over io_uring is off and only root may turn it on"
}

# pd_start [plugdisk args...]: start the daemon in the foreground (-f) in the background, on
# $MNT unless the args end with another mountpoint, with image $T/disk.img and size 64M unless
# given, on $PLUGDISK_TRANSPORT. Waits (deadline 10 s) until MNT/disk answers; fails early if
# the daemon died. Sets PD_PID and PD_MNT. Daemon output goes to $T/daemon.log.
pd_start() {
	require_transport
	local mnt=$MNT args=("${PD_TRANSPORT_ARGS[@]}" "$@")
	if [ $# -gt 0 ] && [ -d "${!#}" ]; then mnt=${!#}; unset 'args[$((${#args[@]} - 1))]'; fi
	local have_i=0 have_s=0 a
	for a in "${args[@]}"; do
		case $a in -i | --image) have_i=1 ;; -s | --size) have_s=1 ;; -c) have_i=1 have_s=1 ;; esac
	done
	[ $have_i = 1 ] || args=(-i "$T/disk.img" "${args[@]}")
	[ $have_s = 1 ] || args=(-s 64M "${args[@]}")
	"$PLUGDISK" -f "${args[@]}" "$mnt" >>"$T/daemon.log" 2>&1 &
	PD_PID=$!
	PD_MNT=$mnt
	_pd_pids+=("$PD_PID")
	pd_wait_mounted "$mnt" "$PD_PID"
}

# pd_wait_mounted MNT PID: wait until MNT/disk is a mounted regular file.
pd_wait_mounted() {
	local mnt=$1 pid=$2 i
	for i in $(seq 200); do
		if mountpoint -q "$mnt" && [ -f "$mnt/disk" ]; then return 0; fi
		kill -0 "$pid" 2>/dev/null || { cat "$T/daemon.log" >&2; fail "daemon exited before mounting"; }
		sleep 0.05
	done
	cat "$T/daemon.log" >&2
	fail "mount did not appear within 10 s"
}

# pd_stop [PID]: SIGTERM the daemon and wait for a clean exit (status 0); fail, after a
# SIGKILL, if it still runs 60 s later.
pd_stop() {
	local pid=${1:-$PD_PID} rc=0
	kill -TERM "$pid" 2>/dev/null || return 0
	if ! pid_gone_within 60 "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		cat "$T/daemon.log" >&2
		fail "daemon still runs 60 s after SIGTERM"
	fi
	wait "$pid" || rc=$?
	[ "$rc" = 0 ] || { cat "$T/daemon.log" >&2; fail "daemon exited with status $rc on SIGTERM"; }
}

# pd_kill9 [PID]: crash the daemon and clean the stale mount.
pd_kill9() {
	local pid=${1:-$PD_PID} mnt=${2:-$PD_MNT}
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
}

# pd_rss_kb: the daemon's resident set (VmRSS) in kB.
pd_rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$PD_PID/status"; }

# stat_get NAME [MNT]: print one value from MNT/stats.
stat_get() {
	local v
	v=$(awk -v k="$1" '$1 == k {print $2; f=1} END {exit !f}' "${2:-$PD_MNT}/stats") ||
		fail "stats has no '$1'"
	echo "$v"
}

# loop_attach FILE [losetup options...]: attach FILE to a free loop device, print its path.
loop_attach() {
	local f=$1 dev; shift
	dev=$(losetup -f --show "$@" "$f") || fail "losetup $f failed"
	_pd_loops+=("$dev")
	# Also on file: `dev=$(loop_attach ...)` runs in a subshell, where _pd_loops is lost. The
	# backing file is named by device and inode: its path reads differently once a crashed
	# daemon's mount is detached.
	echo "$dev $(_pd_loop_id "$dev")" >>"$T/.loops"
	echo "$dev"
}
loop_detach() { losetup -d "$1"; }

# track_mount DIR: make cleanup unmount DIR (for ext4 mounted by the test).
track_mount() { _pd_mounts+=("$1"); }

# Assert helpers.
assert_eq() { [ "$1" = "$2" ] || fail "${3:-values differ}: '$1' != '$2'"; }
assert_gt() { [ "$1" -gt "$2" ] || fail "${3:-not greater}: $1 <= $2"; }

# ---- More helpers (stats snapshots, idle wait, exit-status checks, C helpers). ----

# stat_wait NAME VALUE WHAT [SECONDS]: wait (deadline SECONDS, 5 by default) until NAME in
# $PD_MNT/stats reads VALUE; fail, naming WHAT, if it does not.
stat_wait() { _stat_reaches "$1" = "$2" "${4:-5}" || assert_eq "$(stat_get "$1")" "$2" "$3"; }

# stat_wait_ge NAME MIN WHAT [SECONDS]: the same, until NAME reads at least MIN.
stat_wait_ge() {
	_stat_reaches "$1" -ge "$2" "${4:-5}" ||
		fail "$3: $1 is $(stat_get "$1") after ${4:-5} s, want at least $2"
}

# _stat_is NAME OP VALUE: whether [ NAME's value OP VALUE ] holds now.
_stat_is() { [ "$(stat_get "$1")" "$2" "$3" ]; }

# _stat_reaches NAME OP VALUE SECONDS: whether [ NAME's value OP VALUE ] comes true in time.
_stat_reaches() { true_within "$4" _stat_is "$1" "$2" "$3"; }

# pd_term_within SECONDS WHAT: SIGTERM $PD_PID; fail, naming WHAT, unless it exits with
# status 0 within SECONDS.
pd_term_within() {
	local rc=0
	kill -TERM "$PD_PID"
	pid_gone_within "$1" "$PD_PID" || fail "$2 still runs $1 s after SIGTERM"
	wait "$PD_PID" || rc=$?
	assert_eq "$rc" 0 "exit status of $2 after SIGTERM"
}

# stats_save FILE [MNT]: copy one snapshot of MNT/stats (one open = one consistent copy).
stats_save() { cat "${2:-$PD_MNT}/stats" >"$1" || fail "cannot read ${2:-$PD_MNT}/stats"; }

# snap_get FILE NAME: one value from a saved snapshot.
snap_get() {
	awk -v k="$2" '$1 == k {print $2; f=1} END {exit !f}' "$1" || fail "stats has no '$2'"
}

# pd_wait_idle [MNT]: wait (deadline 10 s) until nothing is queued or in flight.
pd_wait_idle() {
	local mnt=${1:-$PD_MNT} i s=$T/.idle-stats
	for i in $(seq 200); do
		stats_save "$s" "$mnt"
		if [ "$(snap_get "$s" queued_requests)" = 0 ] && [ "$(snap_get "$s" in_flight)" = 0 ]; then
			return 0
		fi
		sleep 0.05
	done
	cat "$s" >&2
	fail "queue not idle after 10 s"
}

# assert_identities [MNT]: once idle, every op satisfies bios = ios + merges and
# merges = merges_back + merges_front + merges_gap (when the split is shown).
assert_identities() {
	local mnt=${1:-$PD_MNT} s=$T/.id-stats op b i m mb mf mg
	pd_wait_idle "$mnt"
	stats_save "$s" "$mnt"
	for op in read write flush discard; do
		b=$(snap_get "$s" ${op}_bios) i=$(snap_get "$s" ${op}_ios) m=$(snap_get "$s" ${op}_merges)
		[ "$b" -eq $((i + m)) ] ||
			fail "$op: bios $b != ios $i + merges $m"
		if grep -q "^${op}_merges_back " "$s"; then
			mb=$(snap_get "$s" ${op}_merges_back) mf=$(snap_get "$s" ${op}_merges_front)
			mg=$(snap_get "$s" ${op}_merges_gap)
			[ "$m" -eq $((mb + mf + mg)) ] ||
				fail "$op: merges $m != back $mb + front $mf + gap $mg"
		fi
	done
}

# expect_exit STATUS CMD...: run CMD (stdin closed, output to $T/out), check its exit status
# is STATUS and, for STATUS != 0, that it printed a message. The output stays in $T/out.
expect_exit() {
	local want=$1 rc=0; shift
	"$@" </dev/null >"$T/out" 2>&1 || rc=$?
	if [ "$rc" != "$want" ]; then
		sed 's/^/    | /' "$T/out" >&2
		fail "exit status $rc, expected $want: $*"
	fi
	if [ "$want" != 0 ] && ! [ -s "$T/out" ]; then fail "no message from: $*"; fi
	return 0
}

# build_helper NAME: compile tests/mount/helpers/NAME.c into $T/NAME (once per test).
build_helper() {
	local src=$TESTS_DIR/mount/helpers/$1.c out=$T/$1
	[ -x "$out" ] && return 0
	require_cmd "${CC:-cc}"
	"${CC:-cc}" -O1 -g -Wall -Wextra -o "$out" "$src" >&2 || fail "cannot build $src"
}

# sha_of FILE [OFFSET LEN]: sha256 of a file or of a byte range of it.
sha_of() {
	if [ $# -ge 3 ]; then
		dd if="$1" iflag=skip_bytes,count_bytes skip="$2" count="$3" bs=1M status=none |
			sha256sum | cut -d' ' -f1
	else
		sha256sum <"$1" | cut -d' ' -f1
	fi
}

# loop_nomerges DEV VALUE: set /sys/block/loopN/queue/nomerges, so that the loop device
# passes bios on unmerged and plugdisk's own merging is what the counters show.
loop_nomerges() { echo "$2" >"/sys/block/$(basename "$1")/queue/nomerges"; }

# fio_verify DEV NAME RW SIZE IODEPTH [fio args]: 4 KiB direct I/O (libaio) over SIZE of DEV,
# written with crc32c checksums and read back; fails the test, with fio's log, if fio fails.
# fio runs in $T, where it keeps its state files.
fio_verify() {
	local dev=$1 name=$2 rw=$3 size=$4 qd=$5; shift 5
	(cd "$T" && fio --name="$name" --filename="$dev" --ioengine=libaio --direct=1 \
		--iodepth="$qd" --bs=4k --rw="$rw" --size="$size" --verify=crc32c \
		--verify_fatal=1 --verify_state_save=0 "$@" --output="$T/fio.log") ||
		{ cat "$T/fio.log" >&2; fail "fio $name (iodepth $qd) failed"; }
}

# ext4_roundtrip DISK WHAT: ext4 on a loop device over DISK: mkfs, 54 files (4 large, 50
# small), umount, e2fsck -fn clean, remount and checksums equal. Keeps the checksums in
# $T/sums for ext4_recheck and detaches the loop device at the end. WHAT names the disk in
# failure messages.
ext4_roundtrip() {
	local disk=$1 what=$2 dev i
	require_loop
	require_cmd mkfs.ext4 e2fsck
	dev=$(loop_attach "$disk")
	mkfs.ext4 -q -F "$dev" >"$T/mkfs.log" 2>&1 || { cat "$T/mkfs.log" >&2; fail "$what: mkfs.ext4"; }
	mkdir -p "$T/ext"
	mount "$dev" "$T/ext" || fail "$what: mount ext4"
	track_mount "$T/ext"
	mkdir -p "$T/ext/d/e"
	for i in 1 2 3 4; do head -c $((i * 1500000 + 17)) /dev/urandom >"$T/ext/big$i"; done
	for i in $(seq 50); do head -c $((i * 97)) /dev/urandom >"$T/ext/d/e/small$i"; done
	(cd "$T/ext" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$T/sums"
	[ "$(wc -l <"$T/sums")" = 54 ] || fail "$what: expected 54 files"
	umount "$T/ext" || fail "$what: umount ext4"
	e2fsck -fn "$dev" >"$T/fsck.log" 2>&1 || { cat "$T/fsck.log" >&2; fail "$what: e2fsck -fn not clean"; }
	mount "$dev" "$T/ext" || fail "$what: remount ext4"
	(cd "$T/ext" && sha256sum --quiet -c "$T/sums") || fail "$what: checksums differ after remount"
	umount "$T/ext"
	loop_detach "$dev" || fail "$what: losetup -d"
}

# ext4_recheck DISK WHAT: the filesystem ext4_roundtrip left on DISK, after a restart of the
# daemon: e2fsck -fn clean, and mounted read-only, the checksums in $T/sums equal.
ext4_recheck() {
	local disk=$1 what=$2 dev
	dev=$(loop_attach "$disk")
	e2fsck -fn "$dev" >"$T/fsck2.log" 2>&1 || { cat "$T/fsck2.log" >&2; fail "$what: e2fsck after restart"; }
	mount -o ro "$dev" "$T/ext" || fail "$what: mount after restart"
	track_mount "$T/ext"
	(cd "$T/ext" && sha256sum --quiet -c "$T/sums") || fail "$what: checksums differ after restart"
	umount "$T/ext"
	loop_detach "$dev" || fail "$what: losetup -d"
}
