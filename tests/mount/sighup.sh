#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP while a rate-limited dd runs: the new controller.bandwidth from the rewritten config
# shows in stats, --set overrides stay applied, and the dd's data verifies.
. "$(dirname "$0")/../lib.sh"
require_fuse

conf() {	# conf BANDWIDTH: write the config file atomically
	cat >"$T/pd.conf.new" <<CONF
disk = { image = "$T/disk.img"; size = "64M"; };
controller = { bandwidth = "$1"; };
CONF
	mv "$T/pd.conf.new" "$T/pd.conf"
}
conf 10M
head -c 24M /dev/urandom >"$T/src"
pd_start -c "$T/pd.conf" --set controller.write_iops=5000
assert_eq "$(stat_get limit_bandwidth_bytes)" $((10 << 20)) "limit before SIGHUP"
assert_eq "$(stat_get limit_write_iops)" 5000 "--set limit before SIGHUP"

dd if="$T/src" of="$MNT/disk" bs=1M oflag=direct conv=notrunc,fsync status=none &
dd_pid=$!
sleep 0.5
kill -0 $dd_pid 2>/dev/null || fail "24 MiB at 10 MiB/s finished within 0.5 s: no limit applied"
conf 50M
kill -HUP "$PD_PID"
for i in $(seq 100); do
	[ "$(stat_get limit_bandwidth_bytes)" = $((50 << 20)) ] && break
	sleep 0.05
done
assert_eq "$(stat_get limit_bandwidth_bytes)" $((50 << 20)) "limit after SIGHUP"
assert_eq "$(stat_get limit_write_iops)" 5000 "--set override after SIGHUP"
kill -0 "$PD_PID" || fail "daemon died on SIGHUP"
kill -0 $dd_pid 2>/dev/null || log "note: dd had finished when the new limit showed"
wait $dd_pid || fail "dd failed across SIGHUP"
assert_eq "$(sha_of "$MNT/disk" 0 $((24 << 20)))" "$(sha_of "$T/src")" "dd data across SIGHUP"
assert_gt "$(stat_get queue_stops_budget)" 0 "queue_stops_budget under a bandwidth limit"
assert_identities
pd_stop
