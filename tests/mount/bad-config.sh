#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad config files: syntax error, unknown key, wrong type, negative, overflow, contradictory
# values (max_request_size < 4K, queue_depth 0, latency over an hour), unsafe permissions,
# a missing file. Each exits 2 with a message naming the file, the line and the key, and
# nothing on disk changes.
. "$(dirname "$0")/../lib.sh"
require_fuse
PD=(timeout -k 5 15 "$PLUGDISK")

head -c 1M /dev/urandom >"$T/img"
sum=$(sha_of "$T/img")
C=$T/bad.conf

# cfg LINE...: write the config: line 1 the disk group, then the given lines (line 2 on).
cfg() {
	rm -f "$C"
	{ echo "disk = { image = \"$T/img\"; size = \"1M\"; };"; printf '%s\n' "$@"; } >"$C"
	chmod 0644 "$C"
}
# bad DESC LINE KEY: the daemon refuses $C with status 2 and a message naming
# bad.conf:LINE and KEY (either may be "" to skip that part).
bad() {
	local desc=$1 line=$2 key=$3
	expect_exit 2 "${PD[@]}" -f -c "$C" "$MNT"
	if [ -n "$line" ]; then
		grep -qE "bad\.conf:$line([^0-9]|$)" "$T/out" ||
			{ cat "$T/out" >&2; fail "$desc: message lacks bad.conf:$line"; }
	fi
	if [ -n "$key" ]; then
		grep -qF -- "$key" "$T/out" || { cat "$T/out" >&2; fail "$desc: message lacks $key"; }
	fi
	mountpoint -q "$MNT" && fail "$desc: mounted"
	assert_eq "$(sha_of "$T/img")" "$sum" "$desc: image changed"
	log "ok: $desc: $(head -n1 "$T/out")"
}

cfg 'queue = {' '  nomerges = 1' '  plug = ;' '};'
bad "syntax error" 4 ""
cfg 'queue = { frobnicate = 1; };'
bad "unknown key" 2 "queue.frobnicate"
cfg 'gizmo = { x = 1; };'
bad "unknown group" 2 "gizmo"
cfg 'controler = { latency_us = 5; };'
bad "group spelt wrong" 2 "controler: unknown key (did you mean controller?)"
cfg 'queue = { nomerge = 1; };'
bad "key spelt wrong" 2 "queue.nomerge: unknown key (did you mean queue.nomerges?)"
cfg 'controller = { latency_us = "2 parsecs"; };'
bad "a duration without a known unit" 2 "controller.latency_us: not a duration: \"2 parsecs\""
cfg 'controller = { latency_us = "1500ns"; };'
bad "a duration not whole" 2 "\"1500ns\" is not a whole number of microseconds"
cfg 'controller = { bandwidth = "1.5"; };'
bad "a fraction of a byte" 2 "controller.bandwidth: not a rate"
cfg 'cache = { flush = "honr"; };'
bad "a word spelt wrong" 2 "must be one of honour, ignore"
cfg '' 'queue = { nomerges = "two"; };'
bad "wrong type (string for int)" 3 "queue.nomerges"
cfg 'queue = { plug = 3.5; };'
bad "wrong type (float for bool)" 2 "queue.plug"
cfg 'controller = { iops = -1; };'
bad "negative" 2 "controller.iops"
cfg 'controller = { bandwidth = "-5M"; };'
bad "negative size" 2 "controller.bandwidth"
cfg 'queue = { nr_requests = 4294967296L; };'
bad "overflow (32-bit key)" 2 "queue.nr_requests"
cfg 'controller = { bandwidth = "99999999999T"; };'
bad "overflow (size with suffix)" 2 "controller.bandwidth"
cfg 'controller = { latency_us = 9223372036854775807L; };'
bad "overflow (64-bit)" 2 "controller.latency_us"
cfg 'queue = { max_request_size = 2048; };'
bad "max_request_size < 4K" 2 "queue.max_request_size"
cfg 'controller = { queue_depth = 0; };'
bad "queue_depth 0" 2 "controller.queue_depth"
cfg 'controller = { latency_us = 3600000001L; };'
bad "latency over an hour" 2 "controller.latency_us"
cfg 'queue = { nr_requests = 8; unplug_threshold = 16; };'
bad "unplug_threshold above nr_requests" 2 "queue.unplug_threshold"
printf '%s\n' "# size below" "disk = {" "  image = \"$T/img\";" "  size = \"1000\";" "};" >"$C"
bad "disk.size not a multiple of 512" 4 "disk.size"

# --set on top of a good file names the key too.
cfg 'queue = { nomerges = 1; };'
expect_exit 2 "${PD[@]}" -f -c "$C" --set controller.queue_depth=0 "$MNT"
grep -qF controller.queue_depth "$T/out" || fail "--set queue_depth=0: message lacks the key"

# A file others can write is refused for a root daemon; a missing file is an error.
if [ "$(id -u)" = 0 ]; then
	cfg 'queue = { nomerges = 1; };'
	chmod 0666 "$C"
	bad "world-writable config (root)" "" "bad.conf"
fi
rm -f "$C"
bad "missing config file" "" "bad.conf"

# The good version of the same file starts, so the refusals above were about the values.
cfg 'queue = { nomerges = 1; };' 'controller = { latency_us = 3600000000L; queue_depth = 1; };'
pd_start -c "$C"
assert_eq "$(stat_get queue_nomerges)" 1 "good config applied"
assert_eq "$(stat_get limit_latency_us)" 3600000000 "an hour of latency is allowed"
pd_stop
assert_eq "$(sha_of "$T/img")" "$sum" "image after a clean start and stop"
