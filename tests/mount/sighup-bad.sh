#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A bad config on SIGHUP (out-of-range value, unknown key, syntax error) is refused with a
# logged error naming the key or line; the old limits stay in stats, the daemon keeps
# serving I/O; a good config afterwards is applied.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio

put() { printf '%s\n' "$@" >"$T/pd.conf.new" && mv "$T/pd.conf.new" "$T/pd.conf"; }
base="disk = { image = \"$T/disk.img\"; size = \"64M\"; };"
put "$base" 'controller = { bandwidth = "10M"; iops = 3000; };'
pd_start -c "$T/pd.conf"

# hup_refused DESC PATTERN: send SIGHUP; the log must gain a line matching PATTERN, and the
# old limits must stay.
hup_refused() {
	local desc=$1 pat=$2 before i
	before=$(wc -l <"$T/daemon.log")
	kill -HUP "$PD_PID"
	for i in $(seq 100); do
		tail -n +$((before + 1)) "$T/daemon.log" | grep -qE "$pat" && break
		sleep 0.05
	done
	tail -n +$((before + 1)) "$T/daemon.log" | grep -qE "$pat" ||
		{ cat "$T/daemon.log" >&2; fail "$desc: no log line matching '$pat'"; }
	kill -0 "$PD_PID" 2>/dev/null || fail "$desc: daemon died"
	assert_eq "$(stat_get limit_bandwidth_bytes)" $((10 << 20)) "$desc: bandwidth kept"
	assert_eq "$(stat_get limit_iops)" 3000 "$desc: iops kept"
	assert_eq "$("$T/pdio" "$MNT/disk" write 8192 4096 1 verify 8192 4096 1)" \
		"$(printf '4096\n4096 ok')" "$desc: I/O after a refused reload"
}

put "$base" 'controller = { bandwidth = "50M"; iops = -5; };'
hup_refused "negative iops" 'controller\.iops'
put "$base" 'controller = { bandwidth = "50M"; iops = 100; frobnicate = 1; };'
hup_refused "unknown key" 'frobnicate'
put "$base" 'controller = { bandwidth = "50M"; iops = ; };'
hup_refused "syntax error" 'pd\.conf:2([^0-9]|$)'
put "$base" 'controller = { bandwidth = "50M"; queue_depth = 0; };'
hup_refused "queue_depth 0" 'controller\.queue_depth'
rm "$T/pd.conf"
hup_refused "missing file" 'pd\.conf'

# A good file is applied, so the refusals above were real.
put "$base" 'controller = { bandwidth = "50M"; iops = 100; };'
kill -HUP "$PD_PID"
stat_wait limit_iops 100 "good config applied"
assert_eq "$(stat_get limit_bandwidth_bytes)" $((50 << 20)) "good config applied"
assert_identities
pd_stop
