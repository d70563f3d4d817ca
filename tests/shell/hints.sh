#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Messages that say how to fix what they report, and no noise: a size that is not a multiple
# of 512 names the nearest ones; an unquoted size in a config file gets a hint to quote it;
# `make install` to a PREFIX systemd does not search says so instead of "daemon-reload".
. "$(dirname "$0")/../lib.sh"
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

expect_exit 2 "$PLUGDISK" -s 100MB --dump-config
grep -qF "plugdisk: -s 100MB: disk.size: must be a multiple of 512 (got 100000000; the nearest are 99999744 and 100000256)" \
	"$T/out" || fail "-s 100MB: $(cat "$T/out")"
expect_exit 2 "$PLUGDISK" -s 1000 --dump-config
grep -qF "(got 1000; the nearest are 512 and 1024)" "$T/out" || fail "-s 1000: $(cat "$T/out")"

printf 'disk = {\n\tsize = 64M;\n};\n' >"$T/bad.conf"
expect_exit 2 "$PLUGDISK" -c "$T/bad.conf" --dump-config
grep -qF "$T/bad.conf:2: syntax error: quote sizes and durations" "$T/out" ||
	fail "unquoted size: $(cat "$T/out")"
# Another syntax error gets no such hint.
printf 'disk = {\n\tsize = = "64M";\n};\n' >"$T/bad2.conf"
expect_exit 2 "$PLUGDISK" -c "$T/bad2.conf" --dump-config
grep -q "quote sizes" "$T/out" && fail "a hint for a doubled =: $(cat "$T/out")"

# make install under a PREFIX that systemd does not search (everything under $T).
require_cmd make
make -s -C "$TOP" install B="$(dirname "$PLUGDISK")" PREFIX="$T/opt" SYSCONFDIR="$T/etc" \
	>"$T/install.out" 2>&1 || fail "make install: $(cat "$T/install.out")"
grep -q "daemon-reload' to load" "$T/install.out" && fail "told to daemon-reload: $(cat "$T/install.out")"
grep -q "systemd does not search $T/opt/lib/systemd/system" "$T/install.out" ||
	fail "no word on the unit directory: $(cat "$T/install.out")"
[ -f "$T/opt/lib/systemd/system/plugdisk@.service" ] || fail "unit not installed"
exit 0
