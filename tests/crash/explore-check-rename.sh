#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A checker for `plugdisk explore` (check-explore-rename.sh): loop-mount the state and check
# that FILE (default target) holds one whole version: 1024 lines "version NNNNNNN". ext4, or
# xfs when the state starts with xfs's magic (nouuid: checkers run side by side on states of
# one filesystem, all with its UUID; the mount replays the log into explore's overlay).
set -u
fs=ext4 opts=defaults
[ "$(head -c 4 "$PLUGDISK_STATE" | tr -d '\0')" = XFSB ] && fs=xfs opts=nouuid
name=${1:-target}
dir=$(mktemp -d "${TMPDIR:-/tmp}/explore-check.XXXXXX")
dev=$(losetup -f --show "$PLUGDISK_STATE") || { echo "losetup $PLUGDISK_STATE failed"; exit 2; }
rc=0
if ! mount -t "$fs" -o "$opts" "$dev" "$dir"; then
	echo "mount failed"
	rc=1
elif [ ! -f "$dir/$name" ]; then
	echo "$name is missing"
	rc=1
else
	size=$(stat -c %s "$dir/$name")
	lines=$(sort -u "$dir/$name")
	if [ "$size" != 16384 ] || [ "$(printf '%s\n' "$lines" | wc -l)" != 1 ] ||
		! [[ $lines =~ ^version\ [0-9]{7}$ ]]; then
		first=$(head -c 40 "$dir/$name" | head -n 1)
		echo "$name is not one whole version: $size bytes, first line '$first'"
		rc=1
	else
		echo "$name: $lines"
	fi
	umount "$dir" || rc=2
fi
mountpoint -q "$dir" && umount "$dir"
losetup -d "$dev"
rmdir "$dir"
exit $rc
