#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# explore's ready checkers (checkers/plugdisk-check-*): each passes a clean image and fails
# a corrupted one (ext4: its superblock; xfs: its superblock, and a free space btree block
# that the mount does not read, for xfs_repair to find; btrfs: its superblock, and a leaf of
# its file tree, for btrfs check to find; sqlite: a torn b-tree page, a lost acknowledged
# row, a missing table), run by hand and under `plugdisk explore` (states side by side,
# -j 2); misuse exits 2; `make install` installs them where an installed plugdisk finds
# them by short name; and no mount, loop device or scratch file is left behind, the mount
# not even seen outside while a checker runs, nor left when it is killed by SIGKILL.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 e2fsck mkfs.xfs xfs_repair xfs_db mkfs.btrfs btrfs btrfs-map-logical \
	sqlite3 unshare blkid jq

for fs in xfs btrfs; do
	grep -qw "$fs" /proc/filesystems || modprobe -q "$fs" || skip "this kernel has no $fs"
done

CK=$TOP/checkers
# The checkers' scratch directories (their mountpoints), to show that they remove them.
export TMPDIR=$T/tmp
mkdir -p "$TMPDIR" "$T/fs"

# fs_image FS SIZE IMG: FS on IMG with a directory of 300 small files (a file tree of many
# leaves on btrfs) and a SQLite database t.db, table t, rows 1 to 8 of 3000 random bytes.
fs_image() {
	local fs=$1 dev i
	truncate -s "$2" "$3"
	case $fs in
	ext4) mkfs.ext4 -q -F "$3" ;;
	xfs) mkfs.xfs -q -f "$3" ;;
	btrfs) mkfs.btrfs -q -f -m single "$3" >/dev/null ;;
	esac || fail "mkfs.$fs failed"
	dev=$(loop_attach "$3")
	mount -t "$fs" "$dev" "$T/fs" || fail "mount of the $fs image failed"
	track_mount "$T/fs"
	mkdir "$T/fs/d"
	for i in $(seq 300); do echo "$i" >"$T/fs/d/a-file-with-a-long-name-$i"; done
	sqlite3 "$T/fs/t.db" 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);' ||
		fail "sqlite3 create failed"
	for i in $(seq 8); do
		sqlite3 "$T/fs/t.db" "INSERT INTO t VALUES ($i, hex(randomblob(3000)));" ||
			fail "insert $i failed"
	done
	umount "$T/fs" || fail "umount of the $fs image failed"
	loop_detach "$dev"
}

# check WANT CHECKER IMG [ARGS...]: run CHECKER (PLUGDISK_STATE on a copy of IMG) and
# expect exit status WANT; its output in $T/out.
check() {
	local want=$1 ck=$2 img=$3
	shift 3
	cp --sparse=always "$img" "$T/state.img"
	PLUGDISK_STATE=$T/state.img expect_exit "$want" "$CK/$ck" "$@"
	log "$ck on $(basename "$img"): exit $want: $(head -n 1 "$T/out")"
}

# first_line_is PATTERN: the output's first line matches the extended regex PATTERN.
first_line_is() {
	head -n 1 "$T/out" | grep -qE "$1" || { cat "$T/out" >&2; fail "first line is not /$1/"; }
}

# corrupt IMG OFFSET LEN: LEN random bytes at OFFSET of IMG.
corrupt() {
	head -c "$3" /dev/urandom | dd of="$1" bs=1 seek="$2" conv=notrunc status=none ||
		fail "dd into $1 failed"
}

# ---- Misuse: exit 2 with a message; --help exits 0. ----
for c in ext4 xfs btrfs sqlite; do
	expect_exit 0 "$CK/plugdisk-check-$c" --help
	grep -q "^Usage: plugdisk explore LOG BASE_IMAGE -- plugdisk-check-$c" "$T/out" ||
		fail "plugdisk-check-$c --help gives no usage line"
	expect_exit 2 "$CK/plugdisk-check-$c" --no-such-option
	grep -q "unknown option" "$T/out" || fail "plugdisk-check-$c: $(cat "$T/out")"
	expect_exit 2 env -u PLUGDISK_STATE "$CK/plugdisk-check-$c" t.db t
	PLUGDISK_STATE=$T/missing.img expect_exit 2 "$CK/plugdisk-check-$c" t.db
done
for c in ext4 xfs btrfs; do
	PLUGDISK_STATE=$T/missing.img expect_exit 2 "$CK/plugdisk-check-$c" extra
	grep -q "no arguments expected" "$T/out" || fail "plugdisk-check-$c extra: $(cat "$T/out")"
done
expect_exit 2 "$CK/plugdisk-check-sqlite"
expect_exit 2 "$CK/plugdisk-check-sqlite" -t
expect_exit 2 "$CK/plugdisk-check-sqlite" t.db 'x; DROP TABLE t'
expect_exit 2 "$CK/plugdisk-check-sqlite" -k 'id=1 OR 1' t.db t
log "misuse exits 2, --help 0"

# ---- By hand: clean and corrupted images. ----
fs_image ext4 32M "$T/ext4.img"
fs_image xfs 320M "$T/xfs.img"
fs_image btrfs 128M "$T/btrfs.img"
for fs in ext4 xfs btrfs; do
	check 0 "plugdisk-check-$fs" "$T/$fs.img"
	first_line_is "^$fs: clean$"
done

cp "$T/ext4.img" "$T/bad.img"
corrupt "$T/bad.img" 1024 1024 # the primary superblock: e2fsck takes a backup's, and differs
check 1 plugdisk-check-ext4 "$T/bad.img"
first_line_is '^ext4: e2fsck -fn exit [0-9]+: .'
grep -q '^  Pass 1' "$T/out" || fail "plugdisk-check-ext4 shows no e2fsck lines"

cp --sparse=always "$T/xfs.img" "$T/bad.img"
corrupt "$T/bad.img" 0 512
check 1 plugdisk-check-xfs "$T/bad.img"
first_line_is '^xfs: mount failed \(log replay\): '
# AG 1's free space btree root: the mount does not read it, xfs_repair does.
cp --sparse=always "$T/xfs.img" "$T/bad.img"
agblocks=$(xfs_db -r -c 'sb 0' -c 'p agblocks' "$T/bad.img" | awk '{print $3}')
bsize=$(xfs_db -r -c 'sb 0' -c 'p blocksize' "$T/bad.img" | awk '{print $3}')
bno=$(xfs_db -r -c 'agf 1' -c 'p bnoroot' "$T/bad.img" | awk '{print $3}')
[[ $agblocks$bsize$bno =~ ^[0-9]+$ ]] || fail "xfs_db: agblocks '$agblocks' blocksize '$bsize' bnoroot '$bno'"
corrupt "$T/bad.img" $(((agblocks + bno) * bsize)) "$bsize"
check 1 plugdisk-check-xfs "$T/bad.img"
first_line_is '^xfs: xfs_repair -n exit 1: .'

cp --sparse=always "$T/btrfs.img" "$T/bad.img"
corrupt "$T/bad.img" 65536 4096
check 1 plugdisk-check-btrfs "$T/bad.img"
first_line_is '^btrfs: mount failed \(log replay\): '
# A leaf of the file tree past the first (which holds the root directory, read at mount).
cp --sparse=always "$T/btrfs.img" "$T/bad.img"
leaf=$(btrfs inspect-internal dump-tree -t 5 "$T/bad.img" | awk '/^leaf [0-9]+ items/ {print $2}' |
	sed -n 3p)
phys=$(btrfs-map-logical -l "$leaf" "$T/bad.img" | awk '$1 == "mirror" && $2 == 1 {print $6}')
[[ $phys =~ ^[0-9]+$ ]] || fail "no third leaf in the btrfs file tree (leaf '$leaf', at '$phys')"
corrupt "$T/bad.img" $((phys + 256)) 1024
check 1 plugdisk-check-btrfs "$T/bad.img"
first_line_is '^btrfs: btrfs check exit [0-9]+: .'

# sqlite: the marks name rows; other marks are ignored.
printf 'setup\n' >"$T/marks"
for i in $(seq 8); do echo "row $i"; done >>"$T/marks"
echo "row t 3" >>"$T/marks"
export PLUGDISK_MARKS=$T/marks
for fs in ext4 xfs btrfs; do
	check 0 plugdisk-check-sqlite "$T/$fs.img" /t.db t
	first_line_is '^sqlite: t.db: integrity ok, 9 acknowledged rows present$'
done
echo "row 9" >>"$T/marks"
check 1 plugdisk-check-sqlite "$T/ext4.img" t.db t
first_line_is '^sqlite: t.db: acknowledged row 9 of t is lost$'
check 1 plugdisk-check-sqlite "$T/xfs.img" t.db t u
first_line_is '^sqlite: t.db: table u is missing$'
grep -q '^sqlite: t.db: acknowledged row 9 of t is lost$' "$T/out" || fail "row 9 not said lost"
check 1 plugdisk-check-sqlite "$T/ext4.img" gone.db t
first_line_is '^sqlite: gone.db is missing$'
echo "row 1 2 3" >>"$T/marks"
check 2 plugdisk-check-sqlite "$T/ext4.img" t.db t
printf 'row 1\n' >"$T/marks"
check 2 plugdisk-check-sqlite "$T/ext4.img" t.db
# A torn page: the first half of page 2 (t's root, 4 KiB pages), as a write cut short left it.
cp "$T/ext4.img" "$T/bad.img"
dev=$(loop_attach "$T/bad.img")
mount -t ext4 "$dev" "$T/fs" || fail "mount of the sqlite image failed"
dd if=/dev/zero of="$T/fs/t.db" bs=2048 seek=2 count=1 conv=notrunc status=none || fail "dd failed"
umount "$T/fs" || fail "umount failed"
loop_detach "$dev"
check 1 plugdisk-check-sqlite "$T/bad.img" t.db t
first_line_is '^sqlite: t.db: integrity_check: '
log "by hand: every checker passes its clean images and fails the corrupted ones"

# ---- Under explore: every state of the log is its base (its writes rewrite the base's own
# last 12 KiB, three pending then a flush), so a clean base passes every state and a
# corrupted one fails every state. ----
# record FS: the log $T/FS.log over $T/FS.img.
record() {
	local img=$T/$1.img size blocks i
	size=$(stat -c %s "$img")
	blocks=$((size / 4096))
	cp --sparse=always "$img" "$T/disk.img"
	pd_start -i "$T/disk.img" -s "$size" --set cache.mode=writeback --set "cache.log=$T/$1.log"
	for i in 3 2 1; do
		dd if="$img" of="$MNT/disk" bs=4096 skip=$((blocks - i)) seek=$((blocks - i)) count=1 \
			conv=notrunc oflag=direct status=none || fail "dd into $MNT/disk failed"
	done
	sync "$MNT/disk" || fail "fsync of $MNT/disk failed"
	pd_stop
}

# explore_with WANT FS BASE CHECKER [ARGS...]: explore $T/FS.log over BASE with CHECKER;
# expect exit WANT, with every checked state passing (0) or failing (1). Report in $T/x.json.
explore_with() {
	local want=$1 fs=$2 base=$3 ck=$4 rc=0 checked failed
	shift 4
	"$PLUGDISK" explore -j 2 --json "$T/$fs.log" "$base" -- "$CK/$ck" "$@" >"$T/x.json" ||
		rc=$?
	checked=$(jq .checked "$T/x.json")
	failed=$(jq .failed "$T/x.json")
	log "explore $fs.log over $(basename "$base") -- $ck: exit $rc, $checked checked, $failed failed"
	[ "$rc" = "$want" ] || { jq -r '.failures[:2][].output' "$T/x.json" >&2; fail "explore exit $rc"; }
	assert_gt "$checked" 3 "states checked"
	[ "$want" = 0 ] || assert_eq "$failed" "$checked" "states failed"
}

unset PLUGDISK_MARKS
for fs in ext4 xfs btrfs; do
	record "$fs"
	explore_with 0 "$fs" "$T/$fs.img" "plugdisk-check-$fs"
done
cp "$T/ext4.img" "$T/bad.img"
corrupt "$T/bad.img" 1024 1024
explore_with 1 ext4 "$T/bad.img" plugdisk-check-ext4
jq -e '[.failures[].output | startswith("ext4: e2fsck -fn exit")] | all' "$T/x.json" >/dev/null ||
	fail "a failing ext4 state's output does not lead with e2fsck's verdict"
cp --sparse=always "$T/xfs.img" "$T/bad.img"
corrupt "$T/bad.img" $(((agblocks + bno) * bsize)) "$bsize"
explore_with 1 xfs "$T/bad.img" plugdisk-check-xfs
jq -e '[.failures[].output | startswith("xfs: xfs_repair -n exit 1")] | all' "$T/x.json" \
	>/dev/null || fail "a failing xfs state's output does not lead with xfs_repair's verdict"
cp --sparse=always "$T/btrfs.img" "$T/bad.img"
corrupt "$T/bad.img" $((phys + 256)) 1024
explore_with 1 btrfs "$T/bad.img" plugdisk-check-btrfs
explore_with 0 ext4 "$T/ext4.img" plugdisk-check-sqlite t.db t
explore_with 1 ext4 "$T/ext4.img" plugdisk-check-sqlite t.db t missing_table
log "under explore: clean bases pass every state, corrupted ones fail every state"

# ---- Installed: make install puts them in PREFIX/libexec/plugdisk, where the installed
# plugdisk finds one by its short name (not on PATH); a name found nowhere is bad input. ----
require_cmd make
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP" --no-print-directory install \
	B="$(dirname "$PLUGDISK")" PREFIX="$T/opt" SYSCONFDIR="$T/etc" >"$T/install.out" 2>&1 ||
	fail "make install: $(cat "$T/install.out")"
for c in ext4 xfs btrfs sqlite; do
	[ -x "$T/opt/libexec/plugdisk/plugdisk-check-$c" ] || fail "plugdisk-check-$c not installed"
done
[ -z "$(type -P plugdisk-check-ext4)" ] || fail "plugdisk-check-ext4 is on PATH already"
rc=0
"$T/opt/bin/plugdisk" explore -j 2 "$T/ext4.log" "$T/ext4.img" -- plugdisk-check-ext4 \
	>"$T/x.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || { cat "$T/x.out" >&2; fail "explore -- plugdisk-check-ext4 (installed): exit $rc"; }
cp "$T/ext4.img" "$T/bad.img"
corrupt "$T/bad.img" 1024 1024
rc=0
"$T/opt/bin/plugdisk" explore -j 2 "$T/ext4.log" "$T/bad.img" -- plugdisk-check-ext4 \
	>"$T/x.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$T/x.out" >&2; fail "explore -- plugdisk-check-ext4 on a bad base: exit $rc"; }
grep -q "ext4: e2fsck -fn exit" "$T/x.out" || fail "no e2fsck verdict in: $(head -c 600 "$T/x.out")"
expect_exit 2 "$T/opt/bin/plugdisk" explore "$T/ext4.log" "$T/ext4.img" -- plugdisk-check-none
log "installed: plugdisk explore runs plugdisk-check-ext4 by its short name"

# ---- SIGKILL (explore's --timeout): the checker's mount is never seen outside its
# namespace, and goes with it, loop device included. A sqlite3 that hangs holds it there. ----
mkdir -p "$T/bin"
printf '#!/bin/sh\ntouch "%s"\nexec sleep 60\n' "$T/hung" >"$T/bin/sqlite3"
chmod +x "$T/bin/sqlite3"
cp "$T/ext4.img" "$T/state.img"
PLUGDISK_STATE=$T/state.img PATH=$T/bin:$PATH setsid "$CK/plugdisk-check-sqlite" t.db t \
	>"$T/hung.out" 2>&1 &
hung=$!
at_cleanup "kill -KILL -- -$hung 2>/dev/null"
# state_on_loop: whether a loop device is attached to $T/state.img.
state_on_loop() { [ -n "$(losetup -n -O NAME -j "$T/state.img")" ]; }
true_within 10 test -e "$T/hung" || { cat "$T/hung.out" >&2; fail "the checker never ran sqlite3"; }
state_on_loop || fail "no loop device on the state while the checker runs"
grep -F " $TMPDIR/" /proc/self/mountinfo && fail "the checker's mount is seen outside its namespace"
kill -KILL -- -"$hung"
wait "$hung" 2>/dev/null
state_not_on_loop() { ! state_on_loop; }
true_within 5 state_not_on_loop || fail "the loop device outlived the checker killed by SIGKILL"
rm -rf "${TMPDIR:?}"/plugdisk-check-sqlite.* # its scratch directory: no trap runs on SIGKILL
log "killed by SIGKILL: its mount was private, and the loop device went with it"

# ---- Nothing left behind: the checkers' mounts were in namespaces of their own, their
# loop devices went with them, and their scratch files are gone. ----
grep -F " $T/" /proc/self/mountinfo && fail "mounts left under $T"
for l in $(losetup -n -O NAME,BACK-FILE -l | awk -v t="$T" 'index($2, t) == 1 {print $1}'); do
	fail "loop device $l still backed by a file under $T"
done
left=$(find "$TMPDIR" -mindepth 1 | head -n 3)
[ -z "$left" ] || fail "the checkers left scratch files: $left"
log "no mounts, loop devices or scratch files left"
