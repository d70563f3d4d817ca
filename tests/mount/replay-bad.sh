#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk replay refuses what the log cannot meet before it touches the image: a flush or a
# crash beyond the log's flushes fails with the image unchanged (and a missing image not
# created); an image of the wrong size is named once; the output speaks of the replay only.
. "$(dirname "$0")/../lib.sh"
require_fuse

pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/w.log"
for i in 1 2 3; do
	head -c 64K /dev/urandom | dd of="$MNT/disk" bs=64K seek=$((i - 1)) oflag=direct \
		conv=notrunc,fsync status=none || fail "dd step $i"
done
pd_stop
"$PLUGDISK" replay "$T/w.log" --list >"$T/list" || fail "replay --list failed"
flushes=$(awk '/^end after/ {print $(NF - 1)}' "$T/list")
assert_gt "$flushes" 2 "flushes in the log"

# A base image with data of its own: a failed replay must leave every byte of it.
head -c 16M /dev/urandom >"$T/base.img"
sum0=$(sha_of "$T/base.img")
for req in "--flush $((flushes + 1))" "--flush 5000" "--crash $((flushes + 1))"; do
	# shellcheck disable=SC2086 # req is two words on purpose
	expect_exit 1 "$PLUGDISK" replay "$T/w.log" "$T/base.img" $req
	grep -q "the log has $flushes flushes, not" "$T/out" || fail "$req: message: $(cat "$T/out")"
	assert_eq "$(sha_of "$T/base.img")" "$sum0" "image checksum after the failed replay $req"
	# shellcheck disable=SC2086
	expect_exit 1 "$PLUGDISK" replay "$T/w.log" "$T/new.img" $req
	[ -e "$T/new.img" ] && fail "$req: the failed replay created the image"
done

# The last flush is in range: the replay succeeds and changes the image.
expect_exit 0 "$PLUGDISK" replay "$T/w.log" "$T/base.img" --flush "$flushes"
[ "$(sha_of "$T/base.img")" != "$sum0" ] || fail "--flush $flushes left the image as it was"
# Only the replay's own summary: no drive settings (cache size, destage, power-cut report).
assert_eq "$(wc -l <"$T/out")" 1 "lines printed by a replay"
grep -q "^replay: flush $flushes, " "$T/out" || fail "summary: $(cat "$T/out")"
expect_exit 0 "$PLUGDISK" replay "$T/w.log" "$T/base.img" --crash 1 --mode tear --seed 7 \
	--atomic 512
assert_eq "$(wc -l <"$T/out")" 1 "lines printed by a crash replay"
grep -q "^replay: flush 1, .*tear cut with seed 7, atomic write 512:" "$T/out" ||
	fail "crash summary: $(cat "$T/out")"

# The wrong size: the path once, the log's size, no advice about an option replay lacks.
truncate -s 8M "$T/small.img"
expect_exit 1 "$PLUGDISK" replay "$T/w.log" "$T/small.img" --flush 1
assert_eq "$(grep -o "$T/small.img" "$T/out" | wc -l)" 1 "times the message names the image"
grep -q "16777216 bytes" "$T/out" || fail "wrong size: the log's size missing: $(cat "$T/out")"
grep -q "disk.size" "$T/out" && fail "wrong size: advice about disk.size: $(cat "$T/out")"
assert_eq "$(stat -c %s "$T/small.img")" 8388608 "size of the refused image"
exit 0
