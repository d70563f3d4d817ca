#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore --keep-failing DIR keeps the first 16 failing images by default,
# --keep-max N the first N, --keep-max 0 every one; the report names the images kept and
# says of the others that they were not.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_cmd jq

truncate -s 16M "$T/disk.img" "$T/base.img"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/keep.log"
# 6 writes in one window, never flushed: 64 states at least, all failing below.
for i in 0 1 2 3 4 5; do
	head -c 4K /dev/urandom | dd of="$MNT/disk" bs=4K seek=$((i * 2)) oflag=direct \
		conv=notrunc status=none || fail "dd $i"
done
pd_stop

# keep DIR [args]: every state fails; the images in DIR and the report's count agree.
keep() {
	local dir=$1
	shift
	mkdir "$T/$dir"
	explore_json "$T/$dir.json" --keep-failing "$T/$dir" "$@" "$T/keep.log" "$T/base.img" -- false
	assert_eq "$EXPLORE_RC" 1 "explore's status, every state failing"
	assert_eq "$(find "$T/$dir" -name 'state-*.img' | wc -l)" \
		"$(jq '[.failures[] | select(.image != null)] | length' "$T/$dir.json")" \
		"images in $dir and images the report names"
}
keep def
failed=$(jq .failed "$T/def.json")
[ "$failed" -gt 16 ] || fail "only $failed states failed, not more than 16"
assert_eq "$(find "$T/def" -name 'state-*.img' | wc -l)" 16 "images kept by default"
keep three --keep-max 3
assert_eq "$(find "$T/three" -name 'state-*.img' | wc -l)" 3 "images kept with --keep-max 3"
keep all --keep-max 0
assert_eq "$(find "$T/all" -name 'state-*.img' | wc -l)" "$failed" "images kept with --keep-max 0"
mkdir "$T/text"
"$PLUGDISK" explore -j 2 --keep-failing "$T/text" --keep-max 1 "$T/keep.log" "$T/base.img" \
	-- false >"$T/text.out" || true
assert_eq "$(grep -c '^  image: not kept (--keep-max 1 reached)$' "$T/text.out")" \
	$((failed - 1)) "failures the text report says were not kept"
rc=0
"$PLUGDISK" explore --keep-max x "$T/keep.log" "$T/base.img" -- false 2>/dev/null || rc=$?
assert_eq "$rc" 2 "a bad --keep-max"
