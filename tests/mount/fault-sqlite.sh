#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A database meets write errors on its own file: sqlite3 (rollback journal) on ext4 over a
# loop device, with faults on the byte ranges of the database file's extents. The UPDATE
# fails with "disk I/O error", and once the faults are cleared the database rolls back to
# its state before the transaction and passes its integrity check. (doc/faults.md's worked
# example.)
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 sqlite3 filefrag
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 256M
dev=$(loop_attach "$MNT/disk" --direct-io=on)
mkfs.ext4 -q -F -b 4096 "$dev" >"$T/mkfs.log" 2>&1 || { cat "$T/mkfs.log" >&2; fail "mkfs.ext4 failed"; }
mkdir "$T/db"
mount "$dev" "$T/db" || fail "mount"
track_mount "$T/db"
sqlite3 "$T/db/app.db" "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);
	WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000)
	INSERT INTO t(v) SELECT hex(randomblob(500)) FROM c;" || fail "create"
sync -f "$T/db/app.db"
sum0=$(sqlite3 "$T/db/app.db" "SELECT sum(length(v)), count(*) FROM t")

# One write fault per extent of the database file: FIRST..LAST physical 4 KiB blocks.
filefrag -v -b4096 "$T/db/app.db" |
	awk -F'[:. ]+' '/^ *[0-9]+:/ { print $5, $6 }' >"$T/extents"
[ -s "$T/extents" ] || fail "no extents: $(filefrag -v "$T/db/app.db")"
while read -r first last; do
	ctl fault add op=write offset=$((first * 4096)) len=$(((last - first + 1) * 4096)) \
		error=EIO >/dev/null || fail "fault add"
done <"$T/extents"
log "faults on the database file: $(tr '\n' ' ' <"$T/extents")"

if sqlite3 "$T/db/app.db" "UPDATE t SET v = 'x' WHERE id % 7 = 0;" 2>"$T/sq.err"; then
	fail "the UPDATE succeeded over write errors"
fi
grep -q "disk I/O error" "$T/sq.err" || fail "sqlite3: $(cat "$T/sq.err")"
assert_gt "$(stat_get write_fault_errors)" 0 "write_fault_errors"

ctl fault clear || fail "fault clear"
assert_eq "$(sqlite3 "$T/db/app.db" "PRAGMA integrity_check")" ok "integrity after the errors"
assert_eq "$(sqlite3 "$T/db/app.db" "SELECT count(*) FROM t WHERE v = 'x'")" 0 "the failed UPDATE rolled back"
assert_eq "$(sqlite3 "$T/db/app.db" "SELECT sum(length(v)), count(*) FROM t")" "$sum0" "the table as before"
umount "$T/db"
loop_detach "$dev"
pd_stop
