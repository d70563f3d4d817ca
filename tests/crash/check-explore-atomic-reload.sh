#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A reload (SIGHUP) that changes cache.atomic_write from 4096 to 512 while cache.log records:
# the log holds the change in order with the writes, replay --list shows it, and explore
# tears the writes logged before it at 4 KiB units and those after it at 512 bytes, as a live
# cut does.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd jq

conf() {	# conf UNIT: write the config file atomically
	cat >"$T/pd.conf.new" <<CONF
disk = { image = "$T/disk.img"; size = "16M"; };
cache = { mode = "writeback"; destage_delay_ms = 600000; atomic_write = $1;
	  log = "$T/w.log"; };
CONF
	mv "$T/pd.conf.new" "$T/pd.conf"
}
truncate -s 16M "$T/disk.img" "$T/base.img"
head -c 16K /dev/urandom >"$T/a"
head -c 16K /dev/urandom >"$T/b"
conf 4096
pd_start -c "$T/pd.conf"
dd if="$T/a" of="$MNT/disk" bs=16K oflag=direct conv=notrunc status=none || fail "dd a"
conf 512
kill -HUP "$PD_PID"
true_within 10 grep -q "reloaded" "$T/daemon.log" || fail "no reload line in the daemon's log"
dd if="$T/b" of="$MNT/disk" bs=16K seek=64 oflag=direct conv=notrunc status=none || fail "dd b"
pd_stop

"$PLUGDISK" replay "$T/w.log" --list >"$T/list" || fail "replay --list"
cat "$T/list" >&2
grep -q '^# log: disk 16777216 bytes, atomic write 4096$' "$T/list" ||
	fail "replay --list does not start at 4096"
grep -Eq '^atomic write 512 after [1-9][0-9]* writes: ' "$T/list" ||
	fail "replay --list does not show the change to 512"
# Every write of a is listed before the change, none of b's.
before=$(sed -n 's/^atomic write 512 after \([0-9]*\) writes.*/\1/p' "$T/list")
total=$(sed -n 's/^end after \([0-9]*\) writes.*/\1/p' "$T/list")
[ "$before" -ge 1 ] && [ "$total" -gt "$before" ] ||
	fail "the change is not between the writes ($before of $total writes before it)"

"$PLUGDISK" explore --list-states --json "$T/w.log" "$T/base.img" >"$T/states.json" ||
	fail "explore --list-states"
# Torn states: [offset of the torn write, kept offset, kept length].
jq -c '(if type == "array" then . else .states end)[] | .torn[] |
	[.offset, .kept_offset, .kept_length]' "$T/states.json" >"$T/torn"
[ -s "$T/torn" ] || fail "explore offers no torn state"
awk -F'[][,]' '$2 < 1048576 && ($3 % 4096 || $4 % 4096) { bad++ }
	$2 < 1048576 { a++ } $2 >= 1048576 && ($3 % 512 || $4 % 512) { bad++ }
	$2 >= 1048576 && $4 % 4096 { b512++ }
	END { printf "%d %d %d\n", a, b512, bad }' "$T/torn" >"$T/counts"
read -r a b512 bad <"$T/counts"
log "torn states: $a of write a (4096-byte units), $b512 of write b off 4 KiB, $bad bad"
assert_eq "$bad" 0 "torn states off their write's unit"
assert_gt "$a" 0 "torn states of the write before the reload"
assert_gt "$b512" 0 "512-byte tears of the write after the reload"
exit 0
