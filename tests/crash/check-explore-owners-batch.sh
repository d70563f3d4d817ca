#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore names owners in batches: the blocks of a window's writes in one batch of
# tool runs, and the blocks a window leaves unowned (data written before the metadata that
# claims it) at the log's end, in that window's one batch, not in runs of their own. On ext4
# under a file workload, with every state failing, debugfs is counted as it runs: at most 5
# runs a window (the layout and owners, the paths, the journal's map, the copies' owners and
# paths), the log's end included.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 debugfs jq

explore_ext4_base 64M
explore_record "$T/w.log"
explore_file_workload 60
explore_record_end

mkdir -p "$T/bin"
printf '#!/bin/sh\necho run >>"%s"\nexec %s "$@"\n' "$T/debugfs.runs" "$(command -v debugfs)" \
	>"$T/bin/debugfs"
chmod +x "$T/bin/debugfs"
: >"$T/debugfs.runs"
PATH="$T/bin:$PATH" explore_json "$T/r.json" --budget 60 --seed 1 "$T/w.log" "$T/base.img" \
	-- false
assert_eq "$EXPLORE_RC" 1 "explore's status with a checker that always fails"
wins=$(jq '[.failures[].window] | unique | length' "$T/r.json")
runs=$(wc -l <"$T/debugfs.runs")
later=$(jq '[.failures[] | (.kept + .dropped + .torn)[] | .owner | select(test(", later "))] |
	length' "$T/r.json")
log "owners of $wins failing windows: $runs debugfs runs; $later writes named at the log's end"
[ "$wins" -ge 5 ] || fail "only $wins windows failed"
[ "$later" -gt 0 ] || fail "no write named by its owner at the log's end"
[ "$runs" -le $((5 * (wins + 1))) ] ||
	fail "$runs debugfs runs for $wins windows (at most $((5 * (wins + 1))))"
[ "$runs" -ge "$wins" ] || fail "$runs debugfs runs for $wins windows: the wrapper was not used"
# the report is whole: every write entry has an owner
assert_eq "$(jq '[.failures[] | (.kept + .dropped + .torn)[] | select(.owner == null)] |
	length' "$T/r.json")" 0 "write entries without an owner"
