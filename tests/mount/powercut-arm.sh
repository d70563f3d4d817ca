#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# powercut arm answers what it armed, in the words that arm it (the seed a random trigger
# drew included), logs it once, and the listing shows the same line; disarm clears it.
. "$(dirname "$0")/../lib.sh"
require_fuse
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000
armed() { grep '^powercut arm\|^powercut disarm' "$MNT/control"; }

assert_eq "$(ctl powercut arm write=3)" "powercut arm write=3 after_flush=0" "answer to write=3"
assert_eq "$(armed)" "powercut arm write=3 after_flush=0" "listing after write=3"
grep -q "control: armed: powercut arm write=3 after_flush=0$" "$T/daemon.log" ||
	fail "the arm was not logged: $(cat "$T/daemon.log")"
assert_eq "$(ctl powercut arm flush=2 write=5 mode=drop)" \
	"powercut arm write=5 after_flush=2 mode=drop" "answer to flush=2 write=5 mode=drop"
ans=$(ctl powercut arm random=100)
[[ $ans =~ ^powercut\ arm\ random=100\ seed=[0-9]+$ ]] || fail "answer to random=100: '$ans'"
assert_eq "$(armed)" "$ans" "listing after random=100"
# The answer is a command: written back, it arms the same trigger with the same seed.
# shellcheck disable=SC2086
assert_eq "$(ctl $ans)" "$ans" "the answer written back"
ans=$(ctl powercut arm after_ms=600000)
[[ $ans =~ ^powercut\ arm\ after_ms=(599[0-9]{3}|600000)$ ]] || fail "answer to after_ms: '$ans'"
# after_ms takes a duration, as the _ms keys do.
ans=$(ctl powercut arm after_ms=10min)
[[ $ans =~ ^powercut\ arm\ after_ms=(599[0-9]{3}|600000)$ ]] || fail "answer to after_ms=10min: '$ans'"
ctl powercut arm after_ms=1.5us >"$T/out" 2>&1 && fail "after_ms=1.5us accepted"
grep -q "not a whole number of milliseconds" "$T/out" || fail "after_ms=1.5us: $(cat "$T/out")"
assert_eq "$(ctl powercut disarm)" "" "disarm answers nothing"
assert_eq "$(armed)" "powercut disarm" "listing after disarm"
# A refused arm answers why and arms nothing.
ctl powercut arm write=0 >"$T/out" 2>&1 && fail "write=0 accepted"
grep -q "at least 1" "$T/out" || fail "write=0: $(cat "$T/out")"
assert_eq "$(armed)" "powercut disarm" "listing after a refused arm"
pd_stop
