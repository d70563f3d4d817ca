#!/bin/sh
# SPDX-License-Identifier: MIT
# Print MANPAGE with each GENERATED KEYS block replaced by what PLUGDISK --doc-keys=man
# prints for that section: the key table is the one source of every key's reference.
# Usage: man/gen-keys.sh PLUGDISK MANPAGE >NEW (`make doc` writes man/plugdisk.conf.5).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 PLUGDISK MANPAGE" >&2; exit 2; }
gen=$(mktemp)
trap 'rm -f "$gen"' EXIT
"$1" --doc-keys=man >"$gen"
# A section the binary prints and the page lacks, or the reverse, is an error: every group
# has its place in the page, chosen by hand.
awk -v genfile="$gen" '
BEGIN {
	while ((getline line <genfile) > 0) {
		if (line ~ /^\.\\" BEGIN GENERATED KEYS /) { sec = line; sub(/.* KEYS /, "", sec) }
		block[sec] = block[sec] line "\n"
		if (!(sec in seen)) { seen[sec] = 1; order[++n] = sec }
	}
}
/^\.\\" BEGIN GENERATED KEYS / {
	sec = $0; sub(/.* KEYS /, "", sec)
	if (!(sec in block)) { print "gen-keys: no keys of section " sec > "/dev/stderr"; bad = 1 }
	printf "%s", block[sec]; used[sec] = 1; skip = 1; next
}
skip && /^\.\\" END GENERATED KEYS/ { skip = 0; next }
skip { next }
{ print }
END {
	if (skip) { print "gen-keys: a GENERATED KEYS block does not end" > "/dev/stderr"; bad = 1 }
	for (i = 1; i <= n; i++)
		if (!(order[i] in used)) {
			print "gen-keys: the page has no GENERATED KEYS block for " order[i] > "/dev/stderr"
			bad = 1
		}
	exit bad
}' "$2"
