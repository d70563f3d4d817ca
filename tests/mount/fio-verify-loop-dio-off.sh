#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Verified fio (crc32c, verify_fatal) through a loop device with --direct-io=off over
# MNT/disk, at iodepth 1, 32, 128, mixing reads, writes, fsync and trims, unlimited, at
# controller.iops=2000, and at latency_us=500 with queue_depth=2. Identities hold after each.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/helpers/fio-verify.bash"
require_fuse
require_loop
require_cmd fio
fv_loop_suite off
