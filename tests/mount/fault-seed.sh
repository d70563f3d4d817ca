#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A probabilistic fault replays from its seed: with the same seed (from --set faults=..., or
# added through the control file), two runs fail exactly the same reads; another seed fails
# others; the stats count what the readers saw.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk

# 200 O_DIRECT reads of 4 KiB, one at a time: one request each. Prints the indexes that
# failed with EIO, space separated.
reads() {
	local args=() i
	for i in $(seq 0 199); do args+=(pread $((i * 8192)) 4096); done
	"$P" -d "$D" "${args[@]}" | awk '$1 == "EIO" { printf "%d ", NR - 1 } $1 != "EIO" && $1 != 4096 { print "odd result " $0 > "/dev/stderr" }'
}

run() { # run SEED-OR-CTL
	if [ "$1" = ctl ]; then
		pd_start -s 4M
		"$PLUGDISK" ctl "$MNT" fault add op=read error=EIO prob=0.25 seed=1234 >/dev/null ||
			fail "fault add"
	else
		pd_start -s 4M --set "faults=op=read error=EIO prob=0.25 seed=$1"
	fi
	reads >"$T/failed.$2"
	n=$(wc -w <"$T/failed.$2")
	assert_eq "$(stat_get read_fault_errors)" "$n" "run $2: read_fault_errors"
	assert_eq "$(stat_get fault_1_matched)" 200 "run $2: every read matched"
	assert_eq "$(stat_get fault_1_injected)" "$n" "run $2: injected"
	pd_stop
}

run 1234 a
run 1234 b
run 99 c
run ctl d
a=$(cat "$T/failed.a")
log "seed 1234 failed reads: $a"
n=$(wc -w <"$T/failed.a")
# 200 draws at 0.25: 50 expected; outside 25..75 has a probability far below 1e-6.
[ "$n" -ge 25 ] && [ "$n" -le 75 ] || fail "$n of 200 reads failed at prob=0.25"
assert_eq "$(cat "$T/failed.b")" "$a" "same seed, second run"
assert_eq "$(cat "$T/failed.d")" "$a" "same seed through the control file"
[ "$(cat "$T/failed.c")" != "$a" ] || fail "seed 99 failed the same reads as seed 1234"
