#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk replay on a log written here byte by byte (the format in plugdisk(8) and doc/replay.md): flushes that
# complete out of epoch order and a failed flush. Flush N is the N-th completed flush record;
# it makes durable every write of an epoch up to the largest its records 1..N closed. A
# version 1 log still replays; a newer version is refused by name.
. "$(dirname "$0")/../lib.sh"
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

le32() {
	local v=$1
	printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $(((v >> 8) & 255)) \
		$(((v >> 16) & 255)) $(((v >> 24) & 255)))"
}
le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32)); }
# hdr VERSION: the header of a 64 KiB disk with a 4 KiB atomic write unit.
hdr() { printf 'PDWLOG01'; le32 "$1"; le32 4096; le64 65536; le64 0; }
# rec TYPE EPOCH [OFFSET]: a record; a write (type 1) carries 4 KiB of $T/dN, N = OFFSET / 4K.
rec() {
	local off=${3:-0} len=0
	[ "$1" = 1 ] && len=4096
	le32 "$1"; le32 0; le64 "$2"; le64 "$off"; le64 "$len"
	[ "$1" = 1 ] && cat "$T/d$((off / 4096))"
	return 0
}
for i in 1 2 3 4 5 6; do head -c 4096 /dev/urandom >"$T/d$i"; done

# Flush A closes epoch 1, flush B epoch 2; B completes first. Flush C (epoch 3) fails;
# flush D closes epoch 4. W6 is never flushed.
{
	hdr 2
	rec 1 1 4096  # W1
	rec 1 2 8192  # W2
	rec 1 3 12288 # W3
	rec 2 2       # flush 1 (B)
	rec 2 1       # flush 2 (A)
	rec 1 3 16384 # W4
	rec 5 3       # C failed
	rec 1 4 20480 # W5
	rec 2 4       # flush 3 (D)
	rec 1 5 24576 # W6
} >"$T/w.log"

"$PLUGDISK" replay "$T/w.log" --list >"$T/list" || fail "replay --list failed"
cat "$T/list" >&2
assert_eq "$(grep -c '^flush ' "$T/list")" 3 "completed flushes listed"
grep -q '^flush 2 epoch 1 .*epochs up to 2 were durable already' "$T/list" ||
	fail "the out-of-order flush is not shown as such"
grep -q '^failed flush (epoch 3)' "$T/list" || fail "the failed flush is not listed"

# image ARGS... : replay onto a fresh image; print which of W1..W6 it holds.
image() {
	rm -f "$T/r.img"
	"$PLUGDISK" replay "$T/w.log" "$T/r.img" "$@" >/dev/null 2>"$T/err" ||
		{ cat "$T/err" >&2; fail "replay $* failed"; }
	local i out=""
	for i in 1 2 3 4 5 6; do
		cmp -s <(dd if="$T/r.img" bs=4096 skip="$i" count=1 status=none) "$T/d$i" &&
			out="$out W$i"
	done
	echo "${out# }"
}
assert_eq "$(image --flush 1)" "W1 W2" "--flush 1 (B, epoch 2)"
assert_eq "$(image --flush 2)" "W1 W2" "--flush 2 (A, epoch 1, after B)"
assert_eq "$(image --flush 3)" "W1 W2 W3 W4 W5" "--flush 3 (D, after the failed C)"
assert_eq "$(image --crash 2 --mode drop)" "W1 W2" "--crash 2 drop"
assert_eq "$(image --crash 3 --mode drop)" "W1 W2 W3 W4 W5" "--crash 3 drop"
expect_exit 1 "$PLUGDISK" replay "$T/w.log" "$T/r.img" --flush 4
grep -q "the log has 3 flushes, not 4" "$T/out" || fail "--flush 4: $(cat "$T/out")"

# Version 1 (no failed-flush records): the same numbering.
{ hdr 1; rec 1 1 4096; rec 2 1; rec 1 2 8192; rec 1 3 12288; rec 2 3; } >"$T/w.log"
assert_eq "$(image --flush 2)" "W1 W2 W3" "version 1 --flush 2 after a flush that left no record"
{ hdr 1; rec 5 1; } >"$T/w.log"
expect_exit 2 "$PLUGDISK" replay "$T/w.log" --list
grep -q "record 1 at byte 32: type 5 in a version 1 log" "$T/out" || fail "version 1: $(cat "$T/out")"
{ hdr 4; rec 2 1; } >"$T/w.log"
expect_exit 2 "$PLUGDISK" replay "$T/w.log" --list
grep -q "write log version 4; this plugdisk reads versions 1 to 3" "$T/out" ||
	fail "version 4: $(cat "$T/out")"
