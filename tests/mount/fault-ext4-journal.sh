#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ext4 over a loop device meets write errors on its journal: with a fault on the journal's
# byte range, ext4 aborts the journal and goes read-only, the faults' counters show the
# failed writes, and after the faults are cleared the superblock records the error, e2fsck
# repairs it and the files written before the fault are intact.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 e2fsck debugfs dumpe2fs
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 64M
dev=$(loop_attach "$MNT/disk" --direct-io=on)
mkfs.ext4 -q -F -b 4096 "$dev" >"$T/mkfs.log" 2>&1 || { cat "$T/mkfs.log" >&2; fail "mkfs.ext4 failed"; }
# Where the journal (inode 8) lives: its extents, "(L0-L1):P0-P1" (or "(L):P" for one block).
debugfs -R "stat <8>" "$dev" 2>/dev/null | sed -n '/^EXTENTS:/,$p' | tr ',' '\n' |
	sed -n 's/.*([0-9-]*):\([0-9]*\)\(-\([0-9]*\)\)\{0,1\}.*/\1 \3/p' >"$T/extents"
[ -s "$T/extents" ] || fail "cannot find the journal's blocks: $(debugfs -R 'stat <8>' "$dev" 2>&1 | tail -3)"
log "journal extents: $(tr '\n' ' ' <"$T/extents")"
mkdir "$T/ext"
mount -o errors=remount-ro "$dev" "$T/ext" || fail "mount ext4 failed"
track_mount "$T/ext"
for i in $(seq 20); do head -c 20000 /dev/urandom >"$T/ext/before$i"; done
sync -f "$T/ext" || fail "sync before the fault"
(cd "$T/ext" && sha256sum before*) >"$T/sums"

# One fault per extent of the journal, and nothing else of the disk.
while read -r first last; do
	[ -n "$last" ] || last=$first
	ctl fault add op=write offset=$((first * 4096)) len=$(((last - first + 1) * 4096)) error=EIO \
		>/dev/null || fail "fault add"
done <"$T/extents"
nf=$(wc -l <"$T/extents")
for i in $(seq 20); do head -c 20000 /dev/urandom >"$T/ext/after$i" 2>/dev/null; done
sync -f "$T/ext" 2>/dev/null && log "note: sync -f reported no error"
# ext4 aborts the journal and goes read-only ("ro", or "emergency_ro" on newer kernels).
# ext4 notices the aborted journal when an operation next starts a handle: keep trying one.
for i in $(seq 100); do
	awk -v m="$T/ext" '$2 == m {print $4}' /proc/mounts | grep -qE '^ro|emergency_ro' && break
	mkdir "$T/ext/probe$i" 2>/dev/null
	sync -f "$T/ext" 2>/dev/null
	sleep 0.1
done
awk -v m="$T/ext" '$2 == m {print $4}' /proc/mounts | grep -qE '^ro|emergency_ro' ||
	fail "ext4 did not go read-only: $(awk -v m="$T/ext" '$2 == m' /proc/mounts)"
touch "$T/ext/new" 2>"$T/touch.err" && fail "a file was created on the read-only ext4"
grep -q "Read-only file system" "$T/touch.err" || fail "touch: $(cat "$T/touch.err")"
assert_gt "$(stat_get write_fault_errors)" 0 "write_fault_errors"
inj=0
for i in $(seq "$nf"); do inj=$((inj + $(stat_get "fault_${i}_injected"))); done
assert_eq "$inj" "$(stat_get write_fault_errors)" "the journal's faults injected every error"
assert_eq "$(stat_get read_fault_errors)" 0 "no read touched by a write fault"

ctl fault clear || fail "fault clear"
umount "$T/ext" || umount -l "$T/ext"
# The superblock records the error, e2fsck repairs (exit 1: errors corrected), and then the
# files written before the fault are intact.
dumpe2fs -h "$dev" >"$T/sb.txt" 2>/dev/null || fail "dumpe2fs"
grep -q "^Filesystem state: *clean with errors" "$T/sb.txt" ||
	fail "the superblock records no error: $(grep -i state "$T/sb.txt")"
# The error recorded is the one that detected the abort: EIO, or EROFS from the next handle.
grep -qE "^FS Error count: *[1-9]" "$T/sb.txt" || fail "no error counted in the superblock"
rc=0
e2fsck -fy "$dev" >"$T/fsck.log" 2>&1 || rc=$?
sed 's/^/    | /' "$T/fsck.log" >&2
assert_eq "$rc" 1 "e2fsck -fy exit status (errors corrected)"
e2fsck -fn "$dev" >"$T/fsck2.log" 2>&1 || { cat "$T/fsck2.log" >&2; fail "not clean after repair"; }
mount -o ro "$dev" "$T/ext" || fail "mount after repair"
(cd "$T/ext" && sha256sum --quiet -c "$T/sums") || fail "files written before the fault differ"
umount "$T/ext"
loop_detach "$dev"
pd_stop
