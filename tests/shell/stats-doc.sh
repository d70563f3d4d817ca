#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every stats name is written once, in its producer's name table (core/util/stats_table.h,
# gathered by daemon/client/stats_names.c, printed by `plugdisk stats --list-names`), which
# also writes its lines of the stats file, gives the Prometheus output its HELP text
# and doc/stats.md its tables (doc/gen-stats.sh, `make doc`): the committed doc is what the
# generator writes, and its tables hold exactly the table's names, units and order.
. "$(dirname "$0")/../lib.sh"
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

"$PLUGDISK" stats --list-names | cut -f1,2 >"$T/table" || fail "--list-names"
[ "$(wc -l <"$T/table")" -ge 100 ] || fail "the table has $(wc -l <"$T/table") names"
sed -n 's/^| `\([^`]*\)` | \([^|]*\) | .*/\1\t\2/p' "$TOP/doc/stats.md" | sed 's/ *$//' |
	grep -P '^[a-zA-Z0-9_{},]+\t[^`]' >"$T/doc"
diff -u "$T/table" "$T/doc" >"$T/diff" ||
	fail "doc/stats.md and the name table differ (- table, + doc): $(head -20 "$T/diff")"
# The doc is what doc/gen-stats.sh writes from the table.
doc=$TOP/doc/stats.md
"$TOP/doc/gen-stats.sh" "$PLUGDISK" "$doc" >"$T/gen" || fail "doc/gen-stats.sh failed"
diff -u "$doc" "$T/gen" >"$T/gen.diff" ||
	fail "$doc differs from the name table (run make doc): $(head -20 "$T/gen.diff")"
# The check can fail: a doc with one unit changed is caught...
sed '0,/^| `plugged` | 0\/1 |/s//| `plugged` | bool |/' "$doc" >"$T/stale"
cmp -s "$doc" "$T/stale" && fail "found no plugged row to alter"
"$TOP/doc/gen-stats.sh" "$PLUGDISK" "$T/stale" | cmp -s - "$T/stale" &&
	fail "a stale unit was not replaced"
# ... and a doc without its blocks is refused rather than silently left incomplete.
grep -v '^<!-- .* GENERATED STATS' "$doc" >"$T/nomarkers"
"$TOP/doc/gen-stats.sh" "$PLUGDISK" "$T/nomarkers" >/dev/null 2>"$T/err" &&
	fail "a doc with no GENERATED STATS blocks was accepted"
grep -q 'no GENERATED STATS blocks' "$T/err" || fail "unexpected message: $(cat "$T/err")"
log "$doc: $(grep -c '^<!-- BEGIN GENERATED STATS' "$doc") generated tables, as the binary prints them"
# Every name of a live stats file has its entry: checked by tests/mount/stats-names.sh
# against the same tables.
exit 0
