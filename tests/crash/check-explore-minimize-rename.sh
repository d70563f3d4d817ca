#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore --minimize on ext4's rename without an fsync (noauto_da_alloc). Most failing
# states fail with every write of their window kept: the rename was committed in an earlier
# window, before the file's data was written, and --minimize says that the cause is not a
# lost write. The others get a minimal culprit among the writes they lost. Groups add up.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4
require_cmd jq

CHECK=$(dirname "$0")/explore-check-rename.sh
explore_ext4_base 32M
explore_record "$T/bad.log"
explore_rename_workload 0
explore_record_end

explore_json "$T/r.json" --budget 60 --minimize "$T/bad.log" "$T/base.img" -- "$CHECK"
assert_eq "$EXPLORE_RC" 1 "explore's status without the fsync"
failed=$(jq .failed "$T/r.json")
[ "$failed" -gt 0 ] || fail "no failing state without the fsync"
jq -r '.groups[] | "\(.count) \(.signature)"' "$T/r.json" >&2
jq -c '.failures[] | {id, dropped: (.dropped | length), culprit: (.culprit | length),
	culprit_minimal, culprit_no_loss, minimize_runs}' "$T/r.json" >&2
assert_eq "$(jq '[.groups[].count] | add' "$T/r.json")" "$failed" "groups' counts, added"
[ "$(jq '[.failures[] | select(.culprit_no_loss)] | length' "$T/r.json")" -gt 0 ] ||
	fail "no failure said not to come from a lost write"
assert_eq "$(jq '[.failures[] | select(.culprit_no_loss and (.culprit | length) > 0)]
	| length' "$T/r.json")" 0 "a culprit where nothing lost fails too"
assert_eq "$(jq '[.failures[] | select((.culprit_no_loss | not) and (.culprit | length) == 0)]
	| length' "$T/r.json")" 0 "an empty culprit where nothing lost passes"
assert_eq "$(jq '[.failures[] | select(.culprit_minimal | not)] | length' "$T/r.json")" 0 \
	"culprits not shown minimal within the budget"
# every culprit is some of the writes its state lost
assert_eq "$(jq '[.failures[] | [.dropped[], .torn[] | {offset, length}] as $lost
	| .culprit[] | {offset, length} | select(IN($lost[]) | not)] | length' "$T/r.json")" 0 \
	"culprit writes the state did not lose"
[ "$(jq '[.failures[].culprit | length] | max' "$T/r.json")" -le 3 ] ||
	fail "a culprit of more than 3 writes"
[ "$(jq '.groups | length' "$T/r.json")" -lt "$failed" ] || [ "$failed" -lt 3 ] ||
	fail "as many causes as failing states"
"$PLUGDISK" explore -j 2 --budget 60 --minimize "$T/bad.log" "$T/base.img" -- "$CHECK" \
	>"$T/r.txt" 2>/dev/null || true
grep -q '^  culprit: none: it fails with every write of its window kept' "$T/r.txt" ||
	fail "the text report does not say which failures are not from a lost write"
# A culprit's owner is quoted as in the kept and dropped lines: "[journal]", never
# "[[journal]]" (owners carry their own brackets).
grep '^  fails when only' "$T/r.txt" >&2
grep -q '\[\[' "$T/r.txt" && fail "an owner in double brackets in the text report"
grep '^  fails when only' "$T/r.txt" | grep -vqE '^  fails when only these are lost \([0-9]+\):( [0-9]+\+[0-9]+ "[^"]+")+$' &&
	fail "a culprit line whose writes are not each 'offset+length \"owner\"'"
true
