#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore groups failing states by cause: the owners of the writes they lost and the
# checker's first line with numbers and hashes blanked. The groups' counts add up to the
# failures, states that lose the same write with the same complaint share a group, and the
# text report leads with the causes.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_cmd jq

truncate -s 16M "$T/disk.img" "$T/base.img"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/groups.log"
# The same block, and one other, written in 4 windows, each ended by a flush: the state of
# each window that drops the first loses the same write.
for i in 1 2 3 4; do
	head -c 4K /dev/urandom | dd of="$MNT/disk" bs=4K oflag=direct conv=notrunc \
		status=none || fail "dd $i"
	head -c 4K /dev/urandom | dd of="$MNT/disk" bs=4K seek=$((i * 2)) oflag=direct \
		conv=notrunc,fsync status=none || fail "dd $i"
done
pd_stop

cat >"$T/check.sh" <<'CHK'
#!/bin/sh
# Fails with a line that differs by state in its numbers and a hash only.
echo "state $PLUGDISK_STATE_ID: bad block at 0x$(printf %x $((PLUGDISK_STATE_ID * 4096))) sum $(echo "$PLUGDISK_STATE_ID" | sha1sum | cut -c1-40)"
echo "second line $PLUGDISK_STATE_ID"
exit 1
CHK
chmod +x "$T/check.sh"

explore_json "$T/g.json" "$T/groups.log" "$T/base.img" -- "$T/check.sh"
assert_eq "$EXPLORE_RC" 1 "explore's status, every state failing"
failed=$(jq .failed "$T/g.json")
[ "$failed" -ge 4 ] || fail "only $failed states failed"
assert_eq "$(jq '[.groups[].count] | add' "$T/g.json")" "$failed" "groups' counts, added"
assert_eq "$(jq '[.groups[].states[]] | sort | unique | length' "$T/g.json")" "$failed" \
	"states in the groups, each once"
assert_eq "$(jq '[.groups[] | select(.signature == "0+4096 | state #: bad block at # sum #")
	| .count] | .[0]' "$T/g.json")" 4 "the states that lose block 0 in the 4 windows, one group"
jq -e '[.groups[].count] | . == (sort | reverse)' "$T/g.json" >/dev/null ||
	fail "groups not by count, greatest first"

"$PLUGDISK" explore "$T/groups.log" "$T/base.img" -- "$T/check.sh" >"$T/g.txt" || true
grep -q "^explore: $failed failing states, $(jq '.groups | length' "$T/g.json") causes\?:$" \
	"$T/g.txt" || fail "the text report does not lead with the causes"
grep -q '^  cause 2: 4 states: 0+4096 | state #: bad block at # sum #$' "$T/g.txt" ||
	fail "the text report's second cause"
grep -q '^    e.g. state [0-9]*: plugdisk explore .* --state [0-9]* --image ' "$T/g.txt" ||
	fail "the text report's representative rebuild"
