#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A checker for `plugdisk explore` (check-explore-sqlite.sh): loop-mount the state, and the
# database t.db must pass integrity_check and hold every id acknowledged before the cut
# ("id N" in $PLUGDISK_MARKS).
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/explore-check.XXXXXX")
dev=$(losetup -f --show "$PLUGDISK_STATE") || { echo "losetup $PLUGDISK_STATE failed"; exit 2; }
rc=0
if ! mount -t ext4 "$dev" "$dir"; then
	echo "mount failed"
	rc=1
else
	ok=$(sqlite3 "$dir/t.db" 'PRAGMA integrity_check;' 2>&1)
	[ "$ok" = ok ] || { echo "integrity_check: $ok"; rc=1; }
	have=$(sqlite3 "$dir/t.db" 'SELECT id FROM t ORDER BY id;' 2>&1 | tr '\n' ' ')
	while read -r word id; do
		[ "$word" = id ] || continue
		[[ " $have" == *" $id "* ]] || { echo "acknowledged id $id is lost (have: $have)"; rc=1; }
	done <"$PLUGDISK_MARKS"
	umount "$dir" || rc=2
fi
mountpoint -q "$dir" && umount "$dir"
losetup -d "$dev"
rmdir "$dir"
exit $rc
