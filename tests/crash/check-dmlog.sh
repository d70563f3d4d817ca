#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dm-log-writes logs: one written byte by byte from the documented layout (the kernel's
# Documentation/admin-guide/device-mapper/log-writes.rst) is read by replay and explore, with
# its marks; a plugdisk log exported with --export-dm-log-writes reads back to the same
# flush states; bad fields exit 2 naming the entry.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd python3 cmp

# The kernel's layout, written here from the format: super { magic, version 1, entries,
# sector size }, then per entry one sector { sector, nr_sectors, flags, data_len } (+ a
# mark's text) and a write's sectors. Flags: FLUSH 1, FUA 2, DISCARD 4, MARK 8.
python3 - "$T/k.log" "$T/expect" <<'EOS'
import struct, sys
ss = 512
ent = []
def e(sector, n, flags, text=b"", data=b""):
    h = struct.pack("<QQQQ", sector, n, flags, len(text)) + text
    ent.append(h + b"\0" * (ss - len(h)) + data)
a, b, c = b"A" * 1024, b"B" * 512, b"C" * 512
e(0, 2, 0, data=a)            # flushed by the next entry
e(0, 0, 1)                    # flush 1
e(0, 0, 8, b"after-a")        # a mark
e(4, 1, 2, data=b)            # a FUA write: flush 2
e(6, 1, 0, data=c)            # never flushed
e(8, 2, 4)                    # a discard
sup = struct.pack("<QQQI", 0x6a736677736872, 1, len(ent), ss)
open(sys.argv[1], "wb").write(sup + b"\0" * (ss - len(sup)) + b"".join(ent))
img = bytearray(8192); img[0:1024] = a; img[2048:2560] = b
open(sys.argv[2], "wb").write(img)
EOS
"$PLUGDISK" replay "$T/k.log" --list >"$T/list" || fail "replay --list of a dm log"
cat "$T/list" >&2
grep -q '^mark after 1 writes: after-a$' "$T/list" || fail "the mark is not listed"
assert_eq "$(grep -c '^flush ' "$T/list")" 2 "flushes (one flush, one FUA write)"
truncate -s 8192 "$T/img"
"$PLUGDISK" replay "$T/k.log" "$T/img" --flush 2 >/dev/null || fail "replay --flush 2"
cmp "$T/img" "$T/expect" || fail "flush 2 of the dm log is not its first two writes"
"$PLUGDISK" explore --list-states "$T/k.log" "$T/img" >"$T/states" || fail "explore --list-states"
[ -s "$T/states" ] || fail "no states"
truncate -s 8192 "$T/base"
rc=0
"$PLUGDISK" explore --json "$T/k.log" "$T/base" -- true >"$T/x.json" || rc=$?
assert_eq "$rc" 0 "explore of a dm log with a checker that passes"

# Bad fields: an unknown flag, a write past the log's end, a mark with sectors.
for bad in "528:40" "4104:ff" "2568:01"; do
	cp "$T/k.log" "$T/bad.log"
	printf "\\x${bad#*:}" | dd of="$T/bad.log" bs=1 seek="${bad%:*}" conv=notrunc status=none
	rc=0
	"$PLUGDISK" replay "$T/bad.log" --list >/dev/null 2>"$T/err" || rc=$?
	assert_eq "$rc" 2 "replay of a dm log with byte ${bad%:*} set to ${bad#*:}"
	grep -q 'entry [0-9]* at byte\|super block' "$T/err" || fail "message: $(cat "$T/err")"
done

# A plugdisk log exported and read back: every flush state the same.
truncate -s 16M "$T/disk.img"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/p.log"
for i in 1 2 3 4; do
	head -c 64K /dev/urandom | dd of="$MNT/disk" bs=64K seek=$((i * 3)) oflag=direct \
		conv=notrunc,fsync status=none || fail "dd step $i"
	echo "mark step $i" >"$MNT/control" || fail "mark $i"
done
head -c 16K /dev/urandom | dd of="$MNT/disk" bs=16K seek=1 oflag=direct conv=notrunc \
	status=none || fail "last dd"
pd_stop
"$PLUGDISK" replay "$T/p.log" --export-dm-log-writes "$T/p.dm" >&2 || fail "export"
"$PLUGDISK" replay "$T/p.dm" --list >"$T/dm.list" || fail "replay --list of the export"
assert_eq "$(grep -c '^mark after [0-9]* writes: step [1-4]$' "$T/dm.list")" 4 "exported marks"
n=$(grep -c '^flush ' "$T/dm.list")
assert_eq "$n" "$("$PLUGDISK" replay "$T/p.log" --list | grep -c '^flush ')" "flush count"
for f in $(seq 0 "$n"); do
	truncate -s 16M "$T/a.img" "$T/b.img"
	"$PLUGDISK" replay "$T/p.log" "$T/a.img" --flush "$f" >/dev/null || fail "flush $f"
	"$PLUGDISK" replay "$T/p.dm" "$T/b.img" --flush "$f" >/dev/null || fail "dm flush $f"
	cmp -s "$T/a.img" "$T/b.img" || fail "flush $f differs after the round trip"
	rm -f "$T/a.img" "$T/b.img"
done
rc=0
"$PLUGDISK" replay "$T/p.log" --export-dm-log-writes "$T/x.dm" --sector-size 3000 \
	2>/dev/null || rc=$?
assert_eq "$rc" 2 "a bad --sector-size"
