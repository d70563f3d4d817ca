# SPDX-License-Identifier: MIT
# Helpers of the `plugdisk explore` tests (tests/crash/check-explore-*.sh), sourced after
# tests/lib.sh: an ext4 base image, recording a workload on it through plugdisk with
# cache.log, and running explore over the recording.

# explore_ext4_base SIZE: an ext4 image $T/base.img of SIZE with a file "target" holding
# version 0; every inode table and the journal initialised now, so that the recording holds
# the workload's writes only.
explore_ext4_base() { explore_fs_base ext4 "$1"; }

# explore_fs_base FS SIZE: the same for FS, ext4, xfs or btrfs; sets EXPLORE_FS.
explore_fs_base() {
	local dev
	EXPLORE_FS=$1
	truncate -s "$2" "$T/base.img"
	case $1 in
	ext4) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$T/base.img" ;;
	xfs) mkfs.xfs -q -f "$T/base.img" ;;
	btrfs) mkfs.btrfs -q -f "$T/base.img" >/dev/null ;;
	*) fail "explore_fs_base: no filesystem '$1'" ;;
	esac || fail "mkfs.$1 failed"
	mkdir -p "$T/fs"
	dev=$(loop_attach "$T/base.img")
	mount -t "$1" "$dev" "$T/fs" || fail "mount of the base failed"
	explore_version 0 >"$T/fs/target"
	umount "$T/fs" || fail "umount of the base failed"
	loop_detach "$dev"
}

# explore_version N: the content of version N, 16 KiB.
explore_version() { local i; for ((i = 0; i < 1024; i++)); do printf 'version %07d\n' "$1"; done; }

# explore_record LOG [plugdisk args...]: start plugdisk over a copy of the base with the
# write log LOG, mount its filesystem at $T/fs (ext4 with noauto_da_alloc and commit=1), and
# set DEV.
# explore_record_end: unmount, detach and stop plugdisk.
explore_record() {
	local log=$1
	shift
	cp --sparse=always "$T/base.img" "$T/disk.img"
	pd_start -i "$T/disk.img" -s "$(stat -c %s "$T/base.img")" --set cache.mode=writeback \
		--set "cache.log=$log" "$@"
	DEV=$(loop_attach "$MNT/disk")
	if [ "${EXPLORE_FS:-ext4}" != ext4 ]; then
		mount -t "$EXPLORE_FS" "$DEV" "$T/fs" || fail "mount failed"
	else
		mount -t ext4 -o noauto_da_alloc,commit=1 "$DEV" "$T/fs" || fail "mount failed"
	fi
	track_mount "$T/fs"
}
explore_record_end() {
	umount "$T/fs" || fail "umount failed"
	loop_detach "$DEV"
	pd_stop
}

# explore_rename_workload FSYNC: replace target by writing target.tmp and renaming it over
# target, 4 times, with an fsync of target.tmp before each rename when FSYNC is 1.
explore_rename_workload() {
	local i
	for i in 1 2 3 4; do
		explore_version "$i" >"$T/fs/target.tmp"
		[ "$1" = 1 ] && { sync "$T/fs/target.tmp" || fail "fsync failed"; }
		mv "$T/fs/target.tmp" "$T/fs/target"
		sleep 0.7
	done
}

# explore_file_workload ROUNDS: files created, appended, renamed and removed in a few
# directories of $T/fs, with a pause every 10 rounds so that several journal commits
# (flushes) fall inside it.
explore_file_workload() {
	local i d
	for ((i = 1; i <= $1; i++)); do
		d=$T/fs/d$((i % 4))
		mkdir -p "$d"
		head -c $(((i % 16 + 1) * 4096)) /dev/urandom >"$d/f$i"
		printf 'round %d\n' "$i" >>"$T/fs/journal.txt"
		[ $((i % 3)) = 0 ] && mv "$d/f$i" "$d/r$i"
		[ $((i % 5)) = 0 ] && rm -f "$T/fs/d$(((i + 1) % 4))/f$((i - 4))"
		[ $((i % 10)) = 0 ] && sleep 0.4
	done
	true
}

# explore_json OUT [explore args...]: run `plugdisk explore -j 2 --json ARGS` with its report
# in OUT; set EXPLORE_RC to its exit status and show the report's counts on stderr.
explore_json() {
	local out=$1
	shift
	EXPLORE_RC=0
	"$PLUGDISK" explore -j 2 --json "$@" >"$out" || EXPLORE_RC=$?
	jq -c '{states_total, checked, passed, failed, duplicates}' "$out" >&2
}
