#!/bin/sh
# SPDX-License-Identifier: MIT
# gen.sh PLUGDISK TEMPLATE: print the bash completion, TEMPLATE with its "# @GENERATED@" line
# replaced by the lists the built PLUGDISK gives: its options (--help), its keys with their
# words (--list-keys), its profiles (--list-profiles) and its control commands.
set -eu
pd=$1 template=$2
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	printf '_plugdisk_options="%s"\n' "$("$pd" --help | grep -E '^ +-' | grep -oE -- '(^|[ ,(])--?[A-Za-z][a-z-]*' |
		sed 's/^[ ,(]*//' | sort -u | tr '\n' ' ' | sed 's/ $//')"
	printf '_plugdisk_keys="%s"\n' "$("$pd" --list-keys | awk '{ print $1 }' | tr '\n' ' ' | sed 's/ $//')"
	printf '_plugdisk_profiles="%s"\n' "$("$pd" --list-profiles | grep -E '^[a-z0-9][a-z0-9._-]*$' |
		tr '\n' ' ' | sed 's/ $//')"
	printf '_plugdisk_commands="%s"\n' "$("$pd" ctl --list-commands | tr '\n' ' ' | sed 's/ $//')"
	# each subcommand's options, from its own --help (the exit-status line's pointer aside)
	echo 'declare -gA _plugdisk_sub_options=('
	for sub in top stats replay explore; do
		printf '\t[%s]="%s"\n' "$sub" "$({ echo --help; "$pd" "$sub" --help 2>&1 |
			grep -v '^Exit status:' | grep -oE -- '(^|[] ,(\[|])--?[A-Za-z][a-z-]*' |
			sed 's/^[] ,(|[]*//' | grep -vx -- '-x'; } | sort -u | tr '\n' ' ' | sed 's/ $//')"
	done
	echo ')'
	echo 'declare -gA _plugdisk_key_words=('
	"$pd" --list-keys | awk 'NF > 2 { w = $3; for (i = 4; i <= NF; i++) w = w " " $i;
		printf "\t[%s]=\"%s\"\n", $1, w }'
	echo ')'
} >"$tmp"
# every list must have come out: an empty one means the binary did not answer
grep -q '^_plugdisk_keys=".*disk.size' "$tmp" && grep -q '^_plugdisk_commands=".*powercut' "$tmp" &&
	grep -q '^_plugdisk_options=".*--set' "$tmp" && grep -q '\[explore\]=".*--budget' "$tmp" || { echo "gen.sh: $pd gave no lists" >&2; exit 1; }
awk -v gen="$tmp" '$0 == "# @GENERATED@" { while ((getline l < gen) > 0) print l; next } { print }' \
	"$template"
