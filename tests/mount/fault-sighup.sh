#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP replaces the faults of the config file's `faults` list and leaves those added
# through the control file alone; an unchanged list keeps its faults and counters; a bad
# list is refused and every fault stays.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
D=$MNT/disk
ctl() { "$PLUGDISK" ctl "$MNT" "$@"; }

conf() {	# conf FAULT...: write the config file atomically with these faults
	local f sep=""
	{
		echo "disk = { image = \"$T/disk.img\"; size = \"4M\"; };"
		printf 'faults = ('
		for f; do printf '%s\n\t"%s"' "$sep" "$f"; sep=","; done
		echo " );"
	} >"$T/pd.conf.new"
	mv "$T/pd.conf.new" "$T/pd.conf"
}
reload() {	# reload: SIGHUP and wait for the daemon to log the result
	local n0 i
	n0=$(grep -c "reload" "$T/daemon.log")
	kill -HUP "$PD_PID"
	for i in $(seq 100); do
		[ "$(grep -c "reload" "$T/daemon.log")" -gt "$n0" ] && return 0
		sleep 0.05
	done
	fail "no reload logged"
}
ids() { ctl fault list | sed -n 's/.* # id=\([0-9]*\) source=\([a-z]*\).*/\1:\2/p' | tr '\n' ' '; }

conf "op=read offset=0 len=4K error=EIO seed=1" "op=write offset=1M len=4K error=EIO seed=2"
pd_start -c "$T/pd.conf"
ctl fault add op=read offset=2M len=4K error=ENODATA seed=3 >/dev/null || fail "fault add"
assert_eq "$(ids)" "1:config 2:config 3:control " "faults at start"
assert_eq "$($P -d "$D" pread 0 4096)" EIO "configured fault 1"

# The same list: nothing changes, counters included.
reload
assert_eq "$(ids)" "1:config 2:config 3:control " "faults after a reload of the same list"
assert_eq "$(stat_get fault_1_injected)" 1 "fault 1 kept its counter"

# A new list replaces faults 1 and 2; fault 3 stays.
conf "op=read offset=8K len=4K error=EROFS seed=4"
reload
assert_eq "$(ids)" "3:control 4:config " "faults after a reload of a new list"
assert_eq "$($P -d "$D" pread 0 4096)" 4096 "fault 1 is gone"
assert_eq "$($P -d "$D" pread 8192 4096)" EROFS "the new fault acts"
assert_eq "$($P -d "$D" pread 2097152 4096)" ENODATA "the control fault still acts"

# A bad list: refused, everything stays.
conf "op=read offset=8K len=4K error=EROFS seed=4" "op=write latency=5"
reload
grep -q "reload refused.*faults\[1\]" "$T/daemon.log" || fail "the refusal does not name faults[1]"
assert_eq "$(ids)" "3:control 4:config " "faults after a bad reload"

# An empty list removes the configured faults only.
conf
reload
assert_eq "$(ids)" "3:control " "faults after a reload of an empty list"
pd_stop
