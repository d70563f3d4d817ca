#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore --from-flush N and --from-mark TEXT: the setup writes logged before that
# point are durable by decree. A checker that needs the setup fails states of the whole log,
# none from either point; the point's own window keeps the states that keep the setup;
# a flush or mark the log lacks exits 2.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_cmd jq

head -c 128K /dev/urandom >"$T/setup"
for i in 1 2; do head -c 64K /dev/urandom >"$T/p$i"; done
truncate -s 16M "$T/disk.img" "$T/base.img"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.atomic_write=4096 --set "cache.log=$T/from.log"
# The setup (like mkfs): two writes, no flush, then the mark; a step's write follows in the
# same window, then each step is flushed and marked.
dd if="$T/setup" of="$MNT/disk" bs=64K count=2 oflag=direct conv=notrunc status=none ||
	fail "dd of the setup"
echo "mark setup" >"$MNT/control" || fail "mark setup refused"
for i in 1 2; do
	dd if="$T/p$i" of="$MNT/disk" bs=64K seek=$((i + 3)) oflag=direct conv=notrunc,fsync \
		status=none || fail "dd step $i"
	echo "mark step $i" >"$MNT/control" || fail "mark step $i refused"
done
pd_stop

# The checker: the setup must be there, as a filesystem's superblock must.
cat >"$T/setup.sh" <<EOS
#!/bin/sh
cmp -s -n 131072 "$T/setup" "\$PLUGDISK_STATE" || { echo "bad magic number"; exit 1; }
EOS
chmod +x "$T/setup.sh"

explore_json "$T/all.json" "$T/from.log" "$T/base.img" -- "$T/setup.sh"
assert_eq "$EXPLORE_RC" 1 "explore's status over the whole log"
[ "$(jq .failed "$T/all.json")" -gt 0 ] || fail "no state lost the setup over the whole log"

explore_json "$T/mark.json" --from-mark setup "$T/from.log" "$T/base.img" -- "$T/setup.sh"
jq -r '.failures[:3][] | "\(.id) \(.window) \(.kind) \(.dropped)"' "$T/mark.json" >&2
assert_eq "$EXPLORE_RC" 0 "explore's status from the mark setup"
[ "$(jq .checked "$T/mark.json")" -ge 5 ] || fail "fewer than 5 states checked from the mark"
assert_eq "$(jq .from_writes "$T/mark.json")" 2 "writes decreed durable by the mark"
# The mark's window has states that keep the setup and lose step 1: they are explored.
w=$("$PLUGDISK" explore --list-states --json --from-mark setup "$T/from.log" |
	jq '[.states[] | select(.window == 0)] | length')
[ "$w" -gt 0 ] || fail "--from-mark dropped the whole window the mark is in"
"$PLUGDISK" explore --list-states --json --from-mark setup "$T/from.log" |
	jq -e '[.states[] | select(.window == 0 and .durable_writes + (.kept | length) < 2)] |
	       length == 0' >/dev/null || fail "a listed state loses a setup write"

explore_json "$T/flush.json" --from-flush 1 "$T/from.log" "$T/base.img" -- "$T/setup.sh"
assert_eq "$EXPLORE_RC" 0 "explore's status from flush 1"
[ "$(jq .checked "$T/flush.json")" -ge 2 ] || fail "fewer than 2 states checked from flush 1"
"$PLUGDISK" explore --from-flush 1 "$T/from.log" "$T/base.img" -- "$T/setup.sh" |
	grep -q "^explore: from flush 1: the [0-9]* writes logged before it durable by decree" ||
	fail "the text report does not say where it starts"

# Bad input exits 2.
rc=0
"$PLUGDISK" explore --from-mark nosuch "$T/from.log" "$T/base.img" -- true 2>"$T/err" || rc=$?
assert_eq "$rc" 2 "--from-mark with no such mark"
grep -q "no mark 'nosuch'" "$T/err" || fail "the error does not name the mark"
rc=0
"$PLUGDISK" explore --from-flush 99 "$T/from.log" "$T/base.img" -- true 2>/dev/null || rc=$?
assert_eq "$rc" 2 "--from-flush past the log's flushes"
rc=0
"$PLUGDISK" explore --from-flush 1 --from-mark setup "$T/from.log" "$T/base.img" -- true \
	2>/dev/null || rc=$?
assert_eq "$rc" 2 "--from-flush with --from-mark"
