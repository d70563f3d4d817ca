#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore finds the classic bug: a file replaced by write-temp-then-rename without
# an fsync before the rename, on ext4 mounted noauto_da_alloc, can be empty or old-and-new
# after a power cut. With the fsync, every crash state holds one whole version: 300 states
# spread over every kind and window (EXPLORE_BUDGET=N for more; all 1101 pass).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4

CHECK=$(dirname "$0")/explore-check-rename.sh
explore_ext4_base 32M

explore_record "$T/bad.log"
explore_rename_workload 0
explore_record_end
explore_record "$T/good.log"
explore_rename_workload 1
explore_record_end

explore_json "$T/bad.json" --budget 100 "$T/bad.log" "$T/base.img" -- "$CHECK"
assert_eq "$EXPLORE_RC" 1 "explore's status without the fsync"
[ "$(jq '.failed' "$T/bad.json")" -gt 0 ] || fail "no failing state without the fsync"
jq -r '.failures[0] | .after, .kind, .output' "$T/bad.json" >&2

explore_json "$T/good.json" --budget "${EXPLORE_BUDGET:-300}" "$T/good.log" "$T/base.img" -- "$CHECK"
jq -r '.failures[0] | .after, .kind, .output' "$T/good.json" >&2
assert_eq "$EXPLORE_RC" 0 "explore's status with the fsync"
[ "$(jq '.checked' "$T/good.json")" -gt 10 ] || fail "too few states checked with the fsync"
