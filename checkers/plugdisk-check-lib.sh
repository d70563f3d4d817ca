# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared by the ready checkers of `plugdisk explore` (plugdisk-check-*), which source it from
# their own directory: the state's path, usage errors, a private mount namespace, a loop
# mount that is always undone, and the short report that leads a failing state's output.
# A checker runs once per state, thousands of times a run: the library forks as little as
# it can (a fork and exec here cost about as much as a small fsck).
#
# Exit statuses: 0 the state is sound; 1 it is not, and the first line of the output says
# why (explore groups failing states by that line, numbers blanked, and keeps the last 4 KiB
# of the output: hence the report is cut to 3 KiB); 2 the checker was misused or cannot run.
#
# The checker sets PDC_SELF, its own path, before it sources this file.

PDC_NAME=${PDC_SELF##*/}
PDC_MNT=      # the mountpoint, a scratch directory, once made
PDC_MOUNTED=0 # whether the state is mounted on it
PDC_MSG=      # the messages of the last mount or umount

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
# mount need CAP_SYS_ADMIN: without it, exit 2 here rather than 1 from unshare.
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

# pdc_cleanup: unmount the state if it is mounted, remove the mountpoint (EXIT trap).
pdc_cleanup() {
	if [ "$PDC_MOUNTED" = 1 ]; then
		umount "$PDC_MNT" 2>/dev/null || umount -l "$PDC_MNT" 2>/dev/null || true
	fi
	[ -z "$PDC_MNT" ] || rmdir "$PDC_MNT" 2>/dev/null || true
}

# pdc_setup: the EXIT trap, and SIGTERM and SIGINT made exits, so that the trap runs.
pdc_setup() {
	trap pdc_cleanup EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
}

# pdc_mount TYPE [OPTIONS]: mount the state read-write (its writes are explore's throwaway
# overlay) on a new directory, PDC_MNT, in this namespace (pdc_unshare first). mount's
# messages in PDC_MSG. Returns mount's status.
pdc_mount() {
	local rc=0
	PDC_MNT=$(mktemp -d "${TMPDIR:-/tmp}/$PDC_NAME.XXXXXX") || pdc_cannot "mktemp -d failed"
	PDC_MSG=$(mount -t "$1" -o "loop${2:+,$2}" "$PLUGDISK_STATE" "$PDC_MNT" 2>&1) || rc=$?
	[ "$rc" != 0 ] || PDC_MOUNTED=1
	return "$rc"
}

# pdc_mount_error: mount's first message, without the names that change from run to run
# (the directory, the loop device), so that explore groups the states it fails.
pdc_mount_error() {
	local line=${PDC_MSG%%$'\n'*}
	line=${line#"mount: $PDC_MNT: "}
	[[ ! $line =~ ^(.*)\ on\ /dev/loop[0-9]+(.*)$ ]] || line=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
	printf '%s\n' "$line"
}

# pdc_umount: unmount the state (a filesystem writes its last metadata here). Returns
# umount's status, its messages in PDC_MSG.
pdc_umount() {
	PDC_MSG=$(umount "$PDC_MNT" 2>&1) || return
	PDC_MOUNTED=0
}

# pdc_first_line SKIP TEXT: the first line of TEXT that does not match the extended regular
# expression SKIP (a tool's progress lines), or its first line if all do.
pdc_first_line() {
	local line
	while IFS= read -r line; do
		[[ $line =~ $1 ]] || { printf '%s\n' "$line"; return 0; }
	done <<<"$2"
	printf '%s\n' "${2%%$'\n'*}"
}

# pdc_show TEXT: TEXT's lines, indented, cut after 3 KiB at a line's end with a line that
# says how many there were.
pdc_show() {
	local text=$1 lines
	if [ "${#text}" -gt 3072 ]; then
		lines=${text//[!$'\n']/}
		text=${text:0:3072}
		text="${text%$'\n'*}"$'\n'"[... $((${#lines} + 1)) lines in all]"
	fi
	printf '  %s\n' "${text//$'\n'/$'\n'  }"
}
