#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The control listing writes back as it reads: `cat control > x; cat x > control` succeeds,
# its '#' comments and blank lines are skipped, and it recreates the holds it lists. A write
# of several lines runs them in order and stops at the first bad one, which fails it.
. "$(dirname "$0")/../lib.sh"
require_fuse
listing() { grep -v '^#' "$MNT/control" | tr '\n' ' '; }

for cache in none writeback; do
	pd_start -s 64M --set cache.mode=$cache
	cat "$MNT/control" >"$T/x" || fail "$cache: read the listing"
	grep -q '^#' "$T/x" || fail "$cache: the listing has no comment line to test"
	cat "$T/x" >"$MNT/control" || fail "$cache: the listing written back was refused"
	diff "$T/x" "$MNT/control" >&2 || fail "$cache: writing the listing back changed it"

	# The holds, listed, released, and recreated from the saved listing.
	printf 'stop\n' >"$MNT/control" && printf 'plug\n' >"$MNT/control" || fail "stop, plug"
	cat "$MNT/control" >"$T/held"
	printf 'start\n' >"$MNT/control" && printf 'unplug\n' >"$MNT/control" ||
		fail "start, unplug"
	assert_eq "$(listing | cut -d' ' -f1-2)" "start unplug" "$cache: listing after start"
	cat "$T/held" >"$MNT/control" || fail "$cache: the held listing written back was refused"
	assert_eq "$(listing | cut -d' ' -f1-2)" "stop plug" "$cache: listing written back"
	diff "$T/held" "$MNT/control" >&2 || fail "$cache: the held listing did not come back"
	cat "$T/x" >"$MNT/control" || fail "$cache: the first listing written back"
	assert_eq "$(listing | cut -d' ' -f1-2)" "start unplug" "$cache: first listing back"

	# Comments and blank lines alone do nothing and succeed.
	printf '# a comment\n\n   \n\t# indented\n' >"$T/c"
	cat "$T/c" >"$MNT/control" || fail "comments refused"
	printf '\n' >"$MNT/control" || fail "a blank line refused"

	# Several lines: run in order up to the first bad one, which fails the write and is
	# the one logged.
	n0=$(grep -c "control: '" "$T/daemon.log")
	printf 'stop\nbogus\nplug\n' >"$T/bad" # bash's printf writes line by line; cat at once
	(cat "$T/bad" >"$MNT/control") 2>"$T/err" && fail "a bad line passed"
	grep -q "Invalid argument" "$T/err" || fail "bad line: not EINVAL: $(cat "$T/err")"
	assert_eq "$(($(grep -c "control: '" "$T/daemon.log") - n0))" 1 "log lines for the bad line"
	grep -q "control: 'bogus': unknown command" "$T/daemon.log" || fail "the bad line not named"
	assert_eq "$(listing | cut -d' ' -f1-2)" "stop unplug" "$cache: lines before the bad one ran"
	printf 'start\n' >"$MNT/control" || fail "start"
	pd_stop
done
