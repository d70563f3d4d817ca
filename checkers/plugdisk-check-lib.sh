# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared by the ready checkers of `plugdisk explore` (plugdisk-check-*), which source it from
# their own directory: the state's path, usage errors, a private mount namespace, a loop
# mount that is always undone, and the short report that leads a failing state's output.
#
# Exit statuses: 0 the state is sound; 1 it is not, and the first line of the output says
# why (explore groups failing states by that line, numbers blanked, and keeps the last 4 KiB
# of the output: hence the report is cut to 3 KiB); 2 the checker was misused or cannot run.

PDC_NAME=${0##*/}
PDC_SELF=$(readlink -f "$0")
PDC_DIR=
PDC_MNT=
PDC_OUT=

# pdc_usage_error MESSAGE: MESSAGE and how to get help on stderr, exit 2.
pdc_usage_error() {
	printf '%s: %s\n' "$PDC_NAME" "$1" >&2
	printf "Try '%s --help'.\n" "$PDC_NAME" >&2
	exit 2
}

# pdc_cannot MESSAGE: the checker cannot run here (no root, a tool missing): exit 2.
pdc_cannot() {
	printf '%s: %s\n' "$PDC_NAME" "$1"
	exit 2
}

# pdc_corrupt MESSAGE: the state is not sound: MESSAGE (the first line of the output), exit 1.
pdc_corrupt() {
	printf '%s\n' "$1"
	exit 1
}

# pdc_require CMD...: exit 2, naming it, when a command is missing.
pdc_require() {
	local c
	for c; do
		command -v "$c" >/dev/null || pdc_cannot "$c is not installed"
	done
}

# pdc_state: PLUGDISK_STATE must name the state: a file or a block device.
pdc_state() {
	[ -n "${PLUGDISK_STATE:-}" ] ||
		pdc_usage_error "PLUGDISK_STATE is not set (plugdisk explore sets it; by hand, set it to a copy of an image)"
	[ -f "$PLUGDISK_STATE" ] || [ -b "$PLUGDISK_STATE" ] ||
		pdc_cannot "PLUGDISK_STATE=$PLUGDISK_STATE is no file or block device"
}

# pdc_unshare ARGS...: run this script again, with ARGS, in a mount namespace of its own
# with private propagation; return in that run. Its mounts are then seen by nobody else, and
# go with its last process even on SIGKILL (explore's --timeout), taking the loop device
# with them (mount -o loop attaches it with autoclear). The script's PID is unchanged by the
# exec, which tells the second run from a child that inherits the variable. unshare -m and
# mount need CAP_SYS_ADMIN: without it, exit 2 here rather than 1 from unshare (read from
# /proc, since a fork costs more than this whole test).
pdc_unshare() {
	local key value
	[ "${PLUGDISK_CHECK_NS:-}" = "$$" ] && return 0
	while read -r key value; do
		[ "$key" = CapEff: ] && break
	done </proc/self/status
	if ! [[ $value =~ ^[0-9a-f]+$ ]] || ! (((16#$value >> 21) & 1)); then
		pdc_cannot "mounting the state needs root (CAP_SYS_ADMIN)"
	fi
	pdc_require unshare mount umount
	export PLUGDISK_CHECK_NS=$$
	exec unshare -m --propagation private -- "$PDC_SELF" "$@"
}

# pdc_cleanup: unmount the state if it is mounted, remove the scratch directory (EXIT trap).
pdc_cleanup() {
	[ -n "$PDC_DIR" ] || return 0
	if [ -n "$PDC_MNT" ] && mountpoint -q "$PDC_MNT"; then
		umount "$PDC_MNT" 2>/dev/null || umount -l "$PDC_MNT" 2>/dev/null || true
	fi
	rm -rf --one-file-system "$PDC_DIR" 2>/dev/null || true
}

# pdc_setup: the EXIT trap, SIGTERM and SIGINT made exits (so that the trap runs), and a
# scratch directory PDC_DIR with PDC_OUT, a file for a tool's output.
pdc_setup() {
	trap pdc_cleanup EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	PDC_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$PDC_NAME.XXXXXX") || pdc_cannot "mktemp -d failed"
	PDC_OUT=$PDC_DIR/out
}

# pdc_mount TYPE [OPTIONS]: mount the state read-write (its writes are explore's throwaway
# overlay) on PDC_MNT, in this namespace (pdc_unshare first). mount's messages in PDC_OUT.
# Returns mount's status.
pdc_mount() {
	PDC_MNT=$PDC_DIR/mnt
	mkdir "$PDC_MNT" || pdc_cannot "mkdir $PDC_MNT failed"
	mount -t "$1" -o "loop${2:+,$2}" "$PLUGDISK_STATE" "$PDC_MNT" >"$PDC_OUT" 2>&1
}

# pdc_mount_error: mount's first message in PDC_OUT, without the names that change from run
# to run (the directory, the loop device), so that explore groups the states it fails.
pdc_mount_error() {
	head -n 1 "$PDC_OUT" | sed -e "s|^mount: $PDC_MNT: ||" -e 's| on /dev/loop[0-9]*||'
}

# pdc_umount: unmount the state (a filesystem writes its last metadata here). Returns
# umount's status, its messages in PDC_OUT.
pdc_umount() { umount "$PDC_MNT" >"$PDC_OUT" 2>&1; }

# pdc_first_line SKIP FILE: the first line of FILE that does not match the extended regular
# expression SKIP (a tool's progress lines), or its first line if all do.
pdc_first_line() {
	local line
	line=$(grep -m 1 -vE "$1" "$2" || true)
	[ -n "$line" ] || line=$(head -n 1 "$2")
	printf '%s\n' "$line"
}

# pdc_show FILE: FILE's lines, indented, cut after 3 KiB with a line that says how much was
# left out.
pdc_show() {
	local total
	total=$(wc -l <"$1")
	if [ "$(wc -c <"$1")" -le 3072 ]; then
		sed 's/^/  /' "$1"
		return 0
	fi
	head -c 3072 "$1" | sed '$d' | sed 's/^/  /'
	printf '  [... %d lines in all]\n' "$total"
}
