#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Short crash-consistency run for make check: a few kill -9 cycles through the disk file and
# through ext4 on a loop device, then a self-test proving the verifier catches a torn sector.
# The long run is `make crash CYCLES=N` (tests/crash/crash.sh).
exec bash "$(dirname "$0")/crash.sh" CYCLES="${CRASH_CHECK_CYCLES:-4}" SIZE=32M FS_SIZE=64M \
	KILL_MIN_MS=300 KILL_MAX_MS=1500 SELFTEST=1
