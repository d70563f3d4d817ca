#!/bin/sh
# SPDX-License-Identifier: MIT
# Print doc/stats.md with each GENERATED STATS block replaced by the name table's rows, as
# PLUGDISK stats --list-names=markdown prints them: a block starts at the name its marker
# gives and ends before the next block's. The producers' name tables (core/util/stats_table.h,
# gathered by daemon/client/stats_names.c) are the one source of every stats name, its unit
# and its meaning.
# Usage: doc/gen-stats.sh PLUGDISK DOC >NEW (`make doc` rewrites doc/stats.md).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 PLUGDISK DOC" >&2; exit 2; }
gen=$(mktemp)
trap 'rm -f "$gen"' EXIT
"$1" stats --list-names=markdown >"$gen"
awk -v genfile="$gen" '
BEGIN {
	nblocks = 0
	while ((getline line <genfile) > 0) {
		row[++nrows] = line
		name = line; sub(/^\| `/, "", name); sub(/`.*/, "", name)
		at[name] = nrows
	}
}
/^<!-- BEGIN GENERATED STATS / {
	first = $5; sub(/:$/, "", first)
	if (!(first in at)) { print "gen-stats: no name " first " in the table" > "/dev/stderr"; bad = 1 }
	start[++nblocks] = at[first]; head[nblocks] = $0; skip = 1; next
}
skip && /^<!-- END GENERATED STATS -->/ { skip = 0; next }
skip { next }
{ text[nblocks] = text[nblocks] $0 "\n" }
END {
	if (skip) { print "gen-stats: a GENERATED STATS block does not end" > "/dev/stderr"; exit 1 }
	if (!nblocks) { print "gen-stats: no GENERATED STATS blocks" > "/dev/stderr"; exit 1 }
	if (start[1] != 1) { print "gen-stats: the first block does not start at the first name" > "/dev/stderr"; bad = 1 }
	printf "%s", text[0]
	for (b = 1; b <= nblocks; b++) {
		end = b < nblocks ? start[b + 1] - 1 : nrows
		if (end < start[b]) { print "gen-stats: blocks out of the table order" > "/dev/stderr"; bad = 1 }
		print head[b]
		print "| name | unit | meaning |"
		print "|---|---|---|"
		for (i = start[b]; i <= end; i++)
			print row[i]
		print "<!-- END GENERATED STATS -->"
		printf "%s", text[b]
	}
	exit bad
}' "$2"
