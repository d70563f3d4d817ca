#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every field of a write log is checked before anything acts on it, by one validator that
# replay and explore share: a bad header (atomic unit 0, 3, 2^32-1; disk size 0) or a bad
# record (a discard of length 0, at offset 2^64-8, past the disk's end; a write past it; an
# unknown type or flag; epochs going back) makes replay --list, replay --flush/--crash and
# explore exit 2 with the same message naming the record, and the image stays as it was.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../wlog-lib.sh"

DISK=1048576
head -c $DISK /dev/urandom >"$T/base.img"
sum0=$(sha_of "$T/base.img")
cat >"$T/pass.sh" <<'EOS'
#!/bin/sh
exit 0
EOS
chmod +x "$T/pass.sh"

# A log: two flushed writes, then RECORD (a record header, a string of printf escapes), then
# one more write and a flush, so that --flush 2 writes the first ones before reaching it.
mklog() { # HEADER_ARGS RECORD_ARGS
	# shellcheck disable=SC2086 # word lists on purpose
	{
		wlog_hdr $1
		wlog_rec 1 1 0 4096; wlog_data 4096 aa
		wlog_rec 2 1 0 0
		wlog_rec 1 2 8192 4096; wlog_data 4096 bb
		[ -n "$2" ] && wlog_rec $2
		wlog_rec 1 3 16384 512; wlog_data 512 cc
		wlog_rec 2 3 0 0
	} >"$T/bad.log"
}

# check_bad WHAT HEADER_ARGS RECORD_ARGS MESSAGE: every reader refuses the log alike.
check_bad() {
	local what=$1 msg=$4 req
	mklog "$2" "$3"
	expect_exit 2 "$PLUGDISK" replay "$T/bad.log" --list
	grep -q -- "$msg" "$T/out" || fail "$what: replay --list: $(cat "$T/out")"
	grep -q "bad record after" "$T/out" && fail "$what: replay --list: $(cat "$T/out")"
	cp "$T/out" "$T/out.list"
	for req in "--flush 2" "--crash 1 --mode tear" "--crash 0"; do
		# shellcheck disable=SC2086
		expect_exit 2 "$PLUGDISK" replay "$T/bad.log" "$T/base.img" $req
		grep -q -- "$msg" "$T/out" || fail "$what: replay $req: $(cat "$T/out")"
		assert_eq "$(sha_of "$T/base.img")" "$sum0" "$what: image after replay $req"
	done
	expect_exit 2 "$PLUGDISK" explore -j 1 "$T/bad.log" "$T/base.img" -- "$T/pass.sh"
	grep -q -- "$msg" "$T/out" || fail "$what: explore: $(cat "$T/out")"
	# The same words after the program's name.
	assert_eq "$(sed 's/^plugdisk explore: //' "$T/out")" \
		"$(sed 's/^plugdisk replay: //' "$T/out.list")" "$what: explore's and replay's message"
	log "$what: $(cat "$T/out")"
}

# The records' bytes: the header is 32, each write record 32 + its data.
R4=$((32 + 2 * (32 + 4096) + 32)) # the fourth record, after write, flush, write
check_bad "atomic unit 0" "2 0 $DISK" "" "header: atomic write unit 0"
check_bad "atomic unit 3" "2 3 $DISK" "" "header: atomic write unit 3 "
check_bad "atomic unit 2^32-1" "2 4294967295 $DISK" "" "header: atomic write unit 4294967295"
check_bad "atomic unit 256" "2 256 $DISK" "" "header: atomic write unit 256"
check_bad "atomic unit 32768" "2 32768 $DISK" "" "header: atomic write unit 32768"
check_bad "disk size 0" "2 4096 0" "" "header: disk size 0"
check_bad "end past the file" "2 4096 $DISK 99999999" "" "header: end 99999999"
check_bad "discard of 0 bytes" "2 4096 $DISK" "3 2 0 0" "record 4 at byte $R4: discard length 0"
check_bad "discard at 2^64-8" "2 4096 $DISK" "3 2 18446744073709551608 8" \
	"record 4 at byte $R4: discard past the disk's end"
check_bad "discard past the end" "2 4096 $DISK" "3 2 1044480 8192" \
	"record 4 at byte $R4: discard past the disk's end"
check_bad "discard at the end" "2 4096 $DISK" "3 2 $DISK 512" \
	"record 4 at byte $R4: discard past the disk's end"
check_bad "flush with a length" "2 4096 $DISK" "2 2 0 512" \
	"record 4 at byte $R4: flush offset or length not 0"
check_bad "unknown type" "2 4096 $DISK" "9 2 0 0" "record 4 at byte $R4: unknown type 9"
check_bad "unknown flag" "2 4096 $DISK" "3 2 0 4096 2" "record 4 at byte $R4: discard unknown flags"
check_bad "epoch back" "2 4096 $DISK" "3 1 0 4096" \
	"record 4 at byte $R4: discard in epoch 1 after epoch 2: epochs never go back"
check_bad "unit change in version 2" "2 4096 $DISK" "7 2 0 512" \
	"record 4 at byte $R4: type 7 in a version 2 log"
check_bad "unit change to 3" "3 4096 $DISK" "7 2 0 3" \
	"record 4 at byte $R4: atomic unit change unit not a power of two"

# At the boundary, good: a discard of the disk's last 512 bytes, units 512 and 16384.
for hdr in "2 512 $DISK" "2 16384 $DISK"; do
	mklog "$hdr" "3 2 $((DISK - 512)) 512"
	expect_exit 0 "$PLUGDISK" replay "$T/bad.log" --list
	cp "$T/base.img" "$T/r.img"
	expect_exit 0 "$PLUGDISK" replay "$T/bad.log" "$T/r.img" --crash 1 --mode tear
	expect_exit 0 "$PLUGDISK" explore -j 1 "$T/bad.log" "$T/base.img" -- "$T/pass.sh"
done
exit 0
