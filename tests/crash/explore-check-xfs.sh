#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A checker for `plugdisk explore`: mount the state's xfs (the mount replays its log; the
# writes go to explore's throwaway overlay) and unmount it, then xfs_repair -n must find it
# clean. xfs_repair alone refuses a log that needs replaying. nouuid: checkers run side by
# side on states of one filesystem, all with its UUID.
set -u
mnt=$(mktemp -d "${TMPDIR:-/tmp}/pd-xfs-state.XXXXXX") || exit 2
dev=$(losetup -f --show "$PLUGDISK_STATE") || { rmdir "$mnt"; echo "losetup failed"; exit 1; }
rc=0
if mount -t xfs -o nouuid "$dev" "$mnt" 2>"$mnt.err"; then
	umount "$mnt" || rc=1
else
	echo "mount failed (log replay): $(cat "$mnt.err")"
	rc=1
fi
losetup -d "$dev"
rm -f "$mnt.err"
rmdir "$mnt"
[ "$rc" = 0 ] || exit 1
exec xfs_repair -n "$PLUGDISK_STATE"
