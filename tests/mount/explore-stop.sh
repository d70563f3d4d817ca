#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk explore stops when told to, even in the middle of a long state's build, and leaves
# no mount behind even when it is killed: a SIGTERM during the build of a state of 2M writes
# ends explore (status 3, "interrupted") before that state's checker starts; a SIGKILLed
# explore's mount goes away by itself (no "Transport endpoint is not connected" left).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../wlog-lib.sh"
require_fuse
require_cmd perl

# 2M writes of 8 bytes at random 4 KiB-aligned places of a 1 GiB disk, then a flush.
perl -e 'my $n = 2000000; srand(1); binmode STDOUT;
	print pack("a8 V V Q< Q<", "PDWLOG01", 2, 4096, 1 << 30, 0);
	for my $i (1 .. $n) {
		print pack("V V Q< Q< Q<", 1, 0, 1, int(rand(1 << 18)) * 4096, 8), pack("Q<", $i);
	}
	print pack("V V Q< Q< Q<", 2, 0, 1, 0, 0);' >"$T/w.log"
truncate -s 1G "$T/base.img"
cat >"$T/check.sh" <<EOS
#!/bin/sh
echo \$\$ >"$T/ckpid"
echo "\$PLUGDISK_STATE" >"$T/ran"
exec sleep 60
EOS
chmod +x "$T/check.sh"

# threads PID: explore's threads (its FUSE loop starts once its mount is up).
threads() { ls "/proc/$1/task" 2>/dev/null | wc -l; }
many_threads() { [ "$(threads "$1")" -ge 2 ] || pid_gone "$1"; }

# 1. SIGTERM while state 2000000 (every write kept) is being built.
"$PLUGDISK" explore -j 1 --state 2000000 "$T/w.log" "$T/base.img" -- "$T/check.sh" \
	>"$T/out1" 2>&1 &
xpid=$!
_pd_pids+=("$xpid")
true_within 60 many_threads "$xpid" || fail "explore's mount never came up"
pid_gone "$xpid" && fail "explore ended before its state was built: $(cat "$T/out1")"
kill -TERM "$xpid"
# A deadline far above the build's second or two, far below an unstoppable build's minutes.
pid_gone_within 30 "$xpid" || fail "explore went on building its state after a SIGTERM"
rc=0
wait "$xpid" || rc=$?
assert_eq "$rc" 3 "explore's exit status after a SIGTERM"
grep -q "interrupted" "$T/out1" || fail "no 'interrupted': $(cat "$T/out1")"
[ -e "$T/ran" ] && fail "the checker ran after the SIGTERM (the build was not stopped)"

# 2. SIGKILL while a checker runs: the mount goes with explore.
"$PLUGDISK" explore -j 1 --state 0 "$T/w.log" "$T/base.img" -- "$T/check.sh" >"$T/out2" 2>&1 &
xpid=$!
_pd_pids+=("$xpid")
true_within 60 test -s "$T/ran" || fail "the checker never started: $(cat "$T/out2")"
mnt=$(dirname "$(cat "$T/ran")")
grep -q " $mnt " /proc/mounts || fail "explore's mount $mnt is not in /proc/mounts"
kill -KILL "$xpid"
wait "$xpid" 2>/dev/null
mounted() { grep -q " $mnt " /proc/mounts; }
gone=1
true_within 30 eval '! mounted' || gone=0
# The checker leads its own process group, which outlives explore: ours to end.
kill -KILL -- "-$(cat "$T/ckpid")" 2>/dev/null
if [ "$gone" = 0 ]; then
	umount -l "$mnt" 2>/dev/null
	fail "a SIGKILLed explore left its mount $mnt"
fi
rm -rf "$(dirname "$mnt")"
exit 0
