#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# After kill -9, a restart names what the crash left on the dead disk: a loop device with no
# filesystem mounted is detached (safe: nothing can reach its dead backing file), and one
# with a mounted filesystem is left alone and named, with the commands that release it.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop
require_cmd mkfs.ext4
pd_start -s 64M
loop_free=$(loop_attach "$MNT/disk")
loop_fs=$(loop_attach "$MNT/disk")
mkfs.ext4 -q -F "$loop_fs" || fail "mkfs.ext4 failed"
mkdir -p "$T/fs"
mount "$loop_fs" "$T/fs" || fail "mount failed"
track_mount "$T/fs"
kill -KILL "$PD_PID"
wait "$PD_PID" 2>/dev/null || true
# The restart clears the dead mount itself.
pd_start -s 64M
grep -q "detached loop device $loop_free of the crashed disk" "$T/daemon.log" ||
	{ cat "$T/daemon.log" >&2; fail "$loop_free was not detached"; }
# Still attached to the disk (another program may have taken the freed device since).
losetup -n -O BACK-FILE "$loop_free" 2>/dev/null | grep -qF "$MNT/disk" &&
	fail "$loop_free is still attached to $MNT/disk"
grep -q "$loop_fs still holds the crashed disk, and $T/fs is mounted on it; release them with: umount $T/fs && losetup -d $loop_fs" "$T/daemon.log" ||
	{ cat "$T/daemon.log" >&2; fail "the mounted $loop_fs was not named with its commands"; }
mountpoint -q "$T/fs" || fail "the user's filesystem on $loop_fs was unmounted"
umount -l "$T/fs"
losetup -d "$loop_fs"
pd_stop
