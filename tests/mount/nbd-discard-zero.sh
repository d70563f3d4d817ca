#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Discards and zero ranges reach the NBD server as what they are (nbdkit's log filter shows
# the commands): fallocate(PUNCH_HOLE) is a Trim, fallocate(ZERO_RANGE) a Zero
# (WRITE_ZEROES), and so are blkdiscard and blkdiscard -z through a loop device; a server
# without WRITE_ZEROES (nbdkit's nozero filter) gets Writes of zeroes instead. The ranges read
# back as zeroes and the data around them is intact.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
build_helper pdio
P=$T/pdio
D=$MNT/disk

# has_cmd LOG NAME OFFSET COUNT: the log shows command NAME on that exact range.
has_cmd() {
	grep -qE "$2 id=[0-9]+ offset=$(printf '0x%x' "$3") count=$(printf '0x%x' "$4") " "$1"
}

nbdkit_start unix --filter=log memory 16M logfile="$T/log1"
pd_start -i "$NBD_URI" -s 16M
assert_eq "$(stat_get nbd_can_zero)" 1 "the memory plugin has WRITE_ZEROES"
assert_eq "$($P -d "$D" write 0 4194304 1 fsync)" "$(printf '4194304\n0')" "fill"
assert_eq "$($P "$D" punch 1048576 65536 zero 2097152 131072 fsync)" "$(printf '0\n0\n0')" \
	"punch and zero range"
assert_eq "$($P -d "$D" zeros 1048576 65536 zeros 2097152 131072)" \
	"$(printf '65536 ok\n131072 ok')" "the ranges read as zeroes"
assert_eq "$($P -d "$D" verify 0 1048576 1 verify 1114112 983040 1 verify 2228224 1966080 1)" \
	"$(printf '1048576 ok\n983040 ok\n1966080 ok')" "the data around them"
has_cmd "$T/log1" Trim 1048576 65536 || { cat "$T/log1" >&2; fail "no Trim for the punch"; }
has_cmd "$T/log1" Zero 2097152 131072 || fail "no Zero for the zero range"
# Nothing was written as data after the fill.
sed -n '/Trim id=/,$p' "$T/log1" | grep -q "Write id=" && fail "the zero range was written as data"
if [ -e /dev/loop-control ] && [ "$(id -u)" = 0 ] && command -v blkdiscard >/dev/null; then
	dev=$(loop_attach "$D")
	blkdiscard -o 4194304 -l 1048576 "$dev" || fail "blkdiscard"
	blkdiscard -z -o 6291456 -l 1048576 "$dev" || fail "blkdiscard -z"
	loop_detach "$dev"
	grep -qE "Trim id=[0-9]+ offset=0x4[0-9a-f]{5} " "$T/log1" || fail "no Trim from blkdiscard"
	grep -qE "Zero id=[0-9]+ offset=0x6[0-9a-f]{5} " "$T/log1" || fail "no Zero from blkdiscard -z"
fi
pd_stop
nbd_kill

# Without WRITE_ZEROES on the server, a zero range is written as zeroes.
nbdkit_start unix --filter=log --filter=nozero memory 16M logfile="$T/log2"
pd_start -i "$NBD_URI" -s 16M
assert_eq "$(stat_get nbd_can_zero)" 0 "the nozero filter hides WRITE_ZEROES"
assert_eq "$($P "$D" write 0 1048576 2 zero 65536 65536 fsync)" "$(printf '1048576\n0\n0')" \
	"zero range without WRITE_ZEROES"
assert_eq "$($P -d "$D" zeros 65536 65536 verify 131072 917504 2)" \
	"$(printf '65536 ok\n917504 ok')" "zeroes and data"
has_cmd "$T/log2" Write 65536 65536 || { cat "$T/log2" >&2; fail "no Write for the zero range"; }
grep -q "Zero id=" "$T/log2" && fail "a Zero went to a server without WRITE_ZEROES"
pd_stop
log "ok"
