#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The libFuzzer targets (tests/fuzz/, built by 'make check' into build-fuzz/ with clang):
# each runs every input of its corpus, tests/fuzz/corpus/TARGET/, as a regression input, then
# fuzzes for FUZZ_CHECK_SECONDS (default 5) from it. A crash, a leak, a hang (25 s) or a
# broken property fails; its input is kept in build-fuzz/check/ for the corpus.
. "$(dirname "$0")/../lib.sh"
require_cmd clang

secs=${FUZZ_CHECK_SECONDS:-5}
targets=()
for src in "$TOP"/tests/fuzz/fuzz_*.c; do
	t=$(basename "$src" .c)
	t=${t#fuzz_}
	[ "$t" = util ] && continue
	[ -x "$TOP/build-fuzz/fuzz_$t" ] || fail "build-fuzz/fuzz_$t is not built (make fuzz-build)"
	targets+=("$t")
done
[ ${#targets[@]} -ge 4 ] || fail "only ${#targets[@]} fuzz targets found"
FUZZ_BUILD=$TOP/build-fuzz FUZZ_NEW=$T/new FUZZ_ARTIFACTS=$TOP/build-fuzz/check \
	"$TOP/tests/fuzz/run.sh" "$secs" "${targets[@]}" || fail "a fuzz target failed"
