#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A checker for `plugdisk explore`: replay the state's ext4 journal (its writes go to
# explore's throwaway overlay), then e2fsck -fn must find the filesystem clean.
set -u
e2fsck -E journal_only -y "$PLUGDISK_STATE" >/dev/null 2>&1
rc=$?
[ "$rc" -le 1 ] || { echo "journal replay: e2fsck exit $rc"; exit 1; }
exec e2fsck -fn "$PLUGDISK_STATE"
