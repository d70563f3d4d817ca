# SPDX-License-Identifier: MIT
# Shared by tests/mount/fio-verify-*.sh (sourced after tests/lib.sh): verified fio runs that
# mix reads, writes, flushes (fsync=N) and discards at iodepth 1, 32 and 128, under three
# controller settings, then check the stats identities.

# The controller settings every target is run under.
FV_SETTINGS=(
	"unlimited|"
	"iops|--set controller.iops=2000"
	"latency|--set controller.latency_us=500 --set controller.queue_depth=2"
)

# fv_job TARGET DEPTH KIND: print a fio job file. KIND is "file" (the FUSE disk file: fio
# cannot discard a regular file, fv_punch does that) or "loop" (a block device: fio trims).
# Regions: 0-4M mixed random writes with fsync, verified; 4-8M trim+write, verified (loop);
# 8-12M random reads; 12-16M random trims (loop) or fv_punch (file).
fv_job() {
	local target=$1 depth=$2 kind=$3 engine=libaio direct=1
	# At iodepth 1 the disk file is also driven buffered, through the page cache.
	if [ "$kind" = file ] && [ "$depth" = 1 ]; then engine=psync direct=0; fi
	cat <<JOB
[global]
filename=$target
ioengine=$engine
direct=$direct
iodepth=$depth
bsrange=4k-32k
size=4M
verify_state_save=0
randseed=$RANDOM

[mix]
rw=randwrite
offset=0
verify=crc32c
verify_fatal=1
fsync=8

[reader]
rw=randread
offset=8M
JOB
	[ "$kind" = loop ] || return 0
	cat <<JOB

[trimwrite]
rw=trimwrite
offset=4M
verify=crc32c
verify_fatal=1

[trimmer]
rw=randtrim
offset=12M
JOB
}

# fv_punch FILE: write, punch holes in and check 16 slices of 12-16M of FILE, concurrently
# with fio. Prints nothing on success; fails the test on any wrong result.
fv_punch() {
	local f=$1 i off out want
	want=$(printf '262144\n0\n0\n65536 ok\n65536 ok\n65536 ok\n4096 ok')
	for i in $(seq 0 15); do
		off=$(((12 << 20) + i * 262144))
		# Write the slice, punch 64-128K, zero 192-196K, then check every part.
		out=$("$T/pdio" "$f" write $off 262144 $i punch $((off + 65536)) 65536 \
			zero $((off + 196608)) 4096 zeros $((off + 65536)) 65536 \
			verify $off 65536 $i verify $((off + 131072)) 65536 $i \
			zeros $((off + 196608)) 4096 2>&1)
		[ "$out" = "$want" ] || { echo "punch slice $i at $off:" $out; return 1; }
	done
}

# fv_run TARGET KIND LABEL: fio at iodepth 1, 32, 128 on TARGET, all verified.
fv_run() {
	local target=$1 kind=$2 label=$3 depth pp=
	for depth in 1 32 128; do
		fv_job "$target" "$depth" "$kind" >"$T/job.fio"
		[ "$kind" = file ] && { fv_punch "$target" >"$T/punch.out" 2>&1 & pp=$!; }
		if ! fio --output="$T/fio.log" "$T/job.fio"; then
			cat "$T/fio.log" >&2
			fail "$label: fio at iodepth $depth failed"
		fi
		grep -q 'err= [1-9]' "$T/fio.log" && { cat "$T/fio.log" >&2; fail "$label: fio error"; }
		if [ -n "$pp" ]; then
			wait "$pp" || { cat "$T/punch.out" >&2; fail "$label: discard check failed"; }
			pp=
		fi
		log "$label iodepth $depth: verified"
	done
}

# fv_check_stats LABEL: identities hold, and the run issued every kind of op.
fv_check_stats() {
	local label=$1 op
	assert_identities
	stats_save "$T/fv.stats"
	for op in read write flush discard; do
		assert_gt "$(snap_get "$T/fv.stats" ${op}_ios)" 0 "$label: ${op}_ios"
	done
	for op in read write flush discard; do
		if grep -q "^${op}_errors " "$T/fv.stats"; then
			assert_eq "$(snap_get "$T/fv.stats" ${op}_errors)" 0 "$label: ${op}_errors"
		fi
	done
}

# fv_loop_suite on|off: every FV_SETTINGS setting, through a loop device with --direct-io=$1
# over MNT/disk; the stats identities hold after each.
fv_loop_suite() {
	local dio=$1 s label dev
	cd "$T" || fail "cd $T" # fio writes state files into the working directory
	for s in "${FV_SETTINGS[@]}"; do
		label=${s%%|*}
		# shellcheck disable=SC2086
		pd_start -s 16M ${s#*|}
		dev=$(loop_attach "$MNT/disk" --direct-io=$dio)
		fv_run "$dev" loop "loop-dio-$dio/$label"
		loop_detach "$dev" || fail "losetup -d failed"
		fv_check_stats "loop-dio-$dio/$label"
		pd_stop
	done
}
