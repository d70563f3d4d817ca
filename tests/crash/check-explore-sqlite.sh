#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore and SQLite in WAL mode on ext4, each committed id marked once its commit
# returned ("mark row N"), checked by the ready checker plugdisk-check-sqlite: with
# synchronous = FULL every crash state holds every acknowledged id; with synchronous = OFF
# explore finds states that lost some. The FULL run checks 250 sampled states
# (EXPLORE_BUDGET=N for more: 12 commits gave 1115 states, all passing).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 sqlite3 jq

CHECK=("$TOP/checkers/plugdisk-check-sqlite" t.db t)
explore_ext4_base 32M
dev=$(loop_attach "$T/base.img")
mount -t ext4 "$dev" "$T/fs" || fail "mount of the base failed"
sqlite3 "$T/fs/t.db" 'PRAGMA journal_mode=WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);' \
	>/dev/null || fail "sqlite3 create failed"
umount "$T/fs"
loop_detach "$dev"

# inserts SYNC: 8 commits, each id marked once sqlite3 returned.
inserts() {
	local i
	for i in $(seq 1 8); do
		sqlite3 "$T/fs/t.db" "PRAGMA synchronous=$1; INSERT INTO t VALUES ($i, hex(randomblob(3000)));" ||
			fail "insert $i failed"
		echo "mark row $i" >"$MNT/control" || fail "mark row $i refused"
	done
}

for sync in FULL OFF; do
	explore_record "$T/$sync.log"
	inserts "$sync"
	explore_record_end
done

explore_json "$T/full.json" -k 1 --budget "${EXPLORE_BUDGET:-250}" "$T/FULL.log" \
	"$T/base.img" -- "${CHECK[@]}"
jq -r '.failures[:3][] | "\(.id) \(.after) \(.kind): \(.output)"' "$T/full.json" >&2
assert_eq "$EXPLORE_RC" 0 "explore's status with synchronous = FULL"

explore_json "$T/off.json" -k 1 --budget 80 "$T/OFF.log" "$T/base.img" -- "${CHECK[@]}"
assert_eq "$EXPLORE_RC" 1 "explore's status with synchronous = OFF"
jq -e '[.failures[].output | test("acknowledged row [0-9]+ of t is lost")] | any' "$T/off.json" \
	>/dev/null || fail "no state lost an acknowledged id with synchronous = OFF"
