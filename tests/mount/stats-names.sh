#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every name in MOUNTPOINT/stats is documented in the stats table (README.md once it holds the
# table, else doc/stats.md), every documented name is present (patterns such as
# `{read,write}_bios` expanded), no name repeats, and every line is a comment, a blank line or
# `name value` with an integer value (a word for stop_reason and fuse_transport).
. "$(dirname "$0")/../lib.sh"
require_fuse

doc=$TOP/README.md
grep -q '^| `plugged` |' "$doc" 2>/dev/null || doc=$TOP/doc/stats.md
grep -q '^| `plugged` |' "$doc" 2>/dev/null || fail "no stats table in README.md or doc/stats.md"
log "documentation: $doc"

# The table is the block of consecutive '|' lines that holds the `plugged` row; its first
# column is the name or a brace pattern, in backticks.
awk '/^\|/ { blk = blk $0 "\n"; if ($0 ~ /^\| `plugged` \|/) hit = 1; next }
	hit { printf "%s", blk; done = 1; exit }
	{ blk = "" }
	END { if (hit && !done) printf "%s", blk }' "$doc" |
	sed -n 's/^| `\([^`]*\)` |.*/\1/p' >"$T/patterns"
: >"$T/documented"
while read -r pat; do
	[[ $pat =~ ^[a-z0-9_{},]+$ ]] || fail "odd name pattern in the table: '$pat'"
	eval "printf '%s\n' $pat" >>"$T/documented"
done <"$T/patterns"
sort -u "$T/documented" -o "$T/documented"
n_doc=$(wc -l <"$T/documented")
[ "$n_doc" -ge 50 ] || fail "only $n_doc documented names parsed from $doc"

pd_start
stats_save "$T/stats"
bad=$(awk '/^#/ || NF == 0 { next }
	NF != 2 { print; next }
	$1 == "stop_reason" { if ($2 !~ /^[a-z]+$/) print; next }
	$1 == "fuse_transport" { if ($2 !~ /^(classic|io_uring)$/) print; next }
	$2 !~ /^-?[0-9]+$/ { print }' "$T/stats")
[ -z "$bad" ] || fail "malformed stats lines: $bad"
awk '!/^#/ && NF { print $1 }' "$T/stats" >"$T/names"
dup=$(sort "$T/names" | uniq -d)
[ -z "$dup" ] || fail "names shown twice: $dup"
sort -u "$T/names" -o "$T/present"

undocumented=$(comm -23 "$T/present" "$T/documented")
missing=$(comm -13 "$T/present" "$T/documented")
[ -z "$undocumented" ] || fail "in stats but not documented in $doc: $(echo $undocumented)"
[ -z "$missing" ] || fail "documented in $doc but not in stats: $(echo $missing)"
log "$(wc -l <"$T/present") names, all documented"
pd_stop
