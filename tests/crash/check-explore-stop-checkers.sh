#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A stop of explore (SIGTERM) while six checkers run ends at once: each checker that goes on
# SIGTERM is reaped when it has gone, not after the 2 s allowed to one that ignores it (which
# made a stop wait 2 s per running checker), and none is left.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../wlog-lib.sh"
require_fuse
require_cmd perl

# Eight writes of 512 bytes, no flush: a window of 2^8 subsets, many states.
{
	wlog_hdr 2 512 65536
	for i in 0 1 2 3 4 5 6 7; do
		wlog_rec 1 1 $((i * 512)) 512
		wlog_data 512 "4$i"
	done
} >"$T/cache.log"
truncate -s 64K "$T/base.img"
mkdir "$T/run"
# The checker is its process group's leader and goes on SIGTERM.
"$PLUGDISK" explore -j 6 "$T/cache.log" "$T/base.img" -- \
	sh -c 'echo $$ >"$0/run/$PLUGDISK_STATE_ID"; exec sleep 60' "$T" >"$T/out" 2>&1 &
xpid=$!
_pd_pids+=("$xpid")
running() { [ "$(find "$T/run" -type f | wc -l)" -ge 6 ]; }
true_within 20 running || fail "six checkers did not start: $(cat "$T/out")"
t0=$EPOCHREALTIME
kill -TERM "$xpid"
rc=0
wait "$xpid" || rc=$?
ms=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%d", (b - a) * 1000}')
log "explore ended $ms ms after SIGTERM"
# Each of six checkers held it 2 s before; a stop is a few tens of milliseconds.
[ "$ms" -lt 5000 ] || fail "explore ran $ms ms after SIGTERM with six checkers"
assert_eq "$rc" 3 "explore's exit status after SIGTERM"
grep -q "interrupted" "$T/out" || fail "no 'interrupted': $(cat "$T/out")"
for f in "$T"/run/*; do
	pid_gone "$(cat "$f")" || fail "checker $(basename "$f") (pid $(cat "$f")) still runs"
done
log "explore stopped at once with six checkers running"
