#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every quick recipe of README.md runs as written and does what it says. Each code block
# after a `<!-- recipe: NAME -->` line is run as one bash script, with /mnt/ and /var/tmp/
# moved into the test's scratch directory, `build/plugdisk` the daemon under test on this
# run's transport, and, for the Ceph recipe, a local raw image in place of `rbd:...` (the
# same qemu-nbd command line otherwise). A command of a recipe that fails is logged by an ERR
# trap; each recipe must fail exactly the commands it says fail, stop every daemon it started,
# and show its effect: the profile's rate, EIO on the range only, a stall that ends on
# release, a cut that drops the unflushed write, replay rebuilding the image, the data in the
# NBD server's file, several connections to qemu-nbd.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_transport
require_cmd nbdkit qemu-nbd cmp truncate dd awk

README=$TOP/README.md
V=$T/v M=$T/m
mkdir -p "$V" "$M"

# The daemons a recipe started, by the pid files it gave them (plugdisk removes its own when
# it stops): stopped at cleanup, whether the recipe got to stop them or not.
recipe_pids() {
	local f p
	for f in "$V"/*.pid; do
		[ -s "$f" ] || continue
		p=$(cat "$f")
		[[ $p =~ ^[0-9]+$ ]] || continue
		case $(cat "/proc/$p/comm" 2>/dev/null) in plugdisk | nbdkit | qemu-nbd) echo "$p" ;; esac
	done
}
stop_recipe_daemons() {
	local pids
	pids=$(recipe_pids)
	[ -z "$pids" ] || _pd_term $pids
}
at_cleanup stop_recipe_daemons
no_recipe_daemons() { [ -z "$(recipe_pids)" ]; }

# recipe NAME: the recipe's code block, unindented.
recipe() {
	awk -v m="<!-- recipe: $1 -->" '
		$0 == m { on = 1; next }
		on && !seen && /^$/ { next }
		on && /^    / { sub(/^    /, ""); print; seen = 1; next }
		on { exit }' "$README"
}

# pd: build/plugdisk in a recipe; the daemon gets this run's transport.
pd() {
	case ${1-} in
	ctl | top | stats | replay | explore) "$PLUGDISK" "$@" ;;
	*) "$PLUGDISK" $PD_TR "$@" ;;
	esac
}
export -f pd
export PLUGDISK PD_TR="${PD_TRANSPORT_ARGS[*]}"

# run NAME [SED-SCRIPT]: run recipe NAME; its output goes to $T/NAME.out, the commands that
# failed to $T/NAME.failed.
run() {
	local name=$1 extra=${2-} rc=0
	recipe "$name" >"$T/$name.src"
	[ -s "$T/$name.src" ] || fail "README.md has no recipe '$name'"
	grep -q 'build/plugdisk' "$T/$name.src" || fail "recipe $name does not run build/plugdisk"
	{
		echo "trap 'echo \"FAILED(\$?): \$BASH_COMMAND\" >>$T/$name.failed' ERR"
		sed -e "s#/mnt/#$M/#g" -e "s#/var/tmp/#$V/#g" -e 's#build/plugdisk#pd#g' \
			${extra:+-e "$extra"} "$T/$name.src"
	} >"$T/$name.sh"
	: >"$T/$name.failed"
	log "recipe $name"
	timeout -k 5 120 bash "$T/$name.sh" >"$T/$name.out" 2>&1 || rc=$?
	sed 's/^/    | /' "$T/$name.out" >&2
	[ "$rc" != 124 ] || fail "recipe $name did not finish within 120 s"
	# A server killed last may take a moment to go.
	true_within 5 no_recipe_daemons || fail "recipe $name left a daemon running: $(recipe_pids)"
	for d in "$M"/*; do
		! mountpoint -q "$d" || fail "recipe $name left $d mounted"
	done
}

# failed NAME: the commands of recipe NAME that failed.
failed() { cat "$T/$1.failed"; }
expect_no_failure() { [ -z "$(failed "$1")" ] || fail "recipe $1: $(failed "$1")"; }
# expect_one_failure NAME PATTERN: exactly one command failed, the one matching PATTERN.
expect_one_failure() {
	[ "$(failed "$1" | wc -l)" = 1 ] && failed "$1" | grep -q -- "$2" ||
		fail "recipe $1: expected one failed command, with '$2'; got: $(failed "$1")"
}
has() { grep -q -- "$2" "$T/$1.out" || fail "recipe $1: no '$2' in its output"; }
# dd_secs NAME: the seconds of the first dd summary in the output.
dd_secs() { awk '/ copied, / { for (i = 1; i < NF; i++) if ($(i + 1) == "s,") { print $i; exit } }' "$T/$1.out"; }
nonzero() { ! cmp -s -n "$2" "$1" /dev/zero || fail "$1: the first $2 bytes are zeroes"; }

# --- a slow disk from a profile: sd-a1 writes at 10 MB/s, one command at a time
run profile
expect_no_failure profile
has profile '^limit_write_bandwidth_bytes 10000000$'
has profile '^queue_depth 1$'
w=$(awk '$1 == "write_ios" {print $2}' "$T/profile.out")
[ "${w:-0}" -ge 16 ] || fail "profile: write_ios ${w:-none}, want at least 16"
s=$(dd_secs profile)
awk -v s="$s" 'BEGIN { exit !(s >= 1.3) }' ||
	fail "profile: 16 MiB at 10 MB/s took ${s:-?} s, want at least 1.3"
log "profile: 16 MiB in $s s"

# --- a range that fails with EIO: the read inside it, not the reads after it
run eio
expect_one_failure eio 'skip=64 '
has eio 'Input/output error'
has eio '^1048576 bytes'
has eio '^read_fault_errors 1$'

# --- a stall and a release: the write waits until release, then completes
run stall
expect_no_failure stall
has stall '^faults_held 1$'
held=$(grep -n '^faults_held 1$' "$T/stall.out" | cut -d: -f1)
done_at=$(grep -n '^4096 bytes' "$T/stall.out" | cut -d: -f1)
[ -n "$done_at" ] || fail "stall: the stalled dd never completed"
[ "$done_at" -gt "$held" ] || fail "stall: the dd completed before release"
# The answer of release: how many it completed.
awk '/faults_held 1/ {f = 1; next} f && /^[0-9]+$/ {print; exit}' "$T/stall.out" | grep -qx 1 ||
	fail "stall: release did not answer 1"

# --- a power cut armed on a flush count: the second dd's flush is the cut
run powercut
expect_one_failure powercut 'seek=1 '
has powercut 'powercut arm flush=2'
has powercut 'Input/output error'
nonzero "$V/pc.img" 64K

# --- record and replay: --flush 1 rebuilds the image (the cmp in the recipe)
run replay
expect_no_failure replay
nonzero "$V/s.img" 4M
[ -s "$V/w.log" ] || fail "replay: no write log"

# --- nbdkit: the data written through plugdisk is in the server's file
run nbdkit
expect_no_failure nbdkit
nonzero "$V/vol1.img" 16M

# --- Ceph: the same qemu-nbd command line over a local raw image instead of rbd:...
truncate -s 1G "$V/rbd.img"
run ceph "s#'rbd:[^']*'#$V/rbd.img#"
grep -q "qemu-nbd .*--shared=0" "$T/ceph.src" || fail "the Ceph recipe lost --shared=0"
grep -q "'rbd:[^']*:conf=[^']*:id=[^']*'" "$T/ceph.src" || fail "the Ceph recipe lost rbd:POOL/IMAGE:conf=PATH:id=NAME"
expect_no_failure ceph
c=$(awk '$1 == "nbd_connections" {print $2}' "$T/ceph.out")
[ "${c:-0}" -gt 1 ] || fail "ceph: nbd_connections ${c:-none}: qemu-nbd --shared=0 gave no multi-conn"
nonzero "$V/rbd.img" 16M
log "every recipe ran as written"
