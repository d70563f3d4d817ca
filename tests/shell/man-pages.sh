#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The installed reference is complete and stands alone: plugdisk(8) and plugdisk.conf(5)
# render without a groff warning; plugdisk(8) names every subcommand of --help in its
# SYNOPSIS and in EXIT STATUS, every command of `plugdisk ctl help` in CONTROL FILE, and
# every file of the mount; neither page, nor the example config installed with them, points
# to the README or doc/, which are not installed.
. "$(dirname "$0")/../lib.sh"
require_cmd groff man
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

m8=$TOP/man/plugdisk.8 m5=$TOP/man/plugdisk.conf.5
for p in "$m8" "$m5"; do
	groff -man -Tutf8 -ww -z "$p" >"$T/warn" 2>&1 || fail "groff failed on $p: $(cat "$T/warn")"
	[ ! -s "$T/warn" ] || fail "groff warns on $p: $(head -5 "$T/warn")"
done
for p in "$m8" "$m5" "$TOP/conf/plugdisk.conf"; do
	if grep -nE 'README|(^|[^/a-z])doc/' "$p" >"$T/refs"; then
		fail "$p points to what is not installed: $(head -3 "$T/refs")"
	fi
done
log "both pages render without warnings and point to nothing uninstalled"

# sect NAME: the rendered text of plugdisk(8)'s section NAME.
MANWIDTH=200 man -l "$m8" 2>/dev/null | col -bx | sed "s/[[:space:]]\+/ /g" >"$T/page" || fail "man -l $m8 failed"
sect() { awk -v s="$1" '/^[A-Z]/ { on = ($0 == s); next } on' "$T/page"; }

# The subcommands, from the usage lines of --help.
"$PLUGDISK" --help | awk '$1 == "Usage:" || $1 == "plugdisk" { for (i = 1; i <= NF; i++) if ($i == "plugdisk") { print $(i + 1); break } }' |
	grep -E '^[a-z]+$' | sort -u >"$T/subs"
[ "$(wc -l <"$T/subs")" -ge 5 ] || fail "found only $(wc -l <"$T/subs") subcommands in --help"
sect SYNOPSIS >"$T/synopsis"
sect "EXIT STATUS" >"$T/exit"
while read -r s; do
	grep -q "plugdisk $s " "$T/synopsis" || fail "SYNOPSIS lacks plugdisk $s"
	grep -q "plugdisk $s" "$T/exit" || fail "EXIT STATUS says nothing of plugdisk $s"
done <"$T/subs"
# The exit statuses: the page's table is the binary's, row for row.
"$PLUGDISK" --list-exit-codes >"$T/exits" || fail "--list-exit-codes"
[ "$(wc -l <"$T/exits")" -ge 5 ] || fail "--list-exit-codes printed $(wc -l <"$T/exits") lines"
tr -s ' \n' '  ' <"$T/exit" >"$T/exit1"
while read -r code name meaning; do
	grep -qF -- "$code $name: $meaning." "$T/exit1" ||
		fail "EXIT STATUS lacks '$code $name: $meaning.': $(cat "$T/exit1")"
done <"$T/exits"
"$PLUGDISK" --help | grep -q "^Exit status: 0 ok, 1 failure" || fail "--help's exit statuses"
for s in top stats ctl replay explore; do
	"$PLUGDISK" $s --help 2>&1 | grep -q "^Exit status: 0 ok, 1 failure" ||
		fail "plugdisk $s --help does not give the exit table"
done
for o in --list-profiles --list-keys --dump-config --pidfile --readonly --log-level --log-file; do
	grep -q -- "$o" "$T/page" || fail "plugdisk(8) lacks $o"
done

# The control commands, from the daemon's own table.
"$PLUGDISK" ctl help | awk '{ sub(/:.*/, ""); print $1 }' | sort -u >"$T/cmds"
[ "$(wc -l <"$T/cmds")" -ge 10 ] || fail "plugdisk ctl help listed $(wc -l <"$T/cmds") commands"
sect "CONTROL FILE" >"$T/control"
while read -r c; do
	grep -qE "^ +$c( |,|$)|, $c( |$)" "$T/control" || fail "CONTROL FILE lacks $c"
done <"$T/cmds"
for c in "fault add" "fault del" "fault clear" "fault list" "powercut arm flush=" \
	"powercut arm write=" "powercut arm random=" "powercut arm after_ms=" "powercut disarm"; do
	grep -q "$c" "$T/control" || fail "CONTROL FILE lacks $c"
done
sect "FILES IN THE MOUNT" >"$T/files"
for f in disk stats stat control; do
	grep -qE "^ +$f( |$)" "$T/files" || fail "FILES IN THE MOUNT lacks $f"
done
log "$(wc -l <"$T/subs") subcommands, $(wc -l <"$T/cmds") control commands and the 4 files documented"

# The check can fail: a page without the control command table is caught.
sed '/^\.SH CONTROL FILE/,/^\.SH PLUGDISK TOP/{/^\.TP/,/^\.B help/d}' "$m8" >"$T/cut.8"
MANWIDTH=200 man -l "$T/cut.8" 2>/dev/null | col -b |
	awk '/^[A-Z]/ { on = ($0 == "CONTROL FILE"); next } on' | grep -qE '^ +poweron' &&
	fail "a page without its command list still passed"
exit 0
