#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# doc/request-path.svg, the picture of the README and doc/design.md, is what graphviz draws from
# doc/request-path.dot (`make doc` redraws it), and the README's ASCII version names the same
# steps of the path.
. "$(dirname "$0")/../lib.sh"
require_cmd dot

src=$TOP/doc/request-path.dot svg=$TOP/doc/request-path.svg
[ -f "$svg" ] || fail "$svg is missing (run make doc)"
dot -Tsvg "$src" >"$T/new.svg" || fail "dot cannot draw $src"
diff -u "$svg" "$T/new.svg" >"$T/svg.diff" ||
	fail "$svg is not what dot draws from $src (run make doc): $(head -20 "$T/svg.diff")"
log "$svg is current"

# The check can fail: a changed source draws another picture.
sed 's/label="queue\\n/label="request queue\\n/' "$src" >"$T/changed.dot"
cmp -s "$src" "$T/changed.dot" && fail "found no queue node to change in $src"
dot -Tsvg "$T/changed.dot" | cmp -s - "$svg" && fail "a changed source drew the same picture"

# Both pictures in the README, with the same steps in the same order.
grep -q '](doc/request-path.svg)' "$TOP/README.md" || fail "README.md does not show the SVG"
steps=$(awk '/^```$/ { n++; next } n == 1 && /^ [A-Za-z]+ \.\.\./ { print $1 }' "$TOP/README.md" | tr '\n' ' ')
assert_eq "$steps" "FUSE queue controller stages backend " "the README's ASCII path"
for s in application FUSE queue controller "write cache" faults backend; do
	grep -q "$s" "$svg" || fail "the SVG does not name $s"
done
log "the README shows the SVG and an ASCII path of the same steps"
