#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every name in MOUNTPOINT/stats is documented in doc/stats.md, every documented name is
# present (patterns such as `{read,write}_bios` expanded, `N` in `nbd_connN_state` standing for
# a connection's number), no name repeats, and every line is a comment, a blank line or
# `name value` with an integer value (a word for stop_reason and fuse_transport). Run for a
# daemon on a file image with a fault in force (the main table, `fault_N_*` included), with
# the crc stage in its chain (the main table and the crc stage's), and on an nbdkit memory
# export (the main table and the NBD backend's).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd

doc=$TOP/doc/stats.md

# table ROW-NAME OUT: the names of the table of $doc holding the row `ROW-NAME`, one a line,
# braces expanded. A table is a block of consecutive '|' lines; its first column is the name
# or a brace pattern, in backticks.
table() {
	awk -v row="| \`$1\` |" '/^\|/ { blk = blk $0 "\n"; if (index($0, row) == 1) hit = 1; next }
		hit { printf "%s", blk; done = 1; exit }
		{ blk = "" }
		END { if (hit && !done) printf "%s", blk }' "$doc" |
		sed -n 's/^| `\([^`]*\)` |.*/\1/p' >"$T/patterns"
	: >"$2"
	while read -r pat; do
		[[ $pat =~ ^[a-z0-9_{},N]+$ ]] || fail "odd name pattern in the table: '$pat'"
		eval "printf '%s\n' $pat" >>"$2"
	done <"$T/patterns"
	sort -u "$2" -o "$2"
	[ -s "$2" ] || fail "no table with a \`$1\` row in $doc"
}

table plugged "$T/main"
n_doc=$(wc -l <"$T/main")
[ "$n_doc" -ge 50 ] || fail "only $n_doc documented names parsed from $doc"
table nbd_connections "$T/nbd"
n_nbd=$(wc -l <"$T/nbd")
table crc_checked_blocks "$T/crc"
[ "$(wc -l <"$T/crc")" -ge 2 ] || fail "only $(wc -l <"$T/crc") crc names parsed from $doc"
grep -qv '^crc_' "$T/crc" && fail "names other than crc_* in the crc table of $doc"
grep -q '^crc_' "$T/main" && fail "crc names in the main table of $doc"
[ "$n_nbd" -ge 15 ] || fail "only $n_nbd NBD names parsed from $doc"
grep -q '^nbd_' "$T/main" && fail "NBD names in the main table of $doc"
grep -qv '^nbd_' "$T/nbd" && fail "names other than nbd_* in the NBD table of $doc"
log "documentation: $doc, $n_doc names, $n_nbd of the NBD backend"

# check WHAT DOCUMENTED: the stats of the running daemon against the names in DOCUMENTED.
check() {
	local what=$1 documented=$2 bad dup undocumented missing
	stats_save "$T/stats"
	bad=$(awk '/^#/ || NF == 0 { next }
		NF != 2 { print; next }
		$1 == "stop_reason" { if ($2 !~ /^[a-z]+$/) print; next }
		$1 == "fuse_transport" { if ($2 !~ /^(classic|io_uring)$/) print; next }
		$2 !~ /^-?[0-9]+$/ { print }' "$T/stats")
	[ -z "$bad" ] || fail "$what: malformed stats lines: $bad"
	awk '!/^#/ && NF { print $1 }' "$T/stats" >"$T/names"
	dup=$(sort "$T/names" | uniq -d)
	[ -z "$dup" ] || fail "$what: names shown twice: $dup"
	sort -u "$T/names" -o "$T/present"
	# A documented name with N matches the names with a number there; it must match one.
	undocumented=$(awk 'NR == FNR { if ($1 ~ /N/) { re = $1; gsub(/N/, "[0-9]+", re)
				pat["^" re "$"] = 1 } else doc[$1] = 1; next }
		{ ok = $1 in doc; for (p in pat) if ($1 ~ p) ok = 1; if (!ok) print $1 }' \
		"$documented" "$T/present")
	missing=$(awk 'NR == FNR { have[$1] = 1; all = all " " $1; next }
		/N/ { re = $1; gsub(/N/, "[0-9]+", re); if (all !~ (" " re "( |$)")) print; next }
		!($1 in have) { print }' "$T/present" "$documented")
	[ -z "$undocumented" ] || fail "$what: in stats but not in $doc: $(echo $undocumented)"
	[ -z "$missing" ] || fail "$what: in $doc but not in stats: $(echo $missing)"
	log "$what: $(wc -l <"$T/present") names, all documented"
}

# A fault in force, that no request of the test meets: its fault_N_* lines.
pd_start --set "faults=op=discard offset=60M len=4K error=EIO"
check "file image" "$T/main"
grep -q '^fault_1_matched 0$' "$T/stats" || fail "no fault_1_matched line for the fault in force"
pd_stop

# The crc stage adds its names after the others'.
pd_start --set "stages.order=cache, faults, crc" --set "crc.file=$T/crc.sums" \
	--set "faults=op=discard offset=60M len=4K error=EIO"
sort -u "$T/main" "$T/crc" -o "$T/all"
check "crc stage" "$T/all"
pd_stop

# The NBD backend's names come on top of the others.
nbdkit_start unix memory 64M
pd_start -i "$NBD_URI" --set "faults=op=discard offset=60M len=4K error=EIO"
sort -u "$T/main" "$T/nbd" -o "$T/all"
check "nbdkit memory export" "$T/all"
grep -q '^nbd_conn0_state ' "$T/stats" || fail "no nbd_conn0_state line to match nbd_connN_state"
pd_stop
