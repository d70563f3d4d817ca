#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore --minimize finds the one lost write that breaks the checker among the
# several a state dropped: 6 writes in one window, a checker that tests one block. Every
# failing state's culprit is that write alone, its failures are one cause, a budget bounds
# the checker runs, and a checker that fails whatever is lost gets no culprit, said so.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_cmd jq

truncate -s 16M "$T/disk.img" "$T/base.img"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/m.log"
for i in 0 1 2 3 4 5; do
	head -c 4K /dev/urandom >"$T/block-$i"
	dd if="$T/block-$i" of="$MNT/disk" bs=4K seek=$((i * 2)) oflag=direct conv=notrunc \
		status=none || fail "dd $i"
done
pd_stop

# Fails when block 4 (at 8 * 4 KiB) is not the one written.
cat >"$T/check.sh" <<CHK
#!/bin/sh
dd if="\$PLUGDISK_STATE" bs=4K skip=8 count=1 status=none | cmp -s - "$T/block-4" && exit 0
echo "block 4 lost in state \$PLUGDISK_STATE_ID"
exit 1
CHK
chmod +x "$T/check.sh"

explore_json "$T/min.json" --minimize "$T/m.log" "$T/base.img" -- "$T/check.sh"
assert_eq "$EXPLORE_RC" 1 "explore's status"
failed=$(jq .failed "$T/min.json")
[ "$failed" -ge 10 ] || fail "only $failed states failed"
# states that dropped more than the culprit: the search had something to shrink
[ "$(jq '[.failures[] | select((.dropped | length) > 1)] | length' "$T/min.json")" -gt 5 ] ||
	fail "too few failing states dropped several writes"
assert_eq "$(jq -c '[.failures[].culprit] | unique' "$T/min.json")" \
	'[[{"offset":32768,"length":4096,"owner":"32768+4096"}]]' "every failure's culprit"
assert_eq "$(jq '[.failures[] | select(.culprit_minimal | not)] | length' "$T/min.json")" 0 \
	"culprits not shown minimal"
assert_eq "$(jq -c '[.groups[] | {count, signature}]' "$T/min.json")" \
	"[{\"count\":$failed,\"signature\":\"32768+4096 | block # lost in state #\"}]" \
	"the failures, one cause"
[ "$(jq '[.failures[].minimize_runs] | max' "$T/min.json")" -le 64 ] ||
	fail "more checker runs than the default budget"

"$PLUGDISK" explore -j 2 --minimize "$T/m.log" "$T/base.img" -- "$T/check.sh" >"$T/min.txt" \
	2>"$T/min.err" || true
# the closing line counts the minimizing runs beside the states
runs=$(jq '[.failures[].minimize_runs] | add' "$T/min.json")
grep -q "states checked and $runs checker runs to minimize in " "$T/min.err" ||
	fail "the closing line does not count $runs minimizing runs: $(tail -1 "$T/min.err")"
assert_eq "$(grep -c '^  fails when only these are lost (1): 32768+4096 "offsets only"$' \
	"$T/min.txt")" "$failed" "the text report's culprits"

# A budget of 2 runs: the one with nothing lost, then one round's first candidate at most.
explore_json "$T/b.json" --minimize-budget 2 "$T/m.log" "$T/base.img" -- "$T/check.sh"
assert_eq "$(jq '[.failures[].minimize_runs] | max' "$T/b.json")" 2 "runs under a budget of 2"
[ "$(jq '[.failures[] | select(.culprit_minimal | not)] | length' "$T/b.json")" -gt 0 ] ||
	fail "no culprit said not minimal under a budget of 2"
jq -e '[.failures[] | select(.culprit_minimal | not) | .culprit | length > 1] | all' \
	"$T/b.json" >/dev/null || fail "a culprit cut short is not the lost set it had reached"

# A checker that fails whatever is kept: no lost write is the cause.
explore_json "$T/f.json" --minimize --states 0-3 "$T/m.log" "$T/base.img" -- false
assert_eq "$(jq -c '[.failures[] | [.culprit, .culprit_no_loss, .minimize_runs]] | unique' \
	"$T/f.json")" '[[[],true,1]]' "a failure not from a lost write"
"$PLUGDISK" explore --minimize --states 0 "$T/m.log" "$T/base.img" -- false >"$T/f.txt" || true
grep -q '^  culprit: none: it fails with every write of its window kept' "$T/f.txt" ||
	fail "the text report does not say the cause is not a lost write"

rc=0
"$PLUGDISK" explore --minimize-budget x "$T/m.log" "$T/base.img" -- false 2>/dev/null || rc=$?
assert_eq "$rc" 2 "a bad --minimize-budget"
