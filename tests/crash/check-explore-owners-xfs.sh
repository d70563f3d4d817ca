#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore names the owners of writes on xfs (xfs_db -r): a rename without an fsync
# (the log forced by another file's fsync) fails, and its failures' writes belong to "/target"
# (the renamed file), to the log and to other named metadata, never "offsets only"; --minimize
# names the culprit, the log's write, quoted in the text report as the kept and dropped lines
# are ("[log]", never "[[log]]").
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.xfs
require_cmd xfs_db
require_cmd jq

CHECK=$(dirname "$0")/explore-check-rename.sh
explore_fs_base xfs 320M
explore_record "$T/bad.log"
# xfs writes a rename into its log only when the log is forced: here by the fsync of another
# file (an application's log), which does not write target.tmp's data.
for i in 1 2 3 4; do
	explore_version "$i" >"$T/fs/target.tmp"
	mv "$T/fs/target.tmp" "$T/fs/target"
	echo "renamed $i" >>"$T/fs/app.log"
	sync "$T/fs/app.log" || fail "fsync of app.log failed"
	sleep 0.3
done
# At last target's data is written and the log claims its blocks.
sync "$T/fs/target" || fail "fsync of target failed"
explore_record_end

# One state per window (every pending write lost) keeps the run short: the windows where the
# rename reached the log before target's data fail with nothing lost, the one whose log write
# claims the data's blocks fails when that write is lost.
explore_json "$T/bad.json" --kinds flush --minimize "$T/bad.log" "$T/base.img" -- "$CHECK"
assert_eq "$EXPLORE_RC" 1 "explore's status without the fsync"
jq -r '.groups[] | "\(.count) \(.signature)"' "$T/bad.json" >&2
missing=$(jq '[.failures[] | (.kept + .dropped + .torn)[] | select(.owner == null)] | length' \
	"$T/bad.json")
assert_eq "$missing" 0 "write entries without an owner"
owners=$(jq -r '[.failures[] | (.kept + .dropped + .torn)[] | .owner] | unique | .[]' "$T/bad.json")
printf '%s\n' "$owners" >&2
# target's data is written before the log claims its blocks: "[free, later /target (data)]"
grep -qE '(^| )/target(\.tmp)? \(data\)' <<<"$owners" || fail "no write names the renamed file's data"
grep -qE '(^| )\[log\]' <<<"$owners" || fail "no write names the log"
grep -q 'offsets only' <<<"$owners" && fail "an xfs write said 'offsets only'"
# every owner is in the xfs vocabulary: a path with its kind, or a bracketed name
bad=$(grep -vE '^((/[^ ]* \([a-z ]+\)|\[[^]]+\]) ?)+$' <<<"$owners")
[ -z "$bad" ] || fail "owners outside the vocabulary: $bad"

# --minimize: the failure that a lost write causes has a culprit, named (the log's write).
culprits=$(jq -r '[.failures[].culprit[].owner] | unique | .[]' "$T/bad.json")
printf 'culprits:\n%s\n' "$culprits" >&2
[ -n "$culprits" ] || fail "no failure has a culprit"
grep -qE '(^| )\[log\]' <<<"$culprits" || fail "no culprit names the log"
grep -qvE '^((/[^ ]* \([a-z ]+\)|\[[^]]+\]) ?)+$' <<<"$culprits" && fail "a culprit not named"

# The text report quotes each culprit's owner once: "[log]", never "[[log]]".
"$PLUGDISK" explore -j 2 --kinds flush --minimize "$T/bad.log" "$T/base.img" -- "$CHECK" \
	>"$T/bad.txt" 2>/dev/null || true
grep '^  fails when only' "$T/bad.txt" >&2
grep -qE '^  fails when only these are lost \([0-9]+\):.* [0-9]+\+[0-9]+ "\[log\]"' "$T/bad.txt" ||
	fail "the text report's culprits do not name the log's write"
grep -q '\[\[' "$T/bad.txt" && fail "an owner in double brackets in the text report"
grep '^  fails when only' "$T/bad.txt" |
	grep -vqE '^  fails when only these are lost \([0-9]+\):( [0-9]+\+[0-9]+ "[^"]+")+$' &&
	fail "a culprit line whose writes are not each 'offset+length \"owner\"'"
echo ok
