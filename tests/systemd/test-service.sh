#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk@.service under a real, throwaway systemd: PID 1 of a private PID and mount namespace,
# booted on a copy-on-write overlay of / so that nothing it writes reaches the real system.
# Never boot systemd on the real root: its tmpfiles setup empties /tmp.
. "$(dirname "$0")/../lib.sh"

# The stats line that shows controller.bandwidth in force (bytes per second).
BW_STAT=${BW_STAT:-limit_bandwidth_bytes}
NAME=t1
PDMNT=/run/plugdisk/$NAME		# mount.point of the example config
FSMNT=/srv/plugdisk/$NAME		# Where= of the example mount unit
FSUNIT=srv-plugdisk-$NAME.mount

[ "$(id -u)" = 0 ] || skip "needs root (namespaces, overlayfs, mount)"
[ -x /lib/systemd/systemd ] || skip "/lib/systemd/systemd is missing"
require_cmd unshare nsenter chroot systemctl make mkfs.ext4 e2fsck timeout
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
grep -qw overlay /proc/filesystems || skip "no overlayfs: cannot boot systemd on a copy of /"
require_fuse
require_loop

B=$T/ns				# tmpfs inside the namespace only; empty in the host's view
mkdir -p "$B"
SHM=$(mktemp -d /dev/shm/plugdisk-test.XXXXXX)	# shared with the namespace (rbind of /dev)
CG=plugdisk-test-$$		# the cgroup the throwaway systemd takes as its root
UPID= SPID=
SEEN_LOOPS=()

# ---- The namespace: boot, drive, tear down ----

cat >"$T/boot.sh" <<'EOS'
set -eu
B=$1 CG=$2 PIDFILE=$3
shift 3
# This shell becomes the namespace's systemd (exec below). /proc is still the host's here, so
# the parent PID awk finds there names this shell as the host sees it: the PID nsenter and
# kill need.
awk '{ print $4 }' /proc/self/stat >"$PIDFILE.tmp" && mv "$PIDFILE.tmp" "$PIDFILE"
mount -t tmpfs -o mode=0755 plugdisk-test "$B"
mkdir -p "$B/u" "$B/w" "$B/r"
mount -t overlay overlay -o "lowerdir=/,upperdir=$B/u,workdir=$B/w" "$B/r"
mount -t proc proc "$B/r/proc"
mount --rbind /sys "$B/r/sys"
mount --rbind /dev "$B/r/dev"
mount -t tmpfs -o mode=0755 tmpfs "$B/r/run"
mount -t tmpfs -o mode=1777 tmpfs "$B/r/tmp"
# The source tree and the build, when they live under /tmp, stay visible in the namespace.
for d in "$@"; do
	case $d in /tmp/*) mkdir -p "$B/r$d" && mount --bind "$d" "$B/r$d" ;; esac
done
mkdir -p "$B/r/run/systemd/system"
# Kernel settings are not namespaced: no sysctl, modules, binfmt or remount of /. Nor udev,
# which would replay uevents of the host's devices, nor static /dev nodes in the host's /dev,
# nor timers (apt, man-db, fstrim ...) firing inside a throwaway system.
for u in systemd-sysctl.service systemd-modules-load.service systemd-binfmt.service \
	proc-sys-fs-binfmt_misc.automount systemd-remount-fs.service \
	systemd-udevd.service systemd-udev-trigger.service systemd-udev-settle.service \
	systemd-udevd-control.socket systemd-udevd-kernel.socket \
	systemd-tmpfiles-setup-dev.service kmod-static-nodes.service timers.target; do
	ln -sf /dev/null "$B/r/run/systemd/system/$u"
done
# A cgroup of its own (systemd takes the one it starts in as its root): nothing it creates
# lands at the top of the host's hierarchies.
for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[ -w "$h/cgroup.procs" ] || continue
	mkdir -p "$h/$CG" && echo $$ >"$h/$CG/cgroup.procs" || true
	[ "$h" = /sys/fs/cgroup ] || continue
done
exec chroot "$B/r" env container=plugdisk-test /lib/systemd/systemd --system --unit=basic.target
EOS

# N CMD...: run CMD inside the namespace, as a service of that systemd sees things; 60 s max.
N() { timeout -k 5 60 nsenter -t "$SPID" -m -p -r -w "$@"; }
alive() { [ -n "$SPID" ] && kill -0 "$SPID" 2>/dev/null; }

# wait_until SECONDS CMD...: poll CMD every 0.2 s until it succeeds; fail after the deadline.
wait_until() {
	local secs=$1 i; shift
	for ((i = 0; i < secs * 5; i++)); do
		"$@" && return 0
		alive || fail "the namespace's systemd died (see $T/systemd.log)"
		sleep 0.2
	done
	return 1
}

ns_teardown() {
	local i l f h
	if alive; then
		# Orderly first: unmount ext4 and stop the daemon, so no loop device outlives us.
		N systemctl stop "$FSUNIT" "plugdisk@$NAME.service" >/dev/null 2>&1
		N systemctl poweroff --no-block >/dev/null 2>&1
		for i in $(seq 150); do kill -0 "$UPID" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$SPID" 2>/dev/null
	fi
	if [ -n "$UPID" ]; then
		for i in $(seq 50); do kill -0 "$UPID" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$UPID" 2>/dev/null
		wait "$UPID" 2>/dev/null
	fi
	# A loop device seen inside and still bound to the namespace's disk file.
	for l in "${SEEN_LOOPS[@]}"; do
		f=$(losetup -n -O BACK-FILE "$l" 2>/dev/null | sed 's/ *$//')
		case $f in "$PDMNT/disk"*) losetup -d "$l" 2>/dev/null ;; esac
	done
	for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
		[ -d "$h/$CG" ] && find "$h/$CG" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	rm -rf "$SHM"
}
at_cleanup ns_teardown

boot() {
	unshare --pid --fork --mount --propagation private bash "$T/boot.sh" "$B" "$CG" \
		"$T/systemd.pid" "$TOP" "$(dirname "$PLUGDISK")" \
		</dev/null >"$T/systemd.log" 2>&1 &
	UPID=$!
	local i
	for i in $(seq 50); do
		[ -s "$T/systemd.pid" ] && SPID=$(cat "$T/systemd.pid") && break
		kill -0 "$UPID" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$SPID" ] || { cat "$T/systemd.log" >&2; skip "cannot start a PID namespace"; }
	[ "$(readlink "/proc/$SPID/ns/pid")" != "$(readlink /proc/self/ns/pid)" ] ||
		fail "PID $SPID is not in a namespace of its own"
	# systemd answers once basic.target is reached and the job queue is empty. Once it has
	# started, not coming up is a failure: a slow boot on a loaded machine gets 120 s.
	local state=
	for i in $(seq 120); do
		state=$(N systemctl is-system-running 2>/dev/null) || true
		case $state in running | degraded) break ;; esac
		if ! kill -0 "$UPID" 2>/dev/null; then
			tail -n 20 "$T/systemd.log" >&2
			skip "systemd cannot start in a private PID and mount namespace here"
		fi
		sleep 1
	done
	case $state in
	running) ;;
	degraded) log "systemd is degraded:"; N systemctl --failed --no-pager --no-legend >&2 ;;
	*)
		tail -n 20 "$T/systemd.log" >&2
		N systemctl is-system-running >&2
		N systemctl list-jobs --no-pager >&2
		ps -o pid,ppid,stat,wchan:20,args --ppid "$SPID" -p "$SPID" >&2
		fail "systemd did not come up within 120 s (state '$state')"
		;;
	esac
	log "systemd is up as PID $SPID ($state)"
}

# ---- Helpers for the checks ----

journal_has() { N journalctl -u "$1" --no-pager -o cat 2>/dev/null | grep -q -- "$2"; }
unit_state() { N systemctl is-active "$1" 2>/dev/null; }
ns_stat() { N awk -v k="$1" '$1 == k {print $2}' "$PDMNT/stats"; }
show_journal() { N journalctl -u "$1" --no-pager -o short-monotonic -n 40 >&2; }
note_loops() {
	local l
	for l in $(N losetup -n -O NAME -j "$PDMNT/disk" 2>/dev/null); do SEEN_LOOPS+=("$l"); done
}

# start_disk: systemctl start returns only once READY=1 came: the disk must already answer.
start_disk() {
	N systemctl start "plugdisk@$NAME.service" || { show_journal "plugdisk@$NAME"; fail "start failed"; }
	N mountpoint -q "$PDMNT" || fail "plugdisk@$NAME is active but $PDMNT is not mounted"
	N test -f "$PDMNT/disk" || fail "plugdisk@$NAME is active but $PDMNT/disk does not answer"
	assert_eq "$(unit_state "plugdisk@$NAME.service")" active "plugdisk@$NAME state"
}

# ---- The test ----

boot

# Install as a user would, inside the namespace's view (its writes land in the overlay).
bindir=$(dirname "$PLUGDISK")
N env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP" --no-print-directory install \
	DESTDIR=/ PREFIX=/usr/local B="$bindir" >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log" >&2; fail "make install inside the namespace failed"; }
N test -x /usr/local/bin/plugdisk || fail "make install did not install /usr/local/bin/plugdisk"
N test -f /usr/local/lib/systemd/system/plugdisk@.service || fail "make install: no unit"
N systemctl daemon-reload
# A sanitizer build: LeakSanitizer needs ptrace, which the unit's system call filter denies.
if grep -q __asan_init "$PLUGDISK" 2>/dev/null; then
	N mkdir -p /run/systemd/system/plugdisk@.service.d
	printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' >"$SHM/asan.conf"
	N cp "$SHM/asan.conf" /run/systemd/system/plugdisk@.service.d/
	N systemctl daemon-reload
fi

# The example configuration, with a smaller disk.
N mkdir -p /etc/plugdisk
N sh -c "sed 's/size = \"256M\"/size = \"64M\"/' /usr/local/share/doc/plugdisk/examples/$NAME.conf \
	>/etc/plugdisk/$NAME.conf && chmod 0644 /etc/plugdisk/$NAME.conf"
N grep -q "point = \"$PDMNT\"" "/etc/plugdisk/$NAME.conf" || fail "example config has no mount.point $PDMNT"

# 1. start: active only once the disk is mounted; STATUS= tells what runs.
start_disk
status=$(N systemctl show -P StatusText "plugdisk@$NAME.service")
log "status: $status"
case $status in *"$PDMNT"*) ;; *) fail "STATUS= does not name the mountpoint: '$status'" ;; esac

# 2. dd data in and read it back.
dd if=/dev/urandom of="$SHM/data" bs=1M count=8 status=none
want=$(sha256sum <"$SHM/data" | cut -d' ' -f1)
N dd if="$SHM/data" of="$PDMNT/disk" bs=1M conv=notrunc,fsync status=none || fail "dd into the disk failed"
got=$(N dd if="$PDMNT/disk" bs=1M count=8 iflag=direct status=none | sha256sum | cut -d' ' -f1)
assert_eq "$got" "$want" "data read back through the service's disk"

# 3. reload with a new controller.bandwidth: shows in stats.
N sed -i 's/bandwidth = "20M"/bandwidth = "7M"/' "/etc/plugdisk/$NAME.conf"
N systemctl reload "plugdisk@$NAME.service" || fail "reload failed"
wait_until 10 test "$(ns_stat "$BW_STAT")" = 7340032 ||
	fail "after reload $BW_STAT is '$(ns_stat "$BW_STAT")', expected 7340032"
# A bad reload is refused, named in the log, and the disk stays up with the old settings.
N sed -i 's/bandwidth = "7M"/bandwidth = "7M"; nomerges_typo = 1/' "/etc/plugdisk/$NAME.conf"
N systemctl reload "plugdisk@$NAME.service"
wait_until 10 journal_has "plugdisk@$NAME" nomerges_typo ||
	{ show_journal "plugdisk@$NAME"; fail "a refused reload does not name the key in the journal"; }
# ...at error priority (the daemon's "<3>" prefix on the journal's stream), with no tag.
N journalctl -u "plugdisk@$NAME" -p err --no-pager -o cat 2>/dev/null | grep -q "^plugdisk: reload refused.*nomerges_typo" ||
	{ show_journal "plugdisk@$NAME"; fail "the refused reload is not an error in the journal"; }
assert_eq "$(unit_state "plugdisk@$NAME.service")" active "state after a refused reload"
assert_eq "$(ns_stat "$BW_STAT")" 7340032 "$BW_STAT after a refused reload"
N sed -i 's/; nomerges_typo = 1//' "/etc/plugdisk/$NAME.conf"
N systemctl reload "plugdisk@$NAME.service"

# 4. ext4 through the example mount unit.
N mkfs.ext4 -q -F -E nodiscard "$PDMNT/disk" || fail "mkfs.ext4 on the service's disk failed"
N cp "/usr/local/share/doc/plugdisk/examples/$FSUNIT" /etc/systemd/system/
N systemctl daemon-reload
N systemctl start "$FSUNIT" || { show_journal "$FSUNIT"; fail "$FSUNIT failed to start"; }
note_loops
assert_eq "$(N findmnt -n -o FSTYPE "$FSMNT")" ext4 "filesystem at $FSMNT"
N cp "$SHM/data" "$FSMNT/data" || fail "writing to ext4 failed"
N sh -c "mkdir $FSMNT/dir && for i in 1 2 3 4 5; do head -c 100000 /dev/urandom >$FSMNT/dir/f\$i; done"
N sh -c "cd $FSMNT && sha256sum data dir/*" >"$T/sums" || fail "sha256sum on ext4 failed"
N sync -f "$FSMNT/data"

# 5. stop the mount, then the service: clean unmounts, the loop device goes, nothing held.
N systemctl stop "$FSUNIT" || fail "stopping $FSUNIT failed"
N mountpoint -q "$FSMNT" && fail "$FSMNT still mounted after stopping $FSUNIT"
N systemctl stop "plugdisk@$NAME.service" || fail "stopping plugdisk@$NAME failed"
assert_eq "$(unit_state "plugdisk@$NAME.service")" inactive "plugdisk@$NAME after stop"
N mountpoint -q "$PDMNT" 2>/dev/null && fail "$PDMNT still mounted after stop"
[ -z "$(N losetup -n -O NAME -j "$PDMNT/disk" 2>/dev/null)" ] || fail "a loop device outlived the stop"
journal_has "plugdisk@$NAME" "still held" && { show_journal "plugdisk@$NAME"; fail "the disk was still held at stop"; }
journal_has "plugdisk@$NAME" "stopped" || { show_journal "plugdisk@$NAME"; fail "no clean stop in the journal"; }

# The image is consistent; a restart (the mount unit pulls the service in) finds the data.
start_disk
N e2fsck -fn "$PDMNT/disk" >"$T/fsck.log" 2>&1 || { cat "$T/fsck.log" >&2; fail "e2fsck after a clean stop"; }
N systemctl start "$FSUNIT" || fail "restarting $FSUNIT failed"
note_loops
N sh -c "cd $FSMNT && sha256sum -c --quiet" <"$T/sums" || fail "data changed across stop and restart"

# 6. Stopping the service with the filesystem mounted unmounts the filesystem first.
N systemctl stop "plugdisk@$NAME.service" || fail "stopping plugdisk@$NAME under $FSUNIT failed"
assert_eq "$(unit_state "$FSUNIT")" inactive "$FSUNIT after stopping plugdisk@$NAME"
assert_eq "$(unit_state "plugdisk@$NAME.service")" inactive "plugdisk@$NAME after its stop"
journal_has "plugdisk@$NAME" "still held" && { show_journal "plugdisk@$NAME"; fail "the disk was still held at stop"; }

# 7. A daemon crash: Restart=on-failure brings the disk back with no manual step.
N systemctl start "$FSUNIT" || fail "starting $FSUNIT (pulling plugdisk@$NAME in) failed"
note_loops
N systemctl stop "$FSUNIT"
pid1=$(N systemctl show -P MainPID "plugdisk@$NAME.service")
N systemctl kill -s KILL "plugdisk@$NAME.service"
restarted() {
	local p
	p=$(N systemctl show -P MainPID "plugdisk@$NAME.service")
	[ "$p" != 0 ] && [ "$p" != "$pid1" ] && [ "$(unit_state "plugdisk@$NAME.service")" = active ]
}
wait_until 30 restarted || { show_journal "plugdisk@$NAME"; fail "no restart after kill -9"; }
N test -f "$PDMNT/disk" || fail "the restarted disk does not answer"
N systemctl start "$FSUNIT" || fail "$FSUNIT after the crash failed"
note_loops
N sh -c "cd $FSMNT && sha256sum -c --quiet" <"$T/sums" || fail "data changed across the crash"
N systemctl stop "$FSUNIT" "plugdisk@$NAME.service"

# 8. A bad config: start fails, no restart loop, and the journal names the key.
N mkdir -p /run/plugdisk/bad
N sh -c "printf 'mount = { point = \"/run/plugdisk/bad\"; };\nqueue = { nomerges = 5; };\n' \
	>/etc/plugdisk/bad.conf && chmod 0644 /etc/plugdisk/bad.conf"
N systemctl start plugdisk@bad.service 2>/dev/null && fail "plugdisk@bad started with a bad config"
wait_until 10 journal_has plugdisk@bad queue.nomerges ||
	{ show_journal plugdisk@bad; fail "the journal does not name queue.nomerges"; }
assert_eq "$(N systemctl show -P ExecMainStatus plugdisk@bad.service)" 2 "exit status of plugdisk@bad"
assert_eq "$(unit_state plugdisk@bad.service)" failed "plugdisk@bad state"

# 9. poweroff ends it.
N systemctl poweroff --no-block >/dev/null 2>&1 || true
for i in $(seq 150); do kill -0 "$UPID" 2>/dev/null || break; sleep 0.2; done
kill -0 "$UPID" 2>/dev/null && fail "systemctl poweroff did not end the namespace within 30 s"
SPID=
log "poweroff: the namespace is gone"
exit 0
