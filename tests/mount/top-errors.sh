#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk top answers bad input with a message: usage errors (no MOUNTPOINT, a bad INTERVAL,
# an unknown option, an extra argument, --once with --batch) exit 2; a directory without a
# plugdisk mounted, or a stats file that is not plugdisk's (not on a FUSE mount), exits 4 as
# with stats and ctl. Needs no mount.
. "$(dirname "$0")/../lib.sh"
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

expect_exit 2 "$PLUGDISK" top
grep -q MOUNTPOINT "$T/out" || fail "no mention of MOUNTPOINT: $(cat "$T/out")"
for iv in 0 -1 abc 1x nan inf 1e9 ''; do
	expect_exit 2 "$PLUGDISK" top "$T" "$iv" --once
	grep -q INTERVAL "$T/out" || fail "interval '$iv': $(cat "$T/out")"
done
expect_exit 2 "$PLUGDISK" top "$T" --bogus
grep -q -- --bogus "$T/out" || fail "unknown option not named: $(cat "$T/out")"
expect_exit 2 "$PLUGDISK" top "$T" 1 2 3
grep -q "unexpected argument .3." "$T/out" || fail "a third argument: $(cat "$T/out")"
expect_exit 2 "$PLUGDISK" top "$T" --once --batch
expect_exit 0 "$PLUGDISK" top --help
grep -q -- --batch "$T/out" || fail "--help does not list --batch"

# Not a plugdisk mount (exit 4, as stats and ctl say it): nothing mounted, a missing
# directory, a foreign stats file.
mkdir -p "$T/empty"
expect_exit 4 "$PLUGDISK" top "$T/empty" 0.1 --once
grep -q "$T/empty/stats" "$T/out" && grep -qi plugdisk "$T/out" || fail "message: $(cat "$T/out")"
expect_exit 4 "$PLUGDISK" top "$T/missing" 0.1 --batch
expect_exit 4 "$PLUGDISK" stats "$T/missing"
expect_exit 4 "$PLUGDISK" ctl "$T/missing" stop
mkdir -p "$T/fake"
printf 'plugged 0\nsomething 1\n' >"$T/fake/stats"
expect_exit 4 "$PLUGDISK" top "$T/fake" 0.1 --once
grep -qE "not a plugdisk stats file|not a file of a FUSE mount" "$T/out" || fail "foreign stats: $(cat "$T/out")"
printf 'plugged x\n' >"$T/fake/stats"
expect_exit 4 "$PLUGDISK" top "$T/fake" 0.1 --once
