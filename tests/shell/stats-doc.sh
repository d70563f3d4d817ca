#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every stats name is written once, in the daemon's name table (daemon/client/stats_names.c,
# printed by `plugdisk stats --list-names`), which gives the Prometheus output its HELP text:
# doc/stats.md's tables hold exactly its names, with the same units, in the same order.
. "$(dirname "$0")/../lib.sh"
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

"$PLUGDISK" stats --list-names | cut -f1,2 >"$T/table" || fail "--list-names"
[ "$(wc -l <"$T/table")" -ge 100 ] || fail "the table has $(wc -l <"$T/table") names"
sed -n 's/^| `\([^`]*\)` | \([^|]*\) | .*/\1\t\2/p' "$TOP/doc/stats.md" | sed 's/ *$//' |
	grep -P '^[a-zA-Z0-9_{},]+\t[^`]' >"$T/doc"
diff -u "$T/table" "$T/doc" >"$T/diff" ||
	fail "doc/stats.md and the name table differ (- table, + doc): $(head -20 "$T/diff")"
# Every name of a live stats file has its entry: checked by tests/mount/stats-names.sh
# against the same tables.
exit 0
