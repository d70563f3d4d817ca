#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP with keys changed that a reload leaves for the next start: the log names exactly
# those (in the order of the key table, which marks them for plugdisk.conf(5)), each of them
# is "at the next start" in `--doc-keys`, the live key changed with them applies, and the
# disk keeps its name; a reload with nothing changed warns of nothing.
. "$(dirname "$0")/../lib.sh"
require_fuse

conf() {	# conf NAME THREADS WORKERS SEED IOPS: write the config file atomically
	cat >"$T/pd.conf.new" <<CONF
disk = { image = "$T/disk.img"; size = "64M"; name = "$1"; };
mount = { threads = $2; };
controller = { workers = $3; iops = $5; };
cache = { mode = "writeback"; seed = $4; };
CONF
	mv "$T/pd.conf.new" "$T/pd.conf"
}

# reload: SIGHUP and wait (deadline 5 s) for the reload's last log line.
reload() {
	local before
	before=$(grep -c 'reloaded ' "$T/daemon.log")
	kill -HUP "$PD_PID"
	for _ in $(seq 100); do
		[ "$(grep -c 'reloaded ' "$T/daemon.log")" -gt "$before" ] && return 0
		sleep 0.05
	done
	fail "no 'reloaded' in the log 5 s after SIGHUP"
}

conf a 2 4 11 0
pd_start -c "$T/pd.conf"
assert_eq "$(stat_get limit_iops)" 0 "iops before SIGHUP"

# Nothing changed: no warning.
reload
grep -q 'next start' "$T/daemon.log" && fail "a reload with nothing changed warned: $(
	grep 'next start' "$T/daemon.log")"

conf b 3 5 12 700
reload
line=$(grep 'next start' "$T/daemon.log") || fail "no warning for the keys left to the next start"
log "$line"
want="disk.name, mount.threads, controller.workers, cache.seed"
case $line in
*"reload: $want: changed, takes effect at the next start"*) ;;
*) fail "the warning does not name exactly $want" ;;
esac
for k in disk.name mount.threads controller.workers cache.seed; do
	"$PLUGDISK" --doc-keys=md | grep -q "^| \`$k\` | .* | at the next start | " ||
		fail "$k is not 'at the next start' in --doc-keys"
done
"$PLUGDISK" --doc-keys=md | grep -q '^| `controller.iops` | .* | applied live | ' ||
	fail "controller.iops is not 'applied live' in --doc-keys"
assert_eq "$(stat_get limit_iops)" 700 "iops after SIGHUP (applied live)"
grep -q '^# plugdisk a$' "$MNT/stats" || fail "the disk's name changed without a restart"
kill -0 "$PD_PID" || fail "daemon died on SIGHUP"
pd_stop
