#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The key table is the one source of the key reference: man/plugdisk.conf.5 holds what
# `plugdisk --doc-keys=man` prints (`make doc` regenerates it), and conf/plugdisk.conf holds
# every key of the table, no other, each at its default (in its line and in any "Default X"
# of its comment), with "Fixed at start" in its comment exactly when a reload leaves it for
# the next start. --doc-keys=conf is a config that loads.
. "$(dirname "$0")/../lib.sh"
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

# --- the man page ----------------------------------------------------------------------
man=$TOP/man/plugdisk.conf.5
"$TOP/man/gen-keys.sh" "$PLUGDISK" "$man" >"$T/man" || fail "man/gen-keys.sh failed"
diff -u "$man" "$T/man" >"$T/man.diff" ||
	fail "$man differs from the key table (run make doc): $(head -20 "$T/man.diff")"
n=$(grep -c '^\.\\" BEGIN GENERATED KEYS' "$man")
for sec in disk mount queue controller backend cache faults profile stages crc; do
	grep -q "^\\.\\\\\" BEGIN GENERATED KEYS $sec\$" "$man" || fail "$man has no $sec section"
done
log "$man: $n generated sections, as the binary prints them"

# The check can fail: a page with one default changed is caught.
sed '0,/^Default: 32\./s//Default: 33./' "$man" >"$T/stale"
cmp -s "$man" "$T/stale" && fail "found no 'Default: 32.' line to alter"
"$TOP/man/gen-keys.sh" "$PLUGDISK" "$T/stale" | cmp -s - "$T/stale" &&
	fail "a stale default was not replaced"
# A page without a section's block is refused rather than silently left incomplete.
grep -v '^\.\\" .* GENERATED KEYS' "$man" >"$T/nomarkers"
"$TOP/man/gen-keys.sh" "$PLUGDISK" "$T/nomarkers" >/dev/null 2>"$T/err" &&
	fail "a page with no GENERATED KEYS blocks was accepted"
grep -q 'no GENERATED KEYS block for disk' "$T/err" || fail "unexpected message: $(cat "$T/err")"

# --- the example config -----------------------------------------------------------------
# The table: "name default reload" from the Markdown reference.
"$PLUGDISK" --doc-keys=md | awk -F' [|] ' 'NR > 2 {
	name = $1; sub(/^[|] `/, "", name); sub(/`$/, "", name)
	def = $3; gsub(/^`|`$/, "", def)
	print name "\t" def "\t" ($5 == "at the next start" ? "restart" : "live") }' |
	sort >"$T/table"
[ "$(wc -l <"$T/table")" -eq "$("$PLUGDISK" --list-keys | wc -l)" ] ||
	fail "--doc-keys=md and --list-keys do not list the same number of keys"

# conf/plugdisk.conf: "name value fixed said" for every "key = value;" line, commented or not,
# in its group; the comment block above it (since the last blank line) says whether a reload
# applies it, and may say "Default X" (said). A value that spans lines (the faults list) is
# "-": an example, not compared.
conf=$TOP/conf/plugdisk.conf
awk '
/^[a-z_]+ = \{/ { group = $1 "."; cmt = ""; next }
/^};/ { group = ""; cmt = ""; next }
/^[ \t]*$/ { cmt = ""; next }
{
	line = $0; sub(/^[ \t]*/, "", line)
	if (match(line, /^(# )?[a-z_]+ = /)) {
		key = line; sub(/^# /, "", key); val = key
		sub(/ = .*/, "", key); sub(/^[a-z_]+ = /, "", val)
		if (val ~ /;$/) sub(/;$/, "", val); else val = "-"
		said = "-"
		if (match(cmt, /Default:? [^ ;,]+/)) {
			said = substr(cmt, RSTART, RLENGTH); sub(/^Default:? /, "", said)
			sub(/\.$/, "", said)
		}
		print group key "\t" val "\t" (cmt ~ /Fixed at start/ ? "restart" : "live") "\t" said
		next
	}
	if (line ~ /^#/) cmt = cmt " " line
}' "$conf" | sort >"$T/conf"

cut -f1 "$T/table" >"$T/table.keys"
cut -f1 "$T/conf" >"$T/conf.keys"
dup=$(uniq -d "$T/conf.keys")
[ -z "$dup" ] || fail "$conf sets a key twice: $(echo $dup)"
missing=$(comm -23 "$T/table.keys" "$T/conf.keys")
unknown=$(comm -13 "$T/table.keys" "$T/conf.keys")
[ -z "$missing" ] || fail "keys of the table missing from $conf: $(echo $missing)"
[ -z "$unknown" ] || fail "keys in $conf that plugdisk does not know: $(echo $unknown)"

bad=$(join -t "$(printf '\t')" "$T/table" "$T/conf" | awk -F'\t' '
	$4 != "-" && $2 != $4 { print $1 ": default " $2 ", the file says " $4 }
	{ d = $2; gsub(/"/, "", d); w = $6; gsub(/"/, "", w) }
	w != "-" && w != "none" && w != d { print $1 ": default " $2 ", the comment says " $6 }
	$3 != $5 { print $1 ": " ($3 == "restart" ? "a reload leaves it (say Fixed at start)" \
						  : "a reload applies it (no Fixed at start)") }')
[ -z "$bad" ] || fail "$conf disagrees with the key table:
$bad"
log "$conf: $(wc -l <"$T/conf") keys, defaults and reloads as the table says"

# The example file loads and, being all defaults, changes nothing.
cp "$conf" "$T/plugdisk.conf"
chmod 600 "$T/plugdisk.conf"
"$PLUGDISK" -c "$T/plugdisk.conf" --dump-config >"$T/dump-conf" 2>"$T/err" ||
	fail "$conf does not load: $(cat "$T/err")"
"$PLUGDISK" --dump-config >"$T/dump-none"
cmp -s "$T/dump-conf" "$T/dump-none" ||
	fail "$conf changes settings: $(diff "$T/dump-none" "$T/dump-conf")"
log "$conf loads and changes no setting"

# --- the conf reference -----------------------------------------------------------------
# --doc-keys=conf, every example line uncommented, is a config that loads and changes nothing.
"$PLUGDISK" --doc-keys=conf | sed 's/^\([[:space:]]*\)# \([a-z_]* = .*;\)$/\1\2/' \
	>"$T/doc.conf"
chmod 600 "$T/doc.conf"
[ "$(grep -c '^[[:space:]]*[a-z_]* = [^{]*;$' "$T/doc.conf")" -eq "$(wc -l <"$T/table")" ] ||
	fail "--doc-keys=conf does not give every key one line"
"$PLUGDISK" -c "$T/doc.conf" --dump-config >"$T/dump-doc" 2>"$T/err" ||
	fail "--doc-keys=conf does not load: $(cat "$T/err")"
cmp -s "$T/dump-doc" "$T/dump-none" || fail "--doc-keys=conf changes settings"
"$PLUGDISK" --doc-keys=html >/dev/null 2>"$T/err" && fail "--doc-keys=html was accepted"
grep -q 'must be man, conf or md' "$T/err" || fail "unexpected message: $(cat "$T/err")"
log "--doc-keys=conf loads with every key at its default; another format is refused"
