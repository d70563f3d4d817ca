#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# replay streams a write's data instead of holding it: --list never reads it, and --flush
# applies a durable write a chunk at a time, so both run under a memory limit far below the
# write's size (a sparse log holding one 4 GiB write, and one of 256 MiB). A pending write,
# which the cut needs whole, that does not fit is reported as out of memory, not as a bad
# record.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../wlog-lib.sh"

LIMIT_KB=150000 # ulimit -v: the program and its libraries fit, a 256 MiB buffer does not
if ldd "$PLUGDISK" | grep -q libasan; then
	# AddressSanitizer reserves terabytes of shadow and cannot run under ulimit -v; its
	# allocator refuses any one allocation over the limit instead.
	limited() {
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=$((LIMIT_KB / 1024)) "$@"
	}
else
	limited() { (ulimit -v $LIMIT_KB && exec "$@"); }
fi
# The limit is not too tight for plugdisk itself.
expect_exit 0 limited "$PLUGDISK" --version

# One write of 2^32 bytes (a hole in the log), then its flush, on an 8 GiB disk.
{ wlog_hdr 2 4096 8589934592; wlog_rec 1 1 0 4294967296; } >"$T/big.log"
truncate -s $((64 + 4294967296)) "$T/big.log"
wlog_rec 2 1 0 0 >>"$T/big.log"
expect_exit 0 limited "$PLUGDISK" replay "$T/big.log" --list
grep -q "^end after 1 writes (4294967296 bytes), 1 flushes$" "$T/out" ||
	fail "--list of a 4 GiB write: $(cat "$T/out")"
# The same write pending at --crash 0 must be held whole: out of memory, said so, and the
# image (created by the replay) holds nothing.
expect_exit 1 limited "$PLUGDISK" replay "$T/big.log" "$T/big.img" --crash 0 --mode drop
grep -q "out of memory after 0 writes" "$T/out" || fail "--crash 0: $(cat "$T/out")"
grep -q "bad record" "$T/out" && fail "--crash 0 speaks of a bad record: $(cat "$T/out")"
assert_eq "$(du -k "$T/big.img" | cut -f1)" 0 "blocks of the image after the failed replay"

# A durable write of 256 MiB: applied under the limit, byte for byte.
{ wlog_hdr 2 4096 $((512 << 20)); wlog_rec 1 1 4096 $((256 << 20)); } >"$T/mid.log"
head -c $((256 << 20)) /dev/urandom >"$T/data"
cat "$T/data" >>"$T/mid.log"
wlog_rec 2 1 0 0 >>"$T/mid.log"
expect_exit 0 limited "$PLUGDISK" replay "$T/mid.log" "$T/mid.img" --flush 1
grep -q "^replay: flush 1, 1 writes applied$" "$T/out" || fail "--flush 1: $(cat "$T/out")"
assert_eq "$(sha_of "$T/mid.img" 4096 $((256 << 20)))" "$(sha_of "$T/data")" \
	"the write's bytes in the image"
assert_eq "$(sha_of "$T/mid.img" 0 4096)" "$(head -c 4096 /dev/zero | sha256sum | cut -d' ' -f1)" \
	"the bytes before the write"
exit 0
