#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stages.order: with the write cache over the faults (the default), a write fault meets the
# cache's destaging, so the application's write succeeds and only the flush sees EIO; with
# the faults over the cache, the application's own write fails with EIO and the flush has
# nothing to report. Orders that make no sense exit 2 naming the key, the file and the line.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
FAULT='op=write offset=1M len=64K error=EIO'

# run ORDER: a write into the faulty range, then an fsync; prints both results.
run() {
	pd_start -s 16M --set cache.mode=writeback --set cache.destage_delay_ms=600000 \
		--set "stages.order=$1" --set "faults=$FAULT"
	$P "$D" pwrite 1048576 65536 7 fsync
	pd_stop_lost
}

# The write cache loses the failed write at the stop: the daemon says so, and exits 1.
pd_stop_lost() {
	kill -TERM "$PD_PID"
	pid_gone_within 60 "$PD_PID" || fail "daemon still runs 60 s after SIGTERM"
	wait "$PD_PID" || true
}

out=$(run "cache, faults")
log "cache, faults: $(echo $out)"
assert_eq "$out" "$(printf '65536\nEIO')" "cache over faults: the write succeeds, the flush fails"

out=$(run "faults, cache")
log "faults, cache: $(echo $out)"
assert_eq "$out" "$(printf 'EIO\n0')" "faults over cache: the write fails, the flush succeeds"

# The same order twice without a fault: both orders serve data.
for order in "cache, faults" "faults, cache"; do
	pd_start -s 16M --set cache.mode=writeback --set "stages.order=$order"
	assert_eq "$($P "$D" pwrite 0 131072 3 fsync verify 0 131072 3)" \
		"$(printf '131072\n0\n131072 ok')" "$order: data"
	pd_stop
done

# Refused orders: status 2, the key, the file and the line.
C=$T/bad.conf
for bad in '"cache, cache"' '"cache"' '"faults, cache, backend"' '"cache, zip, faults"' \
	'"cache faults"' '""'; do
	{ echo "disk = { image = \"$T/img\"; size = \"1M\"; };"
	  echo "stages = {"
	  echo "  order = $bad;"
	  echo "};"; } >"$C"
	chmod 0644 "$C"
	expect_exit 2 timeout -k 5 15 "$PLUGDISK" -f -c "$C" "$MNT"
	grep -q "bad\.conf:3" "$T/out" || { cat "$T/out" >&2; fail "$bad: no file and line"; }
	grep -q "stages\.order" "$T/out" || { cat "$T/out" >&2; fail "$bad: no key"; }
	mountpoint -q "$MNT" && fail "$bad: mounted"
	log "refused $bad: $(head -n1 "$T/out")"
done
