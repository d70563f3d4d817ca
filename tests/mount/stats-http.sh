#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stats.listen: an HTTP server on this machine's loopback serves the stats at /metrics in
# Prometheus' text format, which promtool checks with no complaint, with the writes just made
# in plugdisk_ios_total and the latency histogram; other paths are 404. A bad address is
# refused with exit 2 naming the key; off by default.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd curl promtool

expect_exit 2 "$PLUGDISK" -f --set stats.listen=localhost:9469 --dump-config
grep -q "stats.listen: must be ADDRESS:PORT" "$T/out" || fail "bad address: $(cat "$T/out")"
expect_exit 2 "$PLUGDISK" -f --set stats.listen=127.0.0.1:70000 --dump-config

# A free port on the loopback, chosen by the kernel.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
pd_start --set stats.listen=127.0.0.1:$port
grep -q "serving http://127.0.0.1:$port/metrics" "$T/daemon.log" || fail "no log line for the endpoint"
dd if=/dev/zero of="$MNT/disk" bs=4k count=20 oflag=direct conv=notrunc status=none || fail "dd"
curl -sf --max-time 10 "http://127.0.0.1:$port/metrics" >"$T/metrics" || fail "GET /metrics"
promtool check metrics <"$T/metrics" >"$T/promtool.out" 2>&1 || fail "promtool: $(head "$T/promtool.out")"
[ -s "$T/promtool.out" ] && fail "promtool complains: $(head "$T/promtool.out")"
grep -qx 'plugdisk_ios_total{disk="plugdisk",op="write"} 20' "$T/metrics" ||
	fail "write ios: $(grep ios_total "$T/metrics")"
grep -qx 'plugdisk_latency_seconds_count{disk="plugdisk",op="write"} 20' "$T/metrics" ||
	fail "latency count: $(grep latency_seconds_count "$T/metrics")"
# The same as the file form.
"$PLUGDISK" stats "$MNT" --format=prometheus | grep -c '^# HELP' >"$T/n_file"
assert_eq "$(grep -c '^# HELP' "$T/metrics")" "$(cat "$T/n_file")" "families served and printed"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$port/")
assert_eq "$code" 404 "GET /"
# A second daemon on the same port fails its start, before it mounts.
mkdir -p "$T/mnt2"
expect_exit 1 timeout 20 "$PLUGDISK" -f -i "$T/disk2.img" -s 16M --set stats.listen=127.0.0.1:$port "$T/mnt2"
grep -q "stats.listen 127.0.0.1:$port: cannot serve" "$T/out" || fail "port in use: $(cat "$T/out")"
mountpoint -q "$T/mnt2" && fail "mounted despite the port in use"
pd_stop
curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" >/dev/null && fail "still served after the stop"
exit 0
