#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A checker for `plugdisk explore` (check-explore-git.sh): mount the state (ext4 replays its
# journal into the state's memory), then the repository /repo must pass `git fsck`, and every
# commit acknowledged before the cut ("commit SHA" in $PLUGDISK_MARKS) must be HEAD or one of
# its ancestors.
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/explore-check.XXXXXX")
dev=$(losetup -f --show "$PLUGDISK_STATE") || { echo "losetup $PLUGDISK_STATE failed"; exit 2; }
rc=0
if ! mount -t ext4 "$dev" "$dir"; then
	echo "mount failed"
	rc=1
else
	export GIT_CONFIG_NOSYSTEM=1 HOME=$dir
	if ! cd "$dir/repo" 2>/dev/null || [ ! -d .git ]; then
		echo "repo/.git is missing"
		rc=1
	else
		out=$(git -c safe.directory='*' fsck --no-dangling --no-progress 2>&1) ||
			{ echo "git fsck: $(printf '%s\n' "$out" | head -n 1)"; rc=1; }
		while read -r word sha; do
			[ "$word" = commit ] || continue
			git -c safe.directory='*' merge-base --is-ancestor "$sha" HEAD 2>/dev/null ||
				{ echo "acknowledged commit $sha is not in HEAD's history"; rc=1; break; }
		done <"$PLUGDISK_MARKS"
		cd /
	fi
	umount "$dir" || rc=2
fi
mountpoint -q "$dir" && umount "$dir"
losetup -d "$dev"
rmdir "$dir"
exit $rc
