#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Short power-cut run for make check: one cycle of each kind (block writer cut by command, by
# an armed cut, with poweron; ext4; xfs; SQLite) and one cycle with cache.flush=ignore, where
# the verifier must find losses. The long run is `make powercut CYCLES=N` (tests/crash/powercut.sh).
exec bash "$(dirname "$0")/powercut.sh" CYCLES="${POWERCUT_CHECK_CYCLES:-6}" SIZE=32M FS_SIZE=64M \
	CUT_MIN_MS=200 CUT_MAX_MS=1000 IGNORE=1
