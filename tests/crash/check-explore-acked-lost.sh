#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore offers the plainest crash: a write acknowledged to the program but never
# flushed, a mark after it, then the power goes and the write is lost. The state where the
# mark is acknowledged and the write lost is checked (its checker sees the mark), and it is
# the image a live "powercut mode=drop" after the mark leaves.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_cmd jq xfs_io

truncate -s 16M "$T/disk.img" "$T/base.img"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/w.log"
xfs_io -c "pwrite -q -S 0x11 1M 4k" -c fsync "$MNT/disk" || fail "pwrite of the fsynced block"
xfs_io -d -c "pwrite -q -S 0xaa 0 4k" "$MNT/disk" || fail "pwrite of block 0"
echo "mark commit1" >"$MNT/control" || fail "mark refused"
echo "powercut mode=drop" >"$MNT/control" || fail "powercut refused"
cp --sparse=always "$T/disk.img" "$T/live.img"
printf 'commit1\n' >"$T/live.marks"
pd_stop

# The checker: commit1 acknowledged means block 0 holds 0xaa.
cat >"$T/chk.sh" <<'EOF'
#!/bin/sh
grep -qx commit1 "$PLUGDISK_MARKS" || exit 0
[ "$(od -An -tx1 -N1 "$PLUGDISK_STATE" | tr -d ' ')" = aa ]
EOF
chmod +x "$T/chk.sh"
explore_json "$T/r.json" "$T/w.log" "$T/base.img" -- "$T/chk.sh"
assert_eq "$EXPLORE_RC" 1 "explore's status (a commit acknowledged and lost must fail)"
id=$(jq '.failures[0].id' "$T/r.json")
jq -e '.failures | length == 1' "$T/r.json" >/dev/null || fail "more than one failing state"

# The failing state is the live cut's image, with the marks the program had seen.
"$PLUGDISK" explore --state "$id" --image "$T/state.img" "$T/w.log" "$T/base.img" ||
	fail "explore --image of state $id"
cmp -s "$T/state.img" "$T/live.img" || fail "state $id is not the image the live cut left"
cat >"$T/same.sh" <<EOF
#!/bin/sh
cmp -s "\$PLUGDISK_STATE" "$T/live.img" && cmp -s "\$PLUGDISK_MARKS" "$T/live.marks" && exit 1
exit 0
EOF
chmod +x "$T/same.sh"
explore_json "$T/same.json" "$T/w.log" "$T/base.img" -- "$T/same.sh"
assert_eq "$EXPLORE_RC" 1 "no state is the live cut's image with its marks"
log "state $id: commit1 acknowledged, block 0 lost, as the live cut left it"
