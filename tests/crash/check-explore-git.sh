#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore on Git with its default settings, on ext4: four commits, each marked
# ("mark commit SHA") once `git commit` returned. Git renames a loose object and its ref into
# place without syncing their directories, so some crash states lose an acknowledged commit
# or leave an object empty, and explore must find them and explain them: the failures group
# into fewer causes than states, and every failing state names, among its lost writes'
# owners, a file of the repository.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4 git jq

CHECK=$(dirname "$0")/explore-check-git.sh
export GIT_CONFIG_NOSYSTEM=1 HOME=$T
# The repository is made before the recording, so that its creation is durable.
explore_ext4_base 32M
dev=$(loop_attach "$T/base.img")
mount -t ext4 "$dev" "$T/fs" || fail "mount of the base failed"
git init -q "$T/fs/repo" || fail "git init failed"
git -C "$T/fs/repo" config user.email test@plugdisk.invalid
git -C "$T/fs/repo" config user.name plugdisk
umount "$T/fs"
loop_detach "$dev"

explore_record "$T/git.log"
for i in 1 2 3 4; do
	head -c $((i * 6000)) /dev/urandom | base64 >"$T/fs/repo/f$i"
	git -C "$T/fs/repo" add "f$i" || fail "git add failed"
	git -C "$T/fs/repo" commit -q -m "commit $i" || fail "git commit $i failed"
	echo "mark commit $(git -C "$T/fs/repo" rev-parse HEAD)" >"$MNT/control" ||
		fail "mark refused"
	sleep 0.5
done
explore_record_end

explore_json "$T/r.json" --budget "${EXPLORE_BUDGET:-200}" "$T/git.log" "$T/base.img" -- "$CHECK"
failed=$(jq .failed "$T/r.json")
log "Git, default settings: $(jq .checked "$T/r.json") states checked, $failed failed," \
	"$(jq '.groups | length' "$T/r.json") causes"
jq -r '.groups[] | "  \(.count) \(.signature)"' "$T/r.json" >&2
assert_eq "$EXPLORE_RC" 1 "explore's status on Git's default settings"
[ "$failed" -gt 0 ] || fail "no failing state"
assert_eq "$(jq '[.groups[].count] | add' "$T/r.json")" "$failed" "groups' counts, added"
[ "$(jq '.groups | length' "$T/r.json")" -lt "$failed" ] || [ "$failed" -lt 3 ] ||
	fail "as many causes as failing states"
# Each failure is explained in the repository's terms: a lost write of a file under
# /repo/.git, or the checker's own words about an object or a commit.
jq -e '[.failures[] | [.dropped[], .torn[] | .owner] | any(test("/repo/\\.git/"))] | any' \
	"$T/r.json" >/dev/null || fail "no failing state names a file of /repo/.git among its lost writes"
jq -e '[.failures[].output | test("git fsck|acknowledged commit")] | all' "$T/r.json" \
	>/dev/null || fail "a failure that is neither fsck's nor a lost commit"
