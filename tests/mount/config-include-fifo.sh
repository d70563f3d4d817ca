#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A configuration file that @includes a FIFO (directly, or through another include) is
# refused at once with status 2, naming the including file, its line and the FIFO, instead
# of waiting for a writer. (timeout only turns a hang into a failure.)
. "$(dirname "$0")/../lib.sh"
require_cmd mkfifo timeout

cd "$T" || fail "cd $T"
mkfifo fifo
printf 'disk = { name = "a"; };\n\n@include "fifo"\n' >a.conf
printf '# through another file\n@include "a.conf"\n' >b.conf
chmod 0600 a.conf b.conf
expect_exit 2 timeout 20 "$PLUGDISK" --dump-config -c a.conf
grep -q 'a.conf:3: @include "fifo": not a regular file' "$T/out" || fail "a.conf: $(cat "$T/out")"
expect_exit 2 timeout 20 "$PLUGDISK" --dump-config -c b.conf
grep -q 'a.conf:3: @include "fifo": not a regular file' "$T/out" || fail "b.conf: $(cat "$T/out")"
# A regular file still comes in; an include in a comment is none.
printf 'cache = { seed = 5; };\n' >c.conf
printf '/* @include "fifo" */\n@include "c.conf"\n' >d.conf
chmod 0600 c.conf d.conf
expect_exit 0 timeout 20 "$PLUGDISK" --dump-config -c d.conf
grep -q '^	seed = 5;' "$T/out" || fail "d.conf: the included seed is missing"
log "an @include of a FIFO is refused at once"
