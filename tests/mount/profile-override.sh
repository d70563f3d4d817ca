#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Keys the user sets win over the profile: a config file with profile = "ebs-gp2" and its own
# controller.iops, plus a --set of the credit capacity, mounts with the user's values and the
# profile's others; --profile on the command line replaces the file's profile and the file's
# keys still win over it.
. "$(dirname "$0")/../lib.sh"
require_fuse

C=$T/gp2.conf
cat >"$C" <<CONF
disk = { image = "$T/disk.img"; size = "64M"; };
controller = { iops = 500; };
profile = "ebs-gp2";
CONF
chmod 0644 "$C"

pd_start -c "$C" --set controller.credit_capacity=1000
stats_save "$T/s"
assert_eq "$(snap_get "$T/s" limit_iops)" 500 "the file's controller.iops wins"
assert_eq "$(snap_get "$T/s" limit_credit_capacity)" 1000 "--set wins"
assert_eq "$(snap_get "$T/s" limit_credit_baseline_iops)" 100 "the profile's baseline"
assert_eq "$(snap_get "$T/s" limit_iops_size_bytes)" 262144 "the profile's iops_size"
assert_eq "$(snap_get "$T/s" limit_bandwidth_bytes)" $((128 << 20)) "the profile's bandwidth"
pd_stop

pd_start -c "$C" --profile sd-a1
stats_save "$T/s"
assert_eq "$(snap_get "$T/s" limit_iops)" 500 "the file's controller.iops still wins"
assert_eq "$(snap_get "$T/s" limit_credit_capacity)" 0 "gp2's credits are gone"
assert_eq "$(snap_get "$T/s" queue_depth)" 1 "sd-a1's queue_depth"
assert_eq "$(snap_get "$T/s" limit_write_latency_us)" 2000 "sd-a1's write latency"
pd_stop
