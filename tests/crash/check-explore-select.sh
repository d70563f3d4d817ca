#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore's states listed and picked: --list-states (text and JSON) enumerates every
# state; --kinds, --windows and --states choose exactly those, listed or checked with -j 2;
# the checker sees PLUGDISK_STATE_KIND, PLUGDISK_STATE_WINDOW and PLUGDISK_STATE_JSON agreeing
# with the listing; --weights gives a kind more of a budget; bad selections exit 2.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd jq
build_helper pdio
P=$T/pdio

# Window 0: three 4 KiB writes and one of 16 KiB (4 atomic units: torn states), a mark;
# window 1: 12 writes (a large window: drop states); window 2: nothing after the last flush.
truncate -s 4M "$T/base.img" "$T/disk.img"
pd_start -s 4M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set cache.atomic_write=4096 --set "cache.log=$T/w.log"
"$P" -d "$MNT/disk" pwrite 0 4096 1 pwrite 4096 4096 2 pwrite 8192 4096 3 \
	pwrite 65536 16384 4 >/dev/null || fail "window 0's writes"
echo "mark one" >"$MNT/control" || fail "mark"
[ "$("$P" "$MNT/disk" fsync)" = 0 ] || fail "fsync"
args=()
for ((i = 0; i < 12; i++)); do args+=(pwrite $((131072 + i * 4096)) 4096 $((i + 5))); done
"$P" -d "$MNT/disk" "${args[@]}" >/dev/null || fail "window 1's writes"
[ "$("$P" "$MNT/disk" fsync)" = 0 ] || fail "fsync"
pd_stop

X() { "$PLUGDISK" explore "$@"; }
X --list-states --json "$T/w.log" >"$T/all.json" || fail "--list-states --json"
total=$(jq .states_total "$T/all.json")
assert_eq "$(jq '.states | length' "$T/all.json")" "$total" "every state listed"
assert_eq "$(jq -c '[.states[].id]' "$T/all.json")" "$(jq -c '[range(0; '"$total"')]' <<<null)" \
	"ids 0..N-1 in order"
assert_eq "$(jq -c '[.states[].kind] | unique' "$T/all.json")" '["drop","flush","prefix","subset","torn"]' \
	"the kinds of the log"
X --list-states "$T/w.log" "$T/base.img" >"$T/all.txt" || fail "--list-states"
assert_eq "$(wc -l <"$T/all.txt")" "$total" "one line per state"
grep -q '^0 flush window 0 flush 0: kept 0, dropped 4, torn 0; marks acknowledged 1, mark (none)$' \
	"$T/all.txt" || fail "state 0's line: $(head -1 "$T/all.txt")"

# --kinds, --windows, --states: exactly the chosen states.
X --list-states --json --kinds torn "$T/w.log" >"$T/torn.json" || fail "--kinds torn"
assert_eq "$(jq -c '[.states[].id]' "$T/torn.json")" \
	"$(jq -c '[.states[] | select(.kind == "torn") | .id]' "$T/all.json")" "--kinds torn"
[ "$(jq '.states | length' "$T/torn.json")" -ge 6 ] || fail "fewer than 6 torn states"
X --list-states --json --kinds flush,drop --windows 1 "$T/w.log" >"$T/w1.json" ||
	fail "--kinds flush,drop --windows 1"
assert_eq "$(jq -c '[.states[].id]' "$T/w1.json")" \
	"$(jq -c '[.states[] | select(.window == 1 and (.kind == "flush" or .kind == "drop")) | .id]' \
		"$T/all.json")" "--kinds flush,drop --windows 1"
X --list-states --json --states 3,0,7-9,8 "$T/w.log" >"$T/ids.json" || fail "--states"
assert_eq "$(jq -c '[.states[].id]' "$T/ids.json")" "[0,3,7,8,9]" "--states 3,0,7-9,8"
X --list-states --json --states "$((total - 1))" "$T/w.log" >/dev/null ||
	fail "--states of the last state"

# A checker run on a chosen set with -j 2: its environment agrees with the listing.
cat >"$T/env.sh" <<'EOS'
#!/bin/sh
out=$ENVDIR/$PLUGDISK_STATE_ID
printf '%s %s %s\n' "$PLUGDISK_STATE_ID" "$PLUGDISK_STATE_KIND" "$PLUGDISK_STATE_WINDOW" >"$out"
jq -c '[.id, .kind, .window, .kept_count, .dropped_count, (.torn | length), .marks_acknowledged]' \
	"$PLUGDISK_STATE_JSON" >>"$out"
EOS
chmod +x "$T/env.sh"
mkdir "$T/env"
ENVDIR=$T/env X -j 2 --json --states 0,1,5-6 --kinds flush,prefix,torn "$T/w.log" \
	"$T/base.img" -- "$T/env.sh" >"$T/run.json" || fail "a run over a chosen set"
chosen=$(jq -c '[.states[] | select(.id == 0 or .id == 1 or .id == 5 or .id == 6) |
	select(.kind == "flush" or .kind == "prefix" or .kind == "torn") | .id]' "$T/all.json")
assert_eq "$(cd "$T/env" && ls | sort -n | jq -R -s -c 'split("\n")[:-1] | map(tonumber)')" \
	"$chosen" "the states checked"
for id in $(jq '.[]' <<<"$chosen"); do
	want=$(jq -c ".states[$id] | [.id, .kind, .window, .kept_count, .dropped_count,
		(.torn | length), .marks_acknowledged]" "$T/all.json")
	assert_eq "$(sed -n 2p "$T/env/$id")" "$want" "PLUGDISK_STATE_JSON of state $id"
	assert_eq "$(sed -n 1p "$T/env/$id")" "$(jq -r '"\(.[0]) \(.[1]) \(.[2])"' <<<"$want")" \
		"PLUGDISK_STATE_KIND and _WINDOW of state $id"
done
assert_eq "$(jq .checked "$T/run.json")" "$(jq length <<<"$chosen")" "checked"

# --weights: a budget of 10 over 5 kinds gives 2 each; torn=4 gives torn 4 per round: 4 in
# the first round (8 states), then the second round's 2 go to the two kinds with the fewest
# states, flush (3) and torn (6).
X --list-states --json --budget 10 "$T/w.log" >"$T/b.json" || fail "--budget 10"
assert_eq "$(jq -c '[.states[].kind] | group_by(.) | map(length)' "$T/b.json")" "[2,2,2,2,2]" \
	"a budget of 10 over 5 kinds"
X --list-states --json --budget 10 --weights torn=4 "$T/w.log" >"$T/w.json" ||
	fail "--weights torn=4"
assert_eq "$(jq -c '[.states[].kind] | group_by(.) | map("\(.[0])=\(length)")' "$T/w.json")" \
	'["drop=1","flush=2","prefix=1","subset=1","torn=5"]' \
	"torn states with --weights torn=4 and a budget of 10"
# Seeded: the same seed lists the same states, another seed others.
X --list-states --json --budget 10 --seed 2 "$T/w.log" >"$T/s2.json" || fail "--seed 2"
X --list-states --json --budget 10 --seed 2 "$T/w.log" | cmp -s - "$T/s2.json" ||
	fail "the same seed listed other states"

# Bad selections: exit 2, with a message naming the option.
expect2() {
	local rc=0 what=$1
	shift
	X "$@" >/dev/null 2>"$T/err" || rc=$?
	assert_eq "$rc" 2 "exit status of $what"
	grep -q -- "$what" "$T/err" || fail "$what: the message does not name it: $(cat "$T/err")"
}
expect2 --kinds --list-states --kinds bogus "$T/w.log"
expect2 --windows --list-states --windows 3 "$T/w.log"
expect2 --windows --list-states --windows 2-1 "$T/w.log"
expect2 --states --list-states --states "$total" "$T/w.log"
expect2 --states --list-states --states 1,x "$T/w.log"
expect2 --weights --list-states --weights torn=0 "$T/w.log"
expect2 --weights --list-states --weights bogus=2 "$T/w.log"
expect2 --sampler --list-states --sampler other "$T/w.log"
