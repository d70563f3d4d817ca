#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interactive `plugdisk top` on a terminal (a pty from script(1)) draws on the alternate
# screen, redraws each interval, quits on q and on Ctrl-C with status 0, and leaves the
# terminal as it found it: canonical mode and echo back on, cursor shown, main screen back.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd script stty

pd_start -s 16M
# run_on_pty KEYS DELAY: run top in a pty, type KEYS after DELAY s; the session goes to $T/tty.
# The shell in the pty runs with job control (set -m), as an interactive shell does: top gets
# its own foreground process group, so Ctrl-C signals top alone and the shell lives on to
# report top's exit status and the terminal modes.
run_on_pty() {
	(sleep "$2"; printf "$1"; sleep 2) |
		timeout 10 script -qfec "bash -c 'set -m; \"\$0\" top \"\$1\" 0.2; echo TOP_EXIT=\$?; stty -a' '$PLUGDISK' '$MNT'" \
			"$T/tty" >/dev/null 2>&1
}
for key in q '\003'; do
	run_on_pty "$key" 1 || fail "script session failed for key $key"
	tr -d '\r' <"$T/tty" >"$T/tty.txt"
	grep -q 'TOP_EXIT=0' "$T/tty.txt" || { cat -v "$T/tty.txt" | tail -20 >&2; fail "top did not exit 0 on key $key"; }
	grep -q $'\033\\[?1049h' "$T/tty.txt" || fail "no alternate screen"
	grep -q $'\033\\[?1049l' "$T/tty.txt" || fail "alternate screen not left (key $key)"
	grep -q $'\033\\[?25h' "$T/tty.txt" || fail "cursor not shown again (key $key)"
	[ "$(grep -c 'r/s      w/s' "$T/tty.txt")" -ge 3 ] || fail "fewer than 3 screens in 1 s at 0.2 s"
	modes=$(sed -n '/TOP_EXIT=/,$p' "$T/tty.txt")
	grep -qw -- -icanon <<<"$modes" && fail "canonical mode not restored (key $key)"
	grep -qw -- -echo <<<"$modes" && fail "echo not restored (key $key)"
	grep -qw icanon <<<"$modes" || fail "no stty output after top (key $key)"
done
pd_stop
