#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak: mixed verified fio (direct and buffered writes, reads, trims, fsyncs) against plugdisk
# for MINUTES while the config file is rewritten and SIGHUPed every few seconds. Reports bytes
# verified and the daemon's RSS and open fds at start and end; fails if they grow.
# Usage: soak.sh [MINUTES=10] [SIZE=256M] [HUP_SECS=3] [ROUND_SECS=60] [RSS_TOL_KB=8192] [FD_TOL=2]

. "$(dirname "$0")/../lib.sh"

MINUTES=10 SIZE=256M HUP_SECS=3 ROUND_SECS=60 RSS_TOL_KB=8192 FD_TOL=2 SEED=
for a; do
	case $a in
	MINUTES=* | SIZE=* | HUP_SECS=* | ROUND_SECS=* | RSS_TOL_KB=* | FD_TOL=* | SEED=*)
		printf -v "${a%%=*}" '%s' "${a#*=}" ;;
	*) fail "unknown argument '$a' (MINUTES= SIZE= HUP_SECS= ROUND_SECS= RSS_TOL_KB= FD_TOL= SEED=)" ;;
	esac
done
[[ $MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]] || fail "MINUTES must be a number"
: "${SEED:=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}"
RANDOM=$SEED

require_fuse
require_loop
require_cmd fio losetup od

IMG=$T/disk.img
CONF=$T/plugdisk.conf
JOB=$T/soak.fio
HUPS=$T/hups
umask 077	# a root daemon refuses a config file that others can write

pick() { shift $((RANDOM % $#)); echo "$1"; }
nfds() { ls "/proc/$PD_PID/fd" | wc -l; }

# write_config: a valid config with random queue and controller settings, replaced atomically.
write_config() {
	C_IOPS=$(pick 0 0 2000 10000 50000) C_NOMERGES=$(pick 0 0 1 2)
	{
		echo "# soak configuration, rewritten every $HUP_SECS s"
		echo "queue = {"
		echo "	nomerges = $C_NOMERGES;"
		echo "	plug = $(pick true true false);"
		echo "	max_request_size = \"$(pick 64K 128K 1M 1M)\";"
		echo "	unplug_threshold = $(pick 4 32 32);"
		echo "};"
		echo "controller = {"
		echo "	queue_depth = $(pick 2 8 32 64);"
		echo "	iops = $C_IOPS;"
		echo "	bandwidth = \"$(pick 0 0 32M 128M 512M)\";"
		echo "	write_bandwidth = \"$(pick 0 0 64M)\";"
		echo "	latency_us = $(pick 0 0 50 200 1000);"
		echo "	flush_latency_us = $(pick 0 500);"
		echo "};"
	} >"$CONF.tmp"
	mv -f "$CONF.tmp" "$CONF"
}

# applied: true once MNT/stats shows the limits of the config last written.
applied() {
	awk -v i="$C_IOPS" -v n="$C_NOMERGES" '$1 == "limit_iops" {a = ($2 == i)}
		$1 == "queue_nomerges" {b = ($2 == n)} END {exit !(a && b)}' "$MNT/stats" 2>/dev/null
}

# The reloader: a new config and a SIGHUP every HUP_SECS seconds, counted in $HUPS. A reload
# that does not show in stats within 5 s is counted in $HUPS.late.
reloader() {
	local n=0 late=0 i
	while kill -0 "$PD_PID" 2>/dev/null; do
		sleep "$HUP_SECS"
		write_config
		kill -HUP "$PD_PID" 2>/dev/null || break
		for i in $(seq 50); do applied && break; sleep 0.1; done
		applied || { late=$((late + 1)); echo "$late" >"$HUPS.late"; }
		n=$((n + 1))
		echo "$n" >"$HUPS"
	done
}

# fio_bytes JSON: print "job dir bytes" for every job and direction of a fio JSON report.
fio_bytes() {
	awk '/"jobname"/ {gsub(/[",]/, "", $3); job = $3}
	     /"(read|write|trim)" : \{/ {gsub(/"/, "", $1); dir = $1}
	     /"io_bytes"/ && dir != "" {gsub(/,/, "", $3); print job, dir, $3; dir = ""}' "$1"
}

write_config
truncate -s "$SIZE" "$IMG"
pd_start -c "$CONF" -i "$IMG" -s "$SIZE"
# Not $(loop_attach ...): the subshell would lose lib.sh's record of the device.
DEV=$(losetup -f --show --direct-io=on "$MNT/disk") || fail "losetup failed"
_pd_loops+=("$DEV")
rss_cold=$(pd_rss_kb) fd_cold=$(nfds)

cat >"$JOB" <<EOF
[global]
ioengine=libaio
time_based=1
verify=crc32c
verify_fatal=1
verify_state_save=0
verify_backlog=128
randrepeat=0

; O_DIRECT random writes of 4K..256K through the disk file, fsync every 64
[direct]
filename=$MNT/disk
rw=randwrite
direct=1
iodepth=32
bsrange=4k-256k
offset=0%
size=35%
fsync=64

; buffered random writes of 512B..64K through the disk file, fdatasync every 16
[buffered]
filename=$MNT/disk
ioengine=psync
rw=randwrite
direct=0
bsrange=512-64k
offset=35%
size=15%
fdatasync=16

; trims followed by writes, through a loop device with direct I/O (BLKDISCARD -> discard bio)
[trimwrite]
filename=$DEV
rw=randtrimwrite
direct=1
iodepth=16
bsrange=4k-128k
offset=50%
size=30%
fsync=32

; sequential 4K direct writes at depth 32 through the loop device: merging under limits
[seqwrite]
filename=$DEV
rw=write
direct=1
iodepth=32
bs=4k
offset=80%
size=20%
fsync=256

; unverified direct reads over the whole disk, racing with all the writers
[reader]
filename=$MNT/disk
rw=randread
direct=1
iodepth=8
bsrange=4k-64k
verify=0
EOF

reloader &
RELOADER=$!
at_cleanup "kill $RELOADER 2>/dev/null; wait $RELOADER 2>/dev/null"

total=$(awk -v m="$MINUTES" 'BEGIN {printf "%d", m * 60}')
[ "$total" -ge 10 ] || total=10
start=$(date +%s) round=0 verified=0 written=0 trimmed=0 read_bytes=0
rss_warm= fd_warm= rss_max=0
log "seed $SEED, $MINUTES min, disk $SIZE, SIGHUP every $HUP_SECS s, loop $DEV; cold RSS ${rss_cold} kB, $fd_cold fds"
while :; do
	left=$((total - ($(date +%s) - start)))
	[ "$left" -ge 5 ] || break
	r=$((left < ROUND_SECS ? left : ROUND_SECS))
	round=$((round + 1))
	out=$T/fio-$round.json
	if ! fio --runtime="$r" --output-format=json --output="$out" "$JOB" 2>"$T/fio.err"; then
		cat "$T/fio.err" >&2
		grep -E '"(error|verify)' "$out" >&2 2>/dev/null
		tail -n 30 "$T/daemon.log" >&2
		fail "round $round: fio failed (verification error or I/O error); see $out"
	fi
	kill -0 "$PD_PID" 2>/dev/null || fail "round $round: the daemon died"
	while read -r job dir bytes; do
		case $job:$dir in
		reader:read) read_bytes=$((read_bytes + bytes)) ;;
		*:read) verified=$((verified + bytes)) ;;
		*:write) written=$((written + bytes)) ;;
		*:trim) trimmed=$((trimmed + bytes)) ;;
		esac
	done < <(fio_bytes "$out")
	rss=$(pd_rss_kb) fd=$(nfds)
	[ "$rss" -gt "$rss_max" ] && rss_max=$rss
	if [ -z "$rss_warm" ]; then rss_warm=$rss fd_warm=$fd; fi
	log "round $round: ${r}s, verified $((verified >> 20)) MiB, written $((written >> 20)) MiB," \
		"trimmed $((trimmed >> 20)) MiB, SIGHUPs $(cat "$HUPS" 2>/dev/null || echo 0), RSS $rss kB, fds $fd"
done
kill "$RELOADER" 2>/dev/null
wait "$RELOADER" 2>/dev/null
hups=$(cat "$HUPS" 2>/dev/null || echo 0)
late=$(cat "$HUPS.late" 2>/dev/null || echo 0)
reloaded=$(grep -c 'reloaded' "$T/daemon.log")
refused=$(grep -c 'reload refused' "$T/daemon.log")
rss_end=$(pd_rss_kb) fd_end=$(nfds)
elapsed=$(($(date +%s) - start))

# Nothing should be queued or in flight once fio is done; the bio identities must hold.
cat "$MNT/stats" >"$T/stats.end" 2>/dev/null || : >"$T/stats.end"	# one snapshot
for op in read write flush discard; do
	b=$(awk -v k="${op}_bios" '$1 == k {print $2}' "$T/stats.end")
	i=$(awk -v k="${op}_ios" '$1 == k {print $2}' "$T/stats.end")
	m=$(awk -v k="${op}_merges" '$1 == k {print $2}' "$T/stats.end")
	[ -n "$b" ] && [ -n "$i" ] && [ -n "$m" ] || { log "stats lack ${op}_{bios,ios,merges}"; continue; }
	[ "$b" = $((i + m)) ] || fail "stats identity broken: ${op}_bios $b != ${op}_ios $i + ${op}_merges $m"
done

losetup -d "$DEV"
_pd_loops=()
pd_stop

log "soak: $elapsed s, $round fio rounds, $hups SIGHUPs ($reloaded reloads logged, $refused refused," \
	"$late not visible in stats within 5 s), seed $SEED"
log "  bytes verified $verified ($((verified >> 20)) MiB); written $((written >> 20)) MiB," \
	"trimmed $((trimmed >> 20)) MiB, unverified reads $((read_bytes >> 20)) MiB"
log "  RSS kB: cold $rss_cold, start (after round 1) $rss_warm, end $rss_end, max $rss_max"
log "  open fds: cold $fd_cold, start $fd_warm, end $fd_end"
echo "soak: seconds=$elapsed rounds=$round sighups=$hups reloads_logged=$reloaded bytes_verified=$verified" \
	"rss_start_kb=$rss_warm rss_end_kb=$rss_end fds_start=$fd_warm fds_end=$fd_end"
[ "$verified" -gt 0 ] || fail "no bytes were verified"
[ "$hups" -gt 0 ] || fail "no SIGHUP was sent"
[ "$refused" = 0 ] || { grep 'reload refused' "$T/daemon.log" >&2; fail "a valid config was refused"; }
[ "$late" = 0 ] || fail "$late of $hups reloads did not show in stats (limit_iops, queue_nomerges)"
[ "$rss_end" -le $((rss_warm + RSS_TOL_KB)) ] ||
	fail "RSS grew from $rss_warm kB to $rss_end kB (tolerance $RSS_TOL_KB kB)"
[ "$fd_end" -le $((fd_warm + FD_TOL)) ] || fail "open fds grew from $fd_warm to $fd_end (tolerance $FD_TOL)"
log "PASS: RSS and fds flat, every fio verification passed"
