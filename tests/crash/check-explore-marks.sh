#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore on a raw disk: steps written with an fsync and then marked survive every
# crash state; the same log and seed give the same report; a log recorded with
# cache.flush = ignore gives failing states, which --state ID --image rebuilds exactly;
# marks need the log; bad input exits 2.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/explore-lib.sh"
require_fuse
require_cmd jq

export STEPS=$T
CHECK=$(dirname "$0")/explore-check-steps.sh
for i in 1 2 3 4 5; do head -c 64K /dev/urandom >"$T/p$i"; done

# record LOG [plugdisk args]: 4 steps, each written, fsynced and marked; then step 5's
# blocks, never flushed.
record() {
	local log=$1 i
	shift
	truncate -s 16M "$T/disk.img"
	pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
		--set cache.atomic_write=4096 --set "cache.log=$log" "$@"
	for i in 1 2 3 4; do
		dd if="$T/p$i" of="$MNT/disk" bs=64K seek=$((i - 1)) oflag=direct \
			conv=notrunc,fsync status=none || fail "dd step $i"
		echo "mark step $i" >"$MNT/control" || fail "mark step $i refused"
	done
	dd if="$T/p5" of="$MNT/disk" bs=16K seek=16 oflag=direct conv=notrunc status=none ||
		fail "dd of step 5"
	pd_stop
}
truncate -s 16M "$T/base.img"

record "$T/honour.log"
# replay --list shows the marks where they fall.
"$PLUGDISK" replay "$T/honour.log" --list >"$T/list" || fail "replay --list"
assert_eq "$(grep -c '^mark after [0-9]* writes: step [1-4]$' "$T/list")" 4 "marks listed"
grep -q ignored "$T/list" && fail "replay --list calls an honoured flush ignored"
explore_json "$T/all.json" "$T/honour.log" "$T/base.img" -- "$CHECK"
jq -r '.failures[:2][] | "\(.id) \(.after) \(.kind) \(.output)"' "$T/all.json" >&2
assert_eq "$EXPLORE_RC" 0 "explore's status on the fsynced steps"
[ "$(jq .checked "$T/all.json")" -ge 20 ] || fail "fewer than 20 states checked"

# A checker that fails where step 5's first write survived: the same report twice.
cat >"$T/no5.sh" <<'EOS'
#!/bin/sh
! cmp -s -i 0:262144 -n 16384 "$STEPS/p5" "$PLUGDISK_STATE"
EOS
chmod +x "$T/no5.sh"
for run in a b; do
	rc=0
	"$PLUGDISK" explore -j 2 --budget 30 --seed 9 --json "$T/honour.log" "$T/base.img" -- \
		"$T/no5.sh" >"$T/$run.json" || rc=$?
	assert_eq "$rc" 1 "explore's status with a checker failing some states"
	jq -c '[.planned, .checked, .duplicates, [.failures[] | .id, .kept, .dropped]]' \
		"$T/$run.json" >"$T/$run.ids"
done
cmp -s "$T/a.ids" "$T/b.ids" || fail "the same log and seed gave two reports"
jq -e '.sampled' "$T/a.json" >/dev/null || fail "a budget of 30 did not sample"
"$PLUGDISK" explore -j 2 --budget 30 --seed 10 --json "$T/honour.log" "$T/base.img" -- \
	"$T/no5.sh" >"$T/c.json"
jq -c '[.planned, .checked, .duplicates, [.failures[] | .id, .kept, .dropped]]' \
	"$T/c.json" >"$T/c.ids"
cmp -s "$T/a.ids" "$T/c.ids" && fail "seeds 9 and 10 sampled the same states"

# A disk that ignores flushes: acknowledged steps are lost in some states.
record "$T/ignore.log" --set cache.flush=ignore
"$PLUGDISK" replay "$T/ignore.log" --list | grep -q '^flush 1 .*; ignored' ||
	fail "replay --list does not say flush 1 was ignored"
mkdir "$T/keep"
explore_json "$T/ign.json" --budget 120 --keep-failing "$T/keep" --keep-max 0 "$T/ignore.log" \
	"$T/base.img" -- "$CHECK"
assert_eq "$EXPLORE_RC" 1 "explore's status with cache.flush = ignore"
[ "$(jq .failed "$T/ign.json")" -gt 0 ] || fail "no failing state with cache.flush = ignore"
jq -e '.failures[0].after | test("ignored")' "$T/ign.json" >/dev/null ||
	fail "a failure does not say its flush was ignored"

# The rebuild command of a failure writes that very state: the checker fails on it too.
id=$(jq '.failures[0].id' "$T/ign.json")
"$PLUGDISK" explore --state "$id" --image "$T/s.img" "$T/ignore.log" "$T/base.img" ||
	fail "--state $id --image failed"
# --keep-failing wrote every failing state, the same bytes as the rebuild.
assert_eq "$(find "$T/keep" -name 'state-*.img' | wc -l)" "$(jq .failed "$T/ign.json")" \
	"images kept by --keep-failing"
cmp -s "$T/s.img" "$T/keep/state-$id.img" || fail "--keep-failing and --image differ"
assert_eq "$(jq -r .failures[0].image "$T/ign.json")" "$T/keep/state-$id.img" "the report's image"
jq -r '.failures[0].rebuild' "$T/ign.json" | grep -q -- "--state $id --image" ||
	fail "the rebuild command does not name the state"
grep -Fxq "$(jq -r '.failures[0].mark // ""' "$T/ign.json")" <(echo; printf 'step %s\n' 1 2 3 4) ||
	fail "the failure's mark is not one of the marks"
rc=0
PLUGDISK_STATE=$T/s.img PLUGDISK_MARK=$(jq -r '.failures[0].mark // ""' "$T/ign.json") \
	PLUGDISK_MARKS=<(printf 'step %s\n' 1 2 3 4 |
		head -n "$(jq .failures[0].marks_acknowledged "$T/ign.json")") \
	"$CHECK" >/dev/null || rc=$?
assert_eq "$rc" 1 "the checker on the rebuilt image"
"$PLUGDISK" explore --state "$id" "$T/ignore.log" "$T/base.img" -- "$CHECK" >/dev/null &&
	fail "explore --state $id passed a failing state"

# --timeout: a checker that hangs (the first one run), and the child it started, are killed;
# the state fails as timed out, and explore goes on to the next. A checker under the limit
# passes.
cat >"$T/hang.sh" <<'EOS'
#!/bin/sh
if mkdir "$STEPS/hung" 2>/dev/null; then
	sleep 1000 &
	echo $! >"$STEPS/hang.pid"
	wait
fi
exit 0
EOS
chmod +x "$T/hang.sh"
rc=0
timeout 120 "$PLUGDISK" explore -j 2 --budget 6 --timeout 2s --json "$T/honour.log" \
	"$T/base.img" -- "$T/hang.sh" >"$T/to.json" || rc=$?
assert_eq "$rc" 1 "explore's status with a checker that hangs on state 0"
assert_eq "$(jq -c '[.failures[] | .timed_out]' "$T/to.json")" "[true]" \
	"the states that timed out"
assert_eq "$(jq .checked "$T/to.json")" "$(jq .planned "$T/to.json")" "states checked"
pid_gone_within 5 "$(cat "$T/hang.pid")" || fail "the hung checker's child outlived it"
rmdir "$T/hung"
"$PLUGDISK" explore -j 2 --budget 6 --timeout 2s "$T/honour.log" "$T/base.img" -- \
	"$T/hang.sh" | grep -q "timed out after 2 s" || fail "the text report does not say timed out"
explore_json "$T/ok.json" --budget 6 --timeout 1min "$T/honour.log" "$T/base.img" -- "$CHECK"
assert_eq "$EXPLORE_RC" 0 "explore's status with a checker within --timeout"

# What a checker leaves running when it exits goes with it (its process group).
cat >"$T/leave.sh" <<'EOS'
#!/bin/sh
sleep 1000 &
echo $! >>"$STEPS/left.pids"
exit 0
EOS
chmod +x "$T/leave.sh"
explore_json "$T/leave.json" --budget 4 "$T/honour.log" "$T/base.img" -- "$T/leave.sh"
assert_eq "$EXPLORE_RC" 0 "explore's status with a checker that leaves a child"
assert_eq "$(wc -l <"$T/left.pids")" 4 "checkers run"
for p in $(cat "$T/left.pids"); do
	pid_gone_within 5 "$p" || fail "a child a checker left behind ($p) outlived it"
done

# A stop (SIGINT) ends a checker that ignores SIGTERM, and explore exits (3: interrupted).
cat >"$T/deaf.sh" <<'EOS'
#!/bin/sh
trap '' TERM
echo $$ >"$STEPS/deaf.pid"
while :; do sleep 1; done
EOS
chmod +x "$T/deaf.sh"
"$PLUGDISK" explore -j 1 --budget 2 "$T/honour.log" "$T/base.img" -- "$T/deaf.sh" \
	>/dev/null 2>&1 &
xpid=$!
for _ in $(seq 100); do [ -s "$T/deaf.pid" ] && break; sleep 0.1; done
[ -s "$T/deaf.pid" ] || fail "the checker did not start"
kill -INT "$xpid"
pid_gone_within 5 "$xpid" || { kill -KILL "$xpid" "$(cat "$T/deaf.pid")"; fail "explore did not stop"; }
rc=0
wait "$xpid" || rc=$?
assert_eq "$rc" 3 "explore's status when interrupted"
pid_gone_within 5 "$(cat "$T/deaf.pid")" || fail "the checker that ignores SIGTERM outlived explore"

# Marks need the write log.
pd_start -s 16M --set cache.mode=writeback
echo "mark x" >"$MNT/control" 2>/dev/null && fail "a mark without cache.log was accepted"
pd_stop

# Bad input: status 2.
bad() { expect_exit 2 "$PLUGDISK" explore "$@"; }
bad
bad "$T/honour.log" "$T/base.img"
bad "$T/honour.log" "$T/base.img" --
bad "$T/honour.log" "$T/base.img" true
bad "$T/p1" "$T/base.img" -- true
bad "$T/honour.log" "$T/missing.img" -- true
bad --budget 0 "$T/honour.log" "$T/base.img" -- true
bad --budget x "$T/honour.log" "$T/base.img" -- true
bad -k 4 "$T/honour.log" "$T/base.img" -- true
bad -j 0 "$T/honour.log" "$T/base.img" -- true
bad --timeout 0 "$T/honour.log" "$T/base.img" -- true
bad --timeout soon "$T/honour.log" "$T/base.img" -- true
bad --state 99999999 "$T/honour.log" "$T/base.img" -- true
bad --image "$T/x.img" "$T/honour.log" "$T/base.img"
bad --keep-failing "$T/nodir" "$T/honour.log" "$T/base.img" -- true
bad "$T/honour.log" "$T/base.img" -- "$T/no-such-checker"
"$PLUGDISK" explore --help | grep -q PLUGDISK_MARKS || fail "--help does not name PLUGDISK_MARKS"
