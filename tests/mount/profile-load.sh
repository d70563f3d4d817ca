#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every profile that --list-profiles prints (at least the eight doc/configuration.md names) mounts with
# --profile NAME: the limits in stats are the profile's (as --dump-config resolves them), a
# gp2 disk starts with a full credit bucket at its size's baseline, and data written through
# the profile's models reads back intact.
. "$(dirname "$0")/../lib.sh"
require_fuse

"$PLUGDISK" --list-profiles >"$T/list" || fail "--list-profiles failed"
names=$(grep -E '^[a-z0-9][a-z0-9.-]*$' "$T/list")
for want in hdd-7200 sata-ssd nvme-gen4 ebs-gp2 ebs-gp3 ebs-io2 sd-a1 usb2-stick; do
	grep -qx "$want" <<<"$names" || fail "--list-profiles lacks $want"
	awk -v p="$want" '$0 == p {f=1; next} /^[^ ]/ {f=0} f && /^  source: ./ {ok=1} END {exit !ok}' \
		"$T/list" || fail "$want: no source in --list-profiles"
done

head -c 256K /dev/urandom >"$T/src"
# conf KEY: the key's value in --dump-config for the profile, sizes as plain numbers.
conf() {
	awk -v k="$(sed 's/.*\.//' <<<"$1")" '$1 == k { v = $3; gsub(/[";L]/, "", v); print v; exit }' \
		"$T/dump"
}
bytes() { numfmt --from=iec "$1"; }
for p in $names; do
	"$PLUGDISK" --profile "$p" --dump-config >"$T/dump" || fail "$p: --dump-config failed"
	grep -qx "profile = \"$p\";.*" "$T/dump" || grep -q "^profile = \"$p\";" "$T/dump" ||
		fail "$p: --dump-config does not name the profile"
	pd_start -s 64M --profile "$p"
	stats_save "$T/s"
	assert_eq "$(snap_get "$T/s" queue_depth)" "$(conf controller.queue_depth)" "$p: queue_depth"
	assert_eq "$(snap_get "$T/s" limit_iops)" "$(conf controller.iops)" "$p: limit_iops"
	assert_eq "$(snap_get "$T/s" limit_read_iops)" "$(conf controller.read_iops)" "$p: limit_read_iops"
	assert_eq "$(snap_get "$T/s" limit_bandwidth_bytes)" "$(bytes "$(conf controller.bandwidth)")" \
		"$p: limit_bandwidth_bytes"
	assert_eq "$(snap_get "$T/s" limit_write_bandwidth_bytes)" \
		"$(bytes "$(conf controller.write_bandwidth)")" "$p: limit_write_bandwidth_bytes"
	assert_eq "$(snap_get "$T/s" limit_read_latency_us)" "$(conf controller.read_latency_us)" \
		"$p: limit_read_latency_us"
	assert_eq "$(snap_get "$T/s" limit_iops_size_bytes)" "$(bytes "$(conf controller.iops_size)")" \
		"$p: limit_iops_size_bytes"
	if [ "$p" = ebs-gp2 ]; then
		# 64 MiB: 3 IOPS per GiB is below the least baseline of 100
		assert_eq "$(snap_get "$T/s" limit_credit_capacity)" 5400000 "gp2 credit capacity"
		assert_eq "$(snap_get "$T/s" limit_credit_baseline_iops)" 100 "gp2 baseline"
		assert_eq "$(snap_get "$T/s" credit_balance)" 5400000 "gp2 starts full"
	fi
	dd if="$T/src" of="$MNT/disk" bs=64k seek=3 oflag=direct conv=notrunc,fsync status=none ||
		fail "$p: dd write failed"
	assert_eq "$(sha_of "$MNT/disk" $((3 * 65536)) 262144)" "$(sha_of "$T/src")" "$p: data"
	assert_identities
	pd_stop
	log "ok: $p"
done
