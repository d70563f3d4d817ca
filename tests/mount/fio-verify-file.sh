#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Verified fio (crc32c, verify_fatal) on MNT/disk itself at iodepth 1, 32, 128, mixing reads,
# writes, fsync and discards, unlimited, at controller.iops=2000, and at latency_us=500 with
# queue_depth=2. The stats identities hold after each setting.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/helpers/fio-verify.bash"
require_fuse
require_cmd fio
cd "$T" || fail "cd $T"	# fio writes state files into the working directory
build_helper pdio

for s in "${FV_SETTINGS[@]}"; do
	label=${s%%|*}
	# shellcheck disable=SC2086
	pd_start -s 16M ${s#*|}
	fv_run "$MNT/disk" file "file/$label"
	fv_check_stats "file/$label"
	pd_stop
done
