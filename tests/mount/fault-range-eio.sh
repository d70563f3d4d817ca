#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An injected EIO on a byte range (fault add op=read,write offset=4M len=64K error=EIO)
# reaches pread/pwrite, dd and fio with errno EIO for I/O that touches the range, and leaves
# everything else readable, writable and intact; the fault's and the ops' counters say so,
# and once the fault is deleted the range works again.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio dd
build_helper pdio
P=$T/pdio
pd_start -s 16M
D=$MNT/disk
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

assert_eq "$($P "$D" write 0 16777216 7 fsync)" "$(printf '16777216\n0')" "fill before the fault"
id=$(ctl fault add op=read,write offset=4M len=64K error=EIO) || fail "fault add failed"
assert_eq "$id" 1 "the first fault's id"

# pread/pwrite, O_DIRECT so that the page cache does not answer: inside, across the start,
# across the end; and just outside on both sides.
assert_eq "$($P -d "$D" pread 4194304 4096)" EIO "pread inside the range"
assert_eq "$($P -d "$D" pread 4190208 8192)" EIO "pread across the range's start"
assert_eq "$($P -d "$D" pread 4255744 4096)" EIO "pread at the range's last block"
assert_eq "$($P -d "$D" pwrite 4227072 4096 9)" EIO "pwrite inside the range"
assert_eq "$($P -d "$D" pread 4190208 4096)" 4096 "pread just before the range"
assert_eq "$($P -d "$D" pread 4259840 4096)" 4096 "pread just after the range"
assert_eq "$($P -d "$D" pwrite 8388608 4096 9)" 4096 "pwrite elsewhere"

# dd: a direct read through the range fails with EIO; one beside it does not.
if dd if="$D" of=/dev/null bs=64K skip=64 count=1 iflag=direct 2>"$T/dd.err"; then
	fail "dd read through the range succeeded"
fi
grep -q "Input/output error" "$T/dd.err" || fail "dd did not report EIO: $(cat "$T/dd.err")"
dd if="$D" of=/dev/null bs=64K skip=65 count=16 iflag=direct status=none || fail "dd after the range failed"
if dd if=/dev/zero of="$D" bs=4K seek=1030 count=1 oflag=direct conv=notrunc 2>"$T/dd.err"; then
	fail "dd write into the range succeeded"
fi
grep -q "Input/output error" "$T/dd.err" || fail "dd write did not report EIO: $(cat "$T/dd.err")"

# fio: random reads over 3-5 MiB meet the range and report errno 5; continue_on_error
# lets it count them.
fio --name=r --filename="$D" --rw=randread --bs=4k --direct=1 --offset=3M --size=2M \
	--number_ios=2048 --randrepeat=1 --continue_on_error=read --output-format=json \
	--output="$T/fio.json" >/dev/null 2>"$T/fio.err" || true
errs=$(jq '.jobs[0].total_err' "$T/fio.json") || fail "no fio result: $(cat "$T/fio.err")"
first=$(jq '.jobs[0].first_error' "$T/fio.json")
assert_gt "$errs" 0 "fio errors"
assert_eq "$first" 5 "fio's first error (EIO)"
fio --name=ok --filename="$D" --rw=randread --bs=4k --direct=1 --offset=5M --size=2M \
	--number_ios=512 --output-format=json --output="$T/fio2.json" >/dev/null 2>&1 ||
	fail "fio outside the range failed"
assert_eq "$(jq '.jobs[0].error' "$T/fio2.json")" 0 "fio outside the range"

# Counters: every failed request was matched and injected; none outside the range.
inj=$(stat_get fault_1_injected)
assert_eq "$inj" "$(stat_get fault_1_matched)" "matched = injected for an always fault"
assert_eq "$(($(stat_get read_fault_errors) + $(stat_get write_fault_errors)))" "$inj" "per-op errors"
assert_gt "$(stat_get read_fault_errors)" "$errs" "read errors at least fio's plus the others"
ctl fault list | grep -q "^fault add op=read,write offset=4194304 len=65536 error=EIO seed=[0-9]* # id=1 source=control matched=$inj injected=$inj$" ||
	fail "listing: $(ctl fault list)"

# Deleted: the range works again, and outside it nothing changed.
ctl fault del 1 || fail "fault del"
assert_eq "$(stat_get faults_active)" 0 "no fault left"
assert_eq "$($P -d "$D" verify 0 4194304 7)" "4194304 ok" "data before the range"
assert_eq "$($P -d "$D" verify 4194304 65536 7)" "65536 ok" "the range itself was never written"
assert_eq "$($P -d "$D" verify 4259840 4128768 7)" "4128768 ok" "data after the range"
assert_eq "$($P -d "$D" verify 8392704 8384512 7)" "8384512 ok" "the rest"
pd_stop
