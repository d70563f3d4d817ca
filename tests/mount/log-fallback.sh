#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Messages a user must see: without -f and with no syslog socket, the start's lines reach the
# caller's stderr with a note that later ones need --log-file, and --log-file keeps them all; mounting over a non-empty directory
# works but warns that its files are hidden.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd unshare

# A non-empty mountpoint: a warning, then a working disk.
echo hidden >"$MNT/note"
pd_start -s 16M
grep -q "mountpoint $(realpath "$MNT") is not empty" "$T/daemon.log" ||
	{ cat "$T/daemon.log" >&2; fail "no warning for a non-empty mountpoint"; }
[ -f "$MNT/disk" ] || fail "no disk over the non-empty mountpoint"
pd_stop
rm -f "$MNT/note"

# No /dev/log: in a private mount namespace, hide the socket /dev/log points to.
[ -L /dev/log ] || [ ! -e /dev/log ] || skip "/dev/log is not a symlink: cannot hide it in a namespace"
# The directory of the socket /dev/log points to, if it exists (a tmpfs over it hides it).
hide=""
if [ -L /dev/log ]; then
	hide=$(dirname "$(readlink -m /dev/log)")
	[ -d "$hide" ] || hide=""
fi
case $hide in "" | /run/*) ;; *) skip "/dev/log points outside /run ($hide)" ;; esac
# Run the daemon without -f in a private mount namespace where /dev/log dangles; unmounting
# from inside the namespace ends the daemon (the kernel ends the session).
unshare -m --propagation private bash -c '
	set -e
	[ -z "$1" ] || mount -t tmpfs none "$1"
	! [ -e /dev/log ]
	"$2" -i "$3/disk.img" -s 16M "$4" 2>"$3/bg.err"
	cat "$4/stats" >/dev/null
	umount "$4"
	for i in $(seq 100); do pgrep -f "^$2 -i $3/disk.img" >/dev/null || break; sleep 0.05; done
	pgrep -f "^$2 -i $3/disk.img" >/dev/null && exit 1
	# --log-file: every line there, and no note
	"$2" -i "$3/disk.img" -s 16M --log-file "$3/pd.log" "$4" 2>"$3/bg2.err"
	umount "$4"
	for i in $(seq 100); do pgrep -f "^$2 -i $3/disk.img" >/dev/null || exit 0; sleep 0.05; done
	exit 1
' _ "$hide" "$PLUGDISK" "$T" "$MNT" || { cat "$T/bg.err" >&2; fail "background run failed"; }
grep -q "no syslog socket at /dev/log: messages after the start are lost; use --log-file PATH" \
	"$T/bg.err" || { cat "$T/bg.err" >&2; fail "no note about --log-file"; }
grep -q "mounted at" "$T/bg.err" || { cat "$T/bg.err" >&2; fail "the start was not logged to stderr"; }
grep -q "no syslog socket" "$T/bg2.err" && fail "a note about syslog with --log-file"
grep -q "mounted at" "$T/pd.log" || { cat "$T/pd.log" >&2; fail "the start was not logged to --log-file"; }
