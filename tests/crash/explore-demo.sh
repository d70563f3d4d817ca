#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make explore-demo: ext4 (256 MiB) and xfs (320 MiB, its smallest) under a file workload,
# recorded with cache.log; the ready checkers plugdisk-check-ext4 (e2fsck -fn after the
# journal's replay) and plugdisk-check-xfs (xfs_repair -n after a mount replays the log)
# must find every explored crash state clean, with a budget of at
# least 1000 states each. Then the rate of checking states, explore's FUSE overlay against a
# copy of the image and `plugdisk replay` per state, with e2fsck -fn as the checker.
#   BUDGET=N (default 1000)  RATE_STATES=N states for each rate (default 60)  FS="ext4 xfs"
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 e2fsck mkfs.xfs xfs_repair losetup jq

BUDGET=${BUDGET:-1000}
RATE_STATES=${RATE_STATES:-60}
FS=${FS:-ext4 xfs}
declare -A SIZE=([ext4]=256M [xfs]=320M)

for fs in $FS; do
	explore_fs_base "$fs" "${SIZE[$fs]}"
	explore_record "$T/w.log"
	explore_file_workload 150
	explore_record_end
	"$PLUGDISK" replay "$T/w.log" --list | tail -n 1 >&2
	rc=0
	"$PLUGDISK" explore --budget "$BUDGET" --seed 7 --json "$T/w.log" "$T/base.img" -- \
		"$TOP/checkers/plugdisk-check-$fs" >"$T/demo.json" || rc=$?
	log "$fs: $(jq -c '{states_total, sampled, planned, checked, passed, failed, duplicates}' \
		"$T/demo.json")"
	jq -r '.failures[:3][] | "state \(.id) after \(.after), \(.kind):\n\(.output)"' "$T/demo.json"
	assert_eq "$rc" 0 "explore's status on $fs"
	assert_gt "$(jq .checked "$T/demo.json")" $((BUDGET * 9 / 10)) "$fs states checked"
	[ "$fs" = ext4 ] && cp "$T/w.log" "$T/ext4.log" && cp --sparse=always "$T/base.img" "$T/ext4.img"
	rm -f "$T/w.log"
done
case " $FS " in *" ext4 "*) ;; *) exit 0 ;; esac
mv "$T/ext4.log" "$T/w.log"
mv "$T/ext4.img" "$T/base.img"

# The rate, one checker at a time in both, over the same sampled states.
# (e2fsck -fn fails a state whose journal needs a replay: explore exits 1 then.)
t0=$(date +%s.%N)
rc=0
"$PLUGDISK" explore -j 1 --budget "$RATE_STATES" --seed 3 --json "$T/w.log" "$T/base.img" -- \
	e2fsck -fn >"$T/rate.json" 2>"$T/rate.err" || rc=$?
t1=$(date +%s.%N)
checked=$(jq .checked "$T/rate.json")
[ "$rc" -le 1 ] || { cat "$T/rate.err"; fail "explore -j 1 failed"; }
flushes=$("$PLUGDISK" replay "$T/w.log" --list | grep -c '^flush ')
for ((i = 0; i < RATE_STATES; i++)); do
	cp --sparse=always "$T/base.img" "$T/copy.img"
	"$PLUGDISK" replay "$T/w.log" "$T/copy.img" --crash $((i % flushes)) --mode subset \
		--seed "$i" >/dev/null 2>&1 || fail "replay --crash $((i % flushes)) failed"
	e2fsck -fn "$T/copy.img" >/dev/null 2>&1
done
t2=$(date +%s.%N)
awk -v n="$RATE_STATES" -v m="$checked" -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
	o = m * 60 / (b - a); r = n * 60 / (c - b)
	printf "explore overlay (-j 1): %d states checked in %.1f s, %.0f states/min\n", m, b - a, o
	printf "copy + replay: %d states in %.1f s, %.0f states/min; the overlay is %.1fx\n", n,
		c - b, r, o / r }'
