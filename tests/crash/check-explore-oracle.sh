#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The oracle of plugdisk explore through the real daemon: seeded small workloads of 4 KiB
# direct writes, fsyncs, discards (hole punches) and marks on the disk, each cut live by the
# control file in every powercut mode; the image the cut left, with the marks acknowledged
# before it, must be one of the states explore offers for the log. Writes of one atomic
# unit, with at most 6 pending at the cut, keep every live cut inside explore's bound (every
# subset of a window of at most 10). WORKLOADS=N (default 2) workloads, SEED=S.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd xfs_io cmp

: "${WORKLOADS:=2}" "${SEED:=7}"
RANDOM=$SEED
truncate -s 1M "$T/base.img"
cat >"$T/same.sh" <<EOF
#!/bin/sh
cmp -s "\$PLUGDISK_STATE" "$T/live.img" && cmp -s "\$PLUGDISK_MARKS" "$T/live.marks" &&
	touch "$T/found"
exit 0
EOF
chmod +x "$T/same.sh"

cuts=0
for ((w = 0; w < WORKLOADS; w++)); do
	# The workload: a list of ops, the same for each mode.
	ops=() pending=0
	for ((i = 0, n = 4 + RANDOM % 12; i < n; i++)); do
		r=$((RANDOM % 10))
		if ((r < 5)); then
			ops+=("write $((RANDOM % 16)) $((RANDOM % 254 + 1))")
			pending=$((pending + 1))
		elif ((r < 7)); then
			ops+=(fsync)
			pending=0
		elif ((r < 8)); then
			ops+=("punch $((RANDOM % 16))")
			pending=0
		else
			ops+=("mark m$i")
		fi
		if ((pending == 6)); then ops+=(fsync); pending=0; fi
	done
	delay=$((RANDOM % 2 ? 600000 : 1))
	for mode in drop prefix subset tear; do
		cut_seed=$((RANDOM + 1))
		cp "$T/base.img" "$T/disk.img"
		rm -f "$T/live.marks" "$T/found"
		touch "$T/live.marks"
		pd_start -i "$T/disk.img" -s 1M --set cache.mode=writeback --set cache.atomic_write=4096 \
			--set cache.destage_delay_ms=$delay --set "cache.log=$T/w.log"
		for op in "${ops[@]}"; do
			set -- $op
			case $1 in
			write) xfs_io -d -c "pwrite -q -S $3 $(($2 * 4096)) 4096" "$MNT/disk" ;;
			fsync) xfs_io -c fsync "$MNT/disk" ;;
			punch) xfs_io -c "fpunch $(($2 * 4096)) 4096" "$MNT/disk" ;;
			mark) echo "mark $2" >"$MNT/control" && echo "$2" >>"$T/live.marks" ;;
			esac || fail "workload $w: '$op' failed"
		done
		echo "powercut mode=$mode seed=$cut_seed" >"$MNT/control" || fail "powercut refused"
		pd_stop
		cp "$T/disk.img" "$T/live.img"
		"$PLUGDISK" explore -j 2 "$T/w.log" "$T/base.img" -- "$T/same.sh" >"$T/report" \
			2>"$T/explore.err" || { cat "$T/explore.err" >&2; fail "explore failed"; }
		cuts=$((cuts + 1))
		[ -e "$T/found" ] || {
			printf '  %s\n' "${ops[@]}" >&2
			"$PLUGDISK" replay "$T/w.log" --list >&2
			fail "workload $w (seed $SEED), powercut mode=$mode seed=$cut_seed, destage delay" \
				"$delay ms: explore offers no state that is the live cut's image with its marks"
		}
	done
done
log "$cuts live cuts, each one of explore's states"
