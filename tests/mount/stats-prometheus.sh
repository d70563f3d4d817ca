#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Prometheus server (Debian's prometheus package), on the loopback, scrapes the
# daemon's /metrics (stats.listen) and answers doc/stats.md's queries: the IOPS of writes,
# and the p99 write latency from the histogram, both above zero after writes.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd curl jq prometheus

# free_port: a free port on the loopback, chosen by the kernel.
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mport=$(free_port)
pd_start --set stats.listen=127.0.0.1:$mport
pport=$(free_port)
cat >"$T/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: plugdisk
    static_configs:
      - targets: ["127.0.0.1:$mport"]
YML
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
	--web.listen-address=127.0.0.1:$pport >"$T/prometheus.log" 2>&1 &
_pd_pids+=("$!")

# query PROMQL: the first result's value, or nothing.
query() {
	curl -sf --max-time 5 "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[0].value[1] // empty' 2>/dev/null
}
# positive PROMQL: whether the query gives a number above zero.
positive() { local v; v=$(query "$1"); [ -n "$v" ] && awk -v v="$v" 'BEGIN { exit !(v > 0) }'; }

true_within 60 positive 'up{job="plugdisk"}' ||
	{ tail -5 "$T/prometheus.log" >&2; fail "Prometheus did not scrape the daemon"; }
# Writes across several scrapes.
for i in $(seq 10); do
	dd if=/dev/zero of="$MNT/disk" bs=4k count=50 oflag=direct conv=notrunc status=none || fail "dd"
	sleep 0.3
done
iops='sum by (disk, op) (rate(plugdisk_ios_total{op="write"}[1m]))'
p99='histogram_quantile(0.99, sum by (disk, le) (rate(plugdisk_latency_seconds_bucket{op="write"}[1m])))'
true_within 60 positive "$iops" || fail "IOPS query: $(query "$iops")"
true_within 60 positive "$p99" || fail "p99 query: $(query "$p99")"
log "write IOPS $(query "$iops"), p99 write latency $(query "$p99") s"
pd_stop
