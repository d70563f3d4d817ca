#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A checker for `plugdisk explore` (check-explore-marks.sh): every step acknowledged before
# the cut ("step N" in $PLUGDISK_MARKS, written with an fsync before its mark) must hold its
# data, region N-1 (64 KiB) of the state equal to $STEPS/pN; and so must $PLUGDISK_MARK's.
set -u
rc=0
check() {
	cmp -s <(dd if="$PLUGDISK_STATE" bs=64K skip=$(($1 - 1)) count=1 status=none) \
		"$STEPS/p$1" || { echo "$2 step $1 is lost"; rc=1; }
}
while read -r word n; do
	[ "$word" = step ] && check "$n" acknowledged
done <"$PLUGDISK_MARKS"
case $PLUGDISK_MARK in "step "*) check "${PLUGDISK_MARK#step }" durable ;; esac
exit $rc
