#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore --shard I/N and --merge: the shards of a run check disjoint shares whose
# union is the run's states, and their reports merged are the run's own report, text and
# JSON, byte for byte (timing is on stderr), with the whole log and under --budget. Bad
# --shard specs and reports that are not one run's shards exit 2 naming what is wrong.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd jq
build_helper pdio
P=$T/pdio
export P
W=12

# A program that commits by writing its record 4 times over (any copy suffices), and
# reports each commit before its fsync: a state fails where an acknowledged commit lost
# every copy.
truncate -s 4M "$T/base.img"
pd_start -s 4M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/w.log"
for ((w = 0; w < W; w++)); do
	args=()
	for ((i = 0; i < 4; i++)); do args+=(pwrite $(((w * 4 + i) * 4096)) 4096 $((w + 1))); done
	[ "$("$P" -d "$MNT/disk" "${args[@]}" | sort -u)" = 4096 ] || fail "the writes of window $w"
	[ $((w % 3)) = 1 ] && { echo "mark commit $w" >"$MNT/control" || fail "mark $w"; }
	[ "$("$P" "$MNT/disk" fsync)" = 0 ] || fail "the fsync of window $w"
done
pd_stop
cat >"$T/check.sh" <<'EOS'
#!/usr/bin/env bash
while read -r word w; do
	[ "$word" = commit ] || continue
	for ((i = 0; i < 4; i++)); do
		[ "$("$P" -r "$PLUGDISK_STATE" verify $(((w * 4 + i) * 4096)) 4096 $((w + 1)))" = \
			"4096 ok" ] && continue 2
	done
	echo "commit $w acknowledged, every copy lost (state $PLUGDISK_STATE_ID)"
	exit 1
done <"$PLUGDISK_MARKS"
EOS
chmod +x "$T/check.sh"

# run OUT [explore args]: explore with a checker; exit 0 or 1 expected.
run() {
	local out=$1 rc=0
	shift
	"$PLUGDISK" explore -j 2 "$@" "$T/w.log" "$T/base.img" -- "$T/check.sh" >"$out" \
		2>"$out.err" || rc=$?
	[ "$rc" -le 1 ] || { cat "$out.err" >&2; fail "explore $* exited $rc"; }
}

# split NAME N [selection]: the run, its N shards, their merge; each compared.
split() {
	local name=$1 n=$2 i lists=() reports=()
	shift 2
	run "$T/$name.json" --json "$@"
	run "$T/$name.txt" "$@"
	for ((i = 0; i < n; i++)); do
		run "$T/$name-$i.json" --json --shard "$i/$n" "$@"
		"$PLUGDISK" explore --list-states --shard "$i/$n" "$@" "$T/w.log" | cut -d' ' -f1 \
			>"$T/$name-$i.ids" || fail "--list-states --shard $i/$n"
		lists+=("$T/$name-$i.ids")
		reports+=("$T/$name-$i.json")
	done
	"$PLUGDISK" explore --list-states "$@" "$T/w.log" | cut -d' ' -f1 >"$T/$name.ids" ||
		fail "--list-states"
	# Disjoint shares whose union is the run's states.
	assert_eq "$(sort -n "${lists[@]}" | uniq -d | wc -l)" 0 "states in two shards ($name)"
	assert_eq "$(sort -n "${lists[@]}" | md5sum)" "$(sort -n "$T/$name.ids" | md5sum)" \
		"the shards' states against the run's ($name)"
	assert_eq "$(jq -s 'map(.shard.states) | add' "${reports[@]}")" \
		"$(jq .planned "$T/$name.json")" "the shards' states against the run's planned ($name)"
	for ((i = 0; i < n; i++)); do
		assert_eq "$(jq .shard.states "$T/$name-$i.json")" "$(wc -l <"${lists[i]}")" \
			"shard $i's states, run and listed ($name)"
	done
	# The merge is the run's report, text and JSON, whatever the reports' order.
	"$PLUGDISK" explore --merge --json "${reports[@]}" >"$T/$name-merged.json" 2>"$T/err" ||
		[ $? = 1 ] || { cat "$T/err" >&2; fail "--merge --json ($name)"; }
	cmp "$T/$name.json" "$T/$name-merged.json" || fail "the merged JSON is not the run's ($name)"
	"$PLUGDISK" explore --merge $(printf '%s\n' "${reports[@]}" | tac) >"$T/$name-merged.txt" ||
		[ $? = 1 ] || fail "--merge ($name)"
	cmp "$T/$name.txt" "$T/$name-merged.txt" || {
		diff "$T/$name.txt" "$T/$name-merged.txt" | head -20 >&2
		fail "the merged text report is not the run's ($name)"
	}
	log "$name: $(jq -c '{planned, checked, failed, duplicates}' "$T/$name.json"), shards" \
		"$(jq -s -c 'map(.shard.states)' "${reports[@]}")"
}

split all 3
[ "$(jq .failed "$T/all.json")" -gt 0 ] || fail "no state failed: the test shows nothing"
[ "$(jq .duplicates "$T/all.json")" -gt 0 ] || fail "no identical states: the skip is not tried"
split budget 4 --budget 60 --seed 7
assert_eq "$(jq .sampled "$T/budget.json")" true "the budget run sampled"

# Bad --shard specs: exit 2, naming the option.
for spec in 0/0 3/2 2/2 junk 1/ /2 1/2/3 -1/2 1/1000001; do
	expect_exit 2 "$PLUGDISK" explore --shard "$spec" "$T/w.log" "$T/base.img" -- true
	grep -q -- "--shard" "$T/out" || fail "--shard $spec: the message names no --shard"
done
expect_exit 2 "$PLUGDISK" explore --shard 0/2 --state 1 "$T/w.log" "$T/base.img" -- true

# Reports that are not one run's shards: exit 2, saying why.
expect_exit 2 "$PLUGDISK" explore --merge "$T/all-0.json" "$T/all-2.json"
grep -q "shard 1/3 is missing" "$T/out" || fail "a missing shard: $(cat "$T/out")"
expect_exit 2 "$PLUGDISK" explore --merge "$T"/all-{0,1,1,2}.json
grep -q "shard 1/3 twice" "$T/out" || fail "a shard twice: $(cat "$T/out")"
expect_exit 2 "$PLUGDISK" explore --merge "$T"/budget-{0,1,2,3}.json "$T/all-0.json"
grep -q "plan_hash\|budget\|count" "$T/out" || fail "shards of two runs: $(cat "$T/out")"
run "$T/seed8-1.json" --json --shard 1/4 --budget 60 --seed 8
expect_exit 2 "$PLUGDISK" explore --merge "$T"/budget-{0,2,3}.json "$T/seed8-1.json"
grep -q "'seed' differ" "$T/out" || fail "another seed: $(cat "$T/out")"
printf '{"log":' >"$T/junk.json"
expect_exit 2 "$PLUGDISK" explore --merge "$T/junk.json"
expect_exit 2 "$PLUGDISK" explore --merge --budget 3 "$T/all-0.json"
# Another log at the reports' path.
cp "$T/w.log" "$T/w.log.orig"
printf 'x' | dd of="$T/w.log" bs=1 seek=100 conv=notrunc status=none
expect_exit 2 "$PLUGDISK" explore --merge "$T"/all-{0,1,2}.json
grep -q "not the log the shards read" "$T/out" || fail "a changed log: $(cat "$T/out")"
mv "$T/w.log.orig" "$T/w.log"
log "shards merge to the run's report; bad shards and reports refused"
