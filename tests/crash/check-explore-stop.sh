#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore stops its own FUSE mount tidily: while another mount namespace still holds
# a copy of that mount (a process that unshared its namespace during the run), explore
# unmounts, ends the connection and exits, printing nothing about it; a request sent to the
# mount afterwards is answered (with an error), not left waiting; and no checker inherits
# the connection's /dev/fuse descriptor.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd unshare nsenter setsid stat
[ "$(id -u)" = 0 ] || skip "needs root (a mount namespace of its own)"

truncate -s 16M "$T/disk.img" "$T/base.img"
pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
	--set "cache.log=$T/w.log"
dd if=/dev/urandom of="$MNT/disk" bs=4k count=1 oflag=direct conv=notrunc,fsync status=none ||
	fail "dd"
dd if=/dev/urandom of="$MNT/disk" bs=4k count=1 seek=8 oflag=direct conv=notrunc status=none ||
	fail "dd"
pd_stop

# The first checker leaves a process in a mount namespace of its own, which holds a copy of
# explore's mount, bound at $T/held there (explore's removal of its directory detaches the
# copy at the same place); every checker notes whether it holds a /dev/fuse descriptor.
mkdir "$T/held"
cat >"$T/chk.sh" <<EOF
#!/bin/sh
for fd in /proc/\$\$/fd/*; do
	[ "\$(readlink "\$fd")" = /dev/fuse ] && echo "\$fd" >>"$T/leaked"
done
mkdir "$T/first" 2>/dev/null || exit 0
dirname "\$PLUGDISK_STATE" >"$T/mnt.path"
setsid unshare -m --propagation private sh -c \
	'mount --bind "\$(cat "$T/mnt.path")" "$T/held" && echo \$\$ >"$T/holder.tmp"; exec sleep 600' \
	</dev/null >/dev/null 2>&1 &
while [ ! -s "$T/holder.tmp" ]; do sleep 0.05; done
mv "$T/holder.tmp" "$T/holder.pid"
EOF
chmod +x "$T/chk.sh"
at_cleanup '[ -s "$T/holder.pid" ] && kill -KILL "$(cat "$T/holder.pid")"'
at_cleanup '[ -n "${XPID:-}" ] && kill -KILL "$XPID"'

"$PLUGDISK" explore -j 1 "$T/w.log" "$T/base.img" -- "$T/chk.sh" >"$T/report" 2>"$T/stderr" &
XPID=$!
pid_gone_within 60 "$XPID" || fail "explore still runs 60 s after its start (held by its mount's copy)"
rc=0
wait "$XPID" || rc=$?
XPID=
cat "$T/stderr" >&2
assert_eq "$rc" 0 "explore's status"
[ -s "$T/holder.pid" ] || fail "the checker did not start the namespace's holder"
grep -E '^fuse:|failed to unmount' "$T/stderr" && fail "explore printed a FUSE error at its stop"
[ -e "$T/leaked" ] && fail "a checker inherited explore's /dev/fuse: $(cat "$T/leaked")"
mnt=$(cat "$T/mnt.path")
grep -q " $mnt " /proc/self/mountinfo && fail "explore left its mount $mnt"
# The copy in the other namespace: its connection is over, so a request fails at once.
rc=0
timeout 30 nsenter -t "$(cat "$T/holder.pid")" -m -- stat -f "$T/held" >"$T/statfs" 2>&1 || rc=$?
cat "$T/statfs" >&2
[ "$rc" = 124 ] && fail "a statfs of explore's mount, after explore exited, waited unanswered"
[ "$rc" = 0 ] && fail "explore's mount still answers after explore exited"
grep -qi "not connected" "$T/statfs" || fail "the statfs did not fail as a connection ended"
log "explore stopped with its mount held elsewhere; the held copy's connection is ended"
