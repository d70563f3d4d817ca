#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugdisk stats --format=text|json|openmetrics: the text is the stats file; the JSON parses
# (jq) and holds every name with its value and the latency histograms; the OpenMetrics text
# passes the strict OpenMetrics parser, has a HELP and a TYPE line per family, the plugdisk_
# prefix, counters with _total, the op as a label, histograms whose +Inf bucket and _count
# count every bio, and ends in # EOF; --format=prometheus passes `promtool check metrics` with
# no complaint. Bad uses say why.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd jq
PY=/usr/bin/python3
$PY -c 'import prometheus_client' 2>/dev/null ||
	fail "python3-prometheus-client is missing (make deps installs it)"

pd_start -s 16M --set disk.name=fmt-1 --set controller.latency_us=1ms
"$PLUGDISK" ctl "$MNT" fault add op=read offset=8M len=4K error=EIO >/dev/null || fail "fault add"
dd if=/dev/urandom of="$MNT/disk" bs=4K count=10 oflag=direct conv=notrunc status=none || fail "dd"
dd if="$MNT/disk" of=/dev/null bs=4K count=5 iflag=direct status=none || fail "dd read"

# text: the stats file itself.
"$PLUGDISK" stats "$MNT" >"$T/text" || fail "stats (text)"
"$PLUGDISK" stats "$MNT" --format=text >"$T/text2" || fail "--format=text"
# (The request counters of the transport move with each read: compare names, and values of
# the disk's own I/O.)
firsts() { awk '{ print $1, ($1 ~ /^(write|read)_(bios|bytes)$/ ? $2 : "") }' "$1"; }
diff <(firsts "$T/text") <(firsts "$MNT/stats") >&2 || fail "the text differs from the stats file"
diff <(firsts "$T/text") <(firsts "$T/text2") >&2 || fail "--format=text differs"
names=$(awk '!/^#/ && NF == 2' "$T/text" | wc -l)

# JSON.
"$PLUGDISK" stats "$MNT" --format=json >"$T/json" || fail "--format=json"
jq -e . "$T/json" >/dev/null || fail "not JSON: $(head -c 300 "$T/json")"
assert_eq "$(jq -r .disk "$T/json")" fmt-1 "json disk"
assert_eq "$(jq '.stats | length' "$T/json")" "$names" "json names"
assert_eq "$(jq .stats.write_bios "$T/json")" 10 "json write_bios"
assert_eq "$(jq '.stats.write_bios | type' "$T/json")" '"number"' "a count is a number"
assert_eq "$(jq -r .stats.stop_reason "$T/json")" none "json stop_reason"
assert_eq "$(jq .stats.limit_latency_us "$T/json")" 1000 "json limit_latency_us"
assert_eq "$(jq .stats.fault_1_matched "$T/json")" 0 "json fault_1_matched"
assert_eq "$(jq '.latency_histogram_us.write["+Inf"]' "$T/json")" 10 "json write +Inf"
# every write took about 1 ms: none under 512 us, all under 65536 us
assert_eq "$(jq '.latency_histogram_us.write["512"]' "$T/json")" 0 "json writes under 512 us"
assert_eq "$(jq '.latency_histogram_us.write["65536"]' "$T/json")" 10 "json writes under 64 ms"
assert_eq "$(jq '.latency_histogram_us.read["+Inf"]' "$T/json")" 5 "json read +Inf"
assert_eq "$(jq '[.latency_histogram_us.write | to_entries[] | .value] | . == sort' "$T/json")" \
	true "json buckets are cumulative"
assert_eq "$(jq '.latency_histogram_us.write | length' "$T/json")" 26 "json write buckets"

# OpenMetrics.
"$PLUGDISK" stats "$MNT" --format=openmetrics >"$T/om" || fail "--format=openmetrics"
assert_eq "$(tail -n1 "$T/om")" "# EOF" "last line"
assert_eq "$(grep -c '^# EOF$' "$T/om")" 1 "one # EOF"
# Every line: a TYPE line of a plugdisk_ family, or a plugdisk_ sample with the disk label.
bad=$(grep -vE '^# TYPE plugdisk_[a-z0-9_]+ (counter|gauge|histogram)$|^# HELP plugdisk_[a-z0-9_]+ .+$|^# EOF$|^plugdisk_[a-z0-9_]+\{disk="fmt-1"(,[a-z_]+="[^"]*")*\} -?[0-9][0-9.e+-]*$' "$T/om")
[ -z "$bad" ] || fail "malformed OpenMetrics lines: $(echo "$bad" | head -5)"
grep -qx 'plugdisk_bios_total{disk="fmt-1",op="write"} 10' "$T/om" || fail "write bios counter"
grep -qx '# TYPE plugdisk_bios counter' "$T/om" || fail "bios TYPE"
grep -qx '# TYPE plugdisk_in_flight gauge' "$T/om" || fail "in_flight TYPE"
grep -qx 'plugdisk_stop_reason{disk="fmt-1",stop_reason="none"} 1' "$T/om" || fail "stop_reason"
grep -qx 'plugdisk_latency_seconds_bucket{disk="fmt-1",op="write",le="+Inf"} 10' "$T/om" ||
	fail "write latency +Inf bucket"
grep -qx 'plugdisk_latency_seconds_bucket{disk="fmt-1",op="write",le="0.000512"} 0' "$T/om" ||
	fail "write latency 512 us bucket"
grep -qx 'plugdisk_latency_seconds_count{disk="fmt-1",op="write"} 10' "$T/om" ||
	fail "write latency count"
grep -qE '^plugdisk_latency_seconds_sum\{disk="fmt-1",op="write"\} [0-9.e+-]+$' "$T/om" ||
	fail "write latency sum"
grep -E '_(us|ms|per_s)(_total)?\{' "$T/om" && fail "abbreviated units"
"$PLUGDISK" stats "$MNT" --format=prometheus >"$T/prom" || fail "--format=prometheus"
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/prom" >"$T/promtool.out" 2>&1 ||
		fail "promtool check metrics: $(head -5 "$T/promtool.out")"
	[ -s "$T/promtool.out" ] && fail "promtool complains: $(head -5 "$T/promtool.out")"
else
	fail "promtool is missing (make deps installs the prometheus package)"
fi
$PY - "$T/om" "$T/prom" <<'PYEOF' || fail "the OpenMetrics parsers refused the output"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
from prometheus_client.parser import text_string_to_metric_families as prom
text = open(sys.argv[1]).read()
fams = {f.name: f for f in om(text)}
assert fams["plugdisk_bios"].type == "counter", fams["plugdisk_bios"].type
w = [s for s in fams["plugdisk_bios"].samples if s.labels.get("op") == "write"]
assert w[0].value == 10, w
h = fams["plugdisk_latency_seconds"]
assert h.type == "histogram"
ws = [s for s in h.samples if s.labels["op"] == "write"]
les = [s.labels["le"] for s in ws if s.name.endswith("_bucket")]
assert les[-1] == "+Inf" and len(les) == 26, les
vals = [s.value for s in ws if s.name.endswith("_bucket")]
assert vals == sorted(vals) and vals[-1] == 10, vals
assert [s.value for s in ws if s.name.endswith("_count")] == [10]
assert all(n.startswith("plugdisk_") for n in fams)
assert all(f.documentation for f in fams.values()), [n for n, f in fams.items() if not f.documentation]
# Prometheus' own text format, as node_exporter's textfile collector parses it
assert any(f.name == "plugdisk_in_flight" for f in prom(open(sys.argv[2]).read()))
print(len(fams), "families")
PYEOF

# Bad uses.
expect_exit 2 "$PLUGDISK" stats "$MNT" --format=xml
grep -q "^plugdisk stats: --format xml: must be text, json, openmetrics or prometheus$" "$T/out" ||
	fail "--format=xml: $(cat "$T/out")"
expect_exit 2 "$PLUGDISK" stats
mkdir "$T/plain"
expect_exit 4 "$PLUGDISK" stats "$T/plain" --format=json
grep -q "is not a plugdisk mount" "$T/out" || fail "plain directory: $(cat "$T/out")"
pd_stop
