#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore's budget finds failing states that are rare and of a rare kind. A program
# commits by writing its record 8 times over (any copy suffices) and reports the commit
# before its fsync; 70 windows of 8 writes, 3 of them commits: a state fails only where a
# commit was acknowledged and every copy of it lost, the flush state of a commit's window,
# 3 of the log's 17921 states (flush states are 71 of them). A budget of 30 spread over every
# kind and window (windows holding marks first) must find one with each of 10 seeds; the
# uniform sample, for comparison, finds one in about 1 run of 200. The figures are printed.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd jq
build_helper pdio
P=$T/pdio
export P
W=70
COMMITS="17 41 58"

truncate -s 4M "$T/base.img" "$T/disk.img"
pd_start -s 4M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/w.log"
for ((w = 0; w < W; w++)); do
	args=()
	for ((i = 0; i < 8; i++)); do args+=(pwrite $(((w * 8 + i) * 4096)) 4096 $((w + 1))); done
	[ "$("$P" -d "$MNT/disk" "${args[@]}" | sort -u)" = 4096 ] || fail "the writes of window $w"
	case " $COMMITS " in *" $w "*) echo "mark commit $w" >"$MNT/control" || fail "mark $w" ;; esac
	[ "$("$P" "$MNT/disk" fsync)" = 0 ] || fail "the fsync of window $w"
done
pd_stop

# The checker: every commit acknowledged keeps at least one of its 8 copies.
cat >"$T/check.sh" <<'EOS'
#!/usr/bin/env bash
while read -r word w; do
	[ "$word" = commit ] || continue
	ok=0
	for ((i = 0; i < 8; i++)); do
		[ "$("$P" -r "$PLUGDISK_STATE" verify $(((w * 8 + i) * 4096)) 4096 $((w + 1)))" = \
			"4096 ok" ] && { ok=1; break; }
	done
	[ $ok = 1 ] || { echo "commit $w acknowledged, every copy lost"; exit 1; }
done <"$PLUGDISK_MARKS"
EOS
chmod +x "$T/check.sh"

# The whole log: what exists, and which states fail.
"$PLUGDISK" explore --list-states --json "$T/w.log" >"$T/list.json" || fail "--list-states"
total=$(jq '.states_total' "$T/list.json")
flush=$(jq '[.states[] | select(.kind == "flush")] | length' "$T/list.json")
log "the log: $total states, $flush of kind flush"
assert_eq "$total" $((W * 256 + 1)) "states in the log (and the last flush's)"
"$PLUGDISK" explore -j 2 --kinds flush --json "$T/w.log" "$T/base.img" -- "$T/check.sh" \
	>"$T/flush.json"
assert_eq "$(jq .failed "$T/flush.json")" 3 "failing flush states"
assert_eq "$(jq -c '[.failures[].window]' "$T/flush.json")" "[17,41,58]" "their windows"
log "failing states: 3 of $total ($(awk -v t="$total" 'BEGIN { printf "%.3f", 300 / t }')%)"

# found SAMPLER SEED: whether a budget of 30 finds a failing state; the per-kind counts.
found() {
	local rc=0
	"$PLUGDISK" explore -j 2 --budget 30 --seed "$2" --sampler "$1" --json "$T/w.log" \
		"$T/base.img" -- "$T/check.sh" >"$T/$1-$2.json" || rc=$?
	[ "$rc" -le 1 ] || fail "explore --sampler $1 --seed $2 exited $rc"
	[ "$(jq .checked "$T/$1-$2.json")" -le 30 ] || fail "more than the budget checked"
	[ "$rc" = 1 ]
}
for sampler in stratified uniform; do
	hits=0
	for seed in 1 2 3 4 5 6 7 8 9 10; do found "$sampler" "$seed" && hits=$((hits + 1)); done
	eval "hits_$sampler=$hits"
	log "budget 30, --sampler $sampler: a failing state found with $hits of 10 seeds"
done
jq -c '.kinds' "$T/stratified-1.json" >&2
# Every kind present got states, and the failing kind all it could take in its round.
for k in flush prefix subset; do
	[ "$(jq ".kinds.$k.checked" "$T/stratified-1.json")" -ge 5 ] ||
		fail "kind $k got fewer than 5 of the budget"
done
assert_eq "$hits_stratified" 10 "seeds with which the stratified budget found a failing state"
[ "$hits_uniform" -lt 10 ] || fail "the uniform sample found them with every seed: the workload is not rare"
# The same seed picks the same states.
found stratified 3
jq -c '[.planned, .checked, [.failures[].id]]' "$T/stratified-3.json" >"$T/a"
cp "$T/stratified-3.json" "$T/first.json"
found stratified 3
jq -c '[.planned, .checked, [.failures[].id]]' "$T/stratified-3.json" >"$T/b"
cmp -s "$T/a" "$T/b" || fail "the same seed picked other states"
