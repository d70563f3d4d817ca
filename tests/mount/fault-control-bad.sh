#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A bad fault command fails its write with EINVAL, logs one line naming it, and changes
# nothing: the listing, the counters and the I/O stay as they were.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 4M --set "faults=op=read offset=1M len=4K error=EIO seed=1"
ctl fault add op=write offset=2M len=4K error=ENOSPC seed=2 >/dev/null || fail "fault add"
assert_eq "$($P -d "$D" pread 1048576 4096)" EIO "the configured fault acts"
ctl fault list >"$T/before" || fail "fault list"
cp "$MNT/stats" "$T/stats.before"

bad=(
	"fault add op=write bogus=1"
	"fault add op=write error=EIO lie"
	"fault add op=read lie"
	"fault add error=ENOSYS"
	"fault add latency=5"
	"fault add op=write offset=1M len=0 error=EIO"
	"fault add badblocks=1 op=read"
	"fault add"
	"fault del 99"
	"fault del abc"
	"fault del"
	"fault clear now"
	"fault list all"
	"fault"
	"fault frob"
	"release 99"
	"release x"
)
for cmd in "${bad[@]}"; do
	n0=$(grep -c "control: '" "$T/daemon.log")
	# shellcheck disable=SC2086
	if ctl $cmd >"$T/out" 2>&1; then fail "'$cmd' succeeded"; fi
	grep -q "Invalid argument" "$T/out" || fail "'$cmd' did not fail with EINVAL: $(cat "$T/out")"
	n1=$(grep -c "control: '" "$T/daemon.log")
	assert_eq "$((n1 - n0))" 1 "log lines for '$cmd'"
	grep -qF "control: '$cmd'" "$T/daemon.log" || fail "the log does not name '$cmd'"
done
# ENOSYS says why it is refused.
ctl fault add error=ENOSYS >"$T/out" 2>&1 && fail "error=ENOSYS accepted"
grep -q "error=ENOSYS: refused: the kernel's FUSE client takes ENOSYS as \"not implemented\"" \
	"$T/out" || fail "ENOSYS: no reason: $(cat "$T/out")"
ctl fault add error=38 >"$T/out" 2>&1 && fail "error=38 accepted"
grep -q "refused" "$T/out" || fail "error=38: no reason: $(cat "$T/out")"
ctl fault list >"$T/after" || fail "fault list"
diff "$T/before" "$T/after" >&2 || fail "the faults changed"
assert_eq "$(stat_get faults_active)" 2 "faults_active"
for k in fault_1_matched fault_1_injected fault_2_matched read_fault_errors write_fault_errors; do
	assert_eq "$(stat_get "$k")" "$(awk -v k="$k" '$1 == k {print $2}' "$T/stats.before")" "$k"
done
assert_eq "$($P -d "$D" pwrite 2097152 4096 1)" ENOSPC "the control fault still acts"
assert_eq "$($P -d "$D" pread 0 4096)" 4096 "and nothing else fails"
pd_stop
