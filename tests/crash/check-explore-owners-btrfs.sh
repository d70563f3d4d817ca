#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore names the owners of writes on btrfs, offline with `btrfs inspect-internal
# dump-tree` (chunk, extent and fs trees): --list-states --owners over a rename workload names
# target's data by its path, the trees' blocks "[btrfs metadata]" and the superblock, never
# "offsets only".
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.btrfs
require_cmd btrfs
require_cmd jq

explore_fs_base btrfs 256M
explore_record "$T/w.log"
explore_rename_workload 1
# An fsync writes btrfs's log tree only; a transaction commit puts target's extents in the
# extent tree that dump-tree reads.
sync -f "$T/fs" || fail "syncfs failed"
explore_record_end

"$PLUGDISK" explore --list-states --owners --json "$T/w.log" "$T/base.img" >"$T/list.json" ||
	fail "--list-states --owners failed"
assert_eq "$(jq '[.states[] | (.kept + .dropped + .torn)[] | select(.owner == null)] | length' \
	"$T/list.json")" 0 "listed writes without an owner"
owners=$(jq -r '[.states[] | (.kept + .dropped + .torn)[] | .owner] | unique | .[]' "$T/list.json")
printf '%s\n' "$owners" >&2
grep -qE '(^| )/target(\.tmp)? \(data\)' <<<"$owners" || fail "no write names target's data"
grep -qF '[btrfs metadata]' <<<"$owners" || fail "no write names btrfs metadata"
grep -qF '[superblock]' <<<"$owners" || fail "no write names the superblock"
grep -q 'offsets only' <<<"$owners" && fail "a btrfs write said 'offsets only'"
bad=$(grep -vE '^((/[^ ]* \([a-z ]+\)|\[[^]]+\]) ?)+$' <<<"$owners")
[ -z "$bad" ] || fail "owners outside the vocabulary: $bad"
echo ok
