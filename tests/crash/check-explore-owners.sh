#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore names the owner of every write of a failing state: on ext4 a rename
# without an fsync fails, and the writes of its failures belong to "/target" (the renamed
# file), to the journal or to inode tables, named so (a journal block by the block it copies:
# "[journal: / (directory)]"); --list-states --owners names them too.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4
require_cmd debugfs

CHECK=$(dirname "$0")/explore-check-rename.sh
explore_ext4_base 32M
explore_record "$T/bad.log"
explore_rename_workload 0
explore_record_end

explore_json "$T/bad.json" --budget 60 "$T/bad.log" "$T/base.img" -- "$CHECK"
assert_eq "$EXPLORE_RC" 1 "explore's status without the fsync"
# Every write entry of every failure has an owner.
missing=$(jq '[.failures[] | (.kept + .dropped + .torn)[] | select(.owner == null)] | length' \
	"$T/bad.json")
assert_eq "$missing" 0 "write entries without an owner"
owners=$(jq -r '[.failures[] | (.kept + .dropped + .torn)[] | .owner] | unique | .[]' "$T/bad.json")
printf '%s\n' "$owners" >&2
# The file's data: a budget of failing states may hold only journal writes, so every window's
# writes are listed (the states that end each window hold them all).
"$PLUGDISK" explore --list-states --owners --json --kinds prefix "$T/bad.log" "$T/base.img" \
	>"$T/all.json" || fail "--list-states --owners over every window failed"
jq -r '[.states[] | (.kept + .dropped + .torn)[] | .owner] | unique | .[]' "$T/all.json" \
	>"$T/all-owners"
grep -qE '/target(\.tmp)? \(data\)' "$T/all-owners" ||
	fail "no write names the renamed file's data: $(tr '\n' ';' <"$T/all-owners")"
grep -qE '\[(journal|inode table)' <<<"$owners" || fail "no write names the journal or an inode table"
grep -q 'offsets only' <<<"$owners" && fail "an ext4 write said 'offsets only'"
# A journal write is named by the block it copies (debugfs logdump): the rename's directory
# block or the inode table block holding target.
grep -qE '\[journal: (inode table of [^]]*/target|/ \(directory\))' "$T/all-owners" ||
	fail "no journal write named by the rename's blocks it copies"
cat "$T/all-owners" - <<<"$owners" | grep -qE '\[journal: (\[|journal)' && fail "a journal write named by the journal"

# The text report shows the same owners.
"$PLUGDISK" explore -j 2 --budget 60 "$T/bad.log" "$T/base.img" -- "$CHECK" >"$T/bad.txt" || true
grep -qE '^  (kept|dropped).*[0-9]+\+[0-9]+ "/target' "$T/bad.txt" || fail "the text report names no owner"

# --list-states --owners: one failing state's window listed with its owners.
id=$(jq '.failures[0].id' "$T/bad.json")
"$PLUGDISK" explore --list-states --owners --json --states "$id" "$T/bad.log" "$T/base.img" \
	>"$T/list.json" || fail "--list-states --owners failed"
assert_eq "$(jq '[.states[] | (.kept + .dropped + .torn)[] | select(.owner == null)] | length' \
	"$T/list.json")" 0 "listed writes without an owner"
"$PLUGDISK" explore --owners "$T/bad.log" "$T/base.img" -- true 2>/dev/null
assert_eq "$?" 2 "--owners without --list-states"

echo ok
