#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --dump-config prints the size in force: an existing image's or block device's own size
# unless one is asked for, so that its output, fed back with -c, describes the same disk and
# starts it.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_loop

head -c 3M /dev/zero >"$T/img"
"$PLUGDISK" --dump-config -i "$T/img" >"$T/dump.conf" || fail "--dump-config"
grep -q '^	size = "3M";' "$T/dump.conf" || fail "size of the existing image: $(grep size "$T/dump.conf")"
# Asked for, the size asked for is shown (the start would then refuse the image).
"$PLUGDISK" --dump-config -i "$T/img" -s 2M | grep -q '^	size = "2M";' ||
	fail "a size asked for is not shown"
# No image yet: the default size, at which it would be created.
"$PLUGDISK" --dump-config -i "$T/none.img" | grep -q '^	size = "1G";' ||
	fail "a missing image does not show the default size"
[ -e "$T/none.img" ] && fail "--dump-config created the image"
# A block device: its own size.
truncate -s 5M "$T/dev.img"
dev=$(loop_attach "$T/dev.img")
"$PLUGDISK" --dump-config -i "$dev" | grep -q '^	size = "5M";' || fail "a block device's size"
loop_detach "$dev"

# Fed back, the output prints itself and starts the same disk.
"$PLUGDISK" -c "$T/dump.conf" --dump-config >"$T/again.conf" || fail "--dump-config of the dump"
diff "$T/dump.conf" "$T/again.conf" >&2 || fail "the dump does not round-trip"
pd_start -c "$T/dump.conf"
assert_eq "$(stat_get disk_size_bytes)" $((3 << 20)) "disk size started from the dump"
pd_stop
