#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore --keep-failing DIR keeps the first 16 failing images of each group (cause)
# by default, --keep-max N the first N of each, --keep-max 0 every one; the report names the
# images kept and says of the others that they were not.
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
# capped DIR N: each group of DIR's report has min(its count, N) images kept.
capped() {
	local bad
	bad=$(jq --argjson n "$2" '. as $r | [.failures[] | {key: (.id | tostring),
		value: .image}] | from_entries as $img | [$r.groups[]
		| select(([.states[] | tostring | $img[.] | select(. != null)] | length)
			!= ([.count, $n] | min))] | length' "$T/$1.json")
	assert_eq "$bad" 0 "groups of $1 without min(count, $2) images kept"
}
keep def
failed=$(jq .failed "$T/def.json")
[ "$failed" -gt 16 ] || fail "only $failed states failed, not more than 16"
capped def 16
keep three --keep-max 3
capped three 3
keep all --keep-max 0
assert_eq "$(find "$T/all" -name 'state-*.img' | wc -l)" "$failed" "images kept with --keep-max 0"
mkdir "$T/text"
"$PLUGDISK" explore -j 2 --keep-failing "$T/text" --keep-max 1 "$T/keep.log" "$T/base.img" \
	-- false >"$T/text.out" || true
groups=$(jq '.groups | length' "$T/all.json")
assert_eq "$(find "$T/text" -name 'state-*.img' | wc -l)" "$groups" \
	"images kept with --keep-max 1: one per group"
assert_eq "$(grep -c '^  image: not kept (--keep-max 1 reached for its cause)$' "$T/text.out")" \
	$((failed - groups)) "failures the text report says were not kept"
rc=0
"$PLUGDISK" explore --keep-max x "$T/keep.log" "$T/base.img" -- false 2>/dev/null || rc=$?
assert_eq "$rc" 2 "a bad --keep-max"
