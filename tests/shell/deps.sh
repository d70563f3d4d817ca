#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make run installs only what building and running needs (deps-run); make check installs
# everything the tests need (deps, a superset). Each library the daemon links comes from a
# package of deps-run, and the test-only tools are not in it.
. "$(dirname "$0")/../lib.sh"
require_cmd make dpkg pkg-config
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP" --no-print-directory "$@"; }
var() { mk --eval='pd-print-%: ; @echo $($*)' "pd-print-$1"; }

run_pkgs=" $(var DEB_RUN_PACKAGES) "
all_pkgs=" $(var DEB_PACKAGES) "
log "deps-run: $run_pkgs"
for p in $run_pkgs; do
	[[ $all_pkgs == *" $p "* ]] || [[ " $(mk -n deps | grep -o 'for p in [^;]*') " == *" $p "* ]] ||
		fail "$p is in deps-run but not in deps"
done
for p in cppcheck clang-tools qemu-utils nbdkit fio jq check sqlite3; do
	[[ $run_pkgs == *" $p "* ]] && fail "deps-run installs $p, which only the tests need"
done
# Every library the daemon links, by its pkg-config file's package.
for m in fuse3 libconfig libsystemd liburing libnbd; do
	pc=$(pkg-config --variable=pcfiledir "$m")/$m.pc
	pkg=$(dpkg -S "$pc" 2>/dev/null | head -n1 | cut -d: -f1)
	[ -n "$pkg" ] || fail "no package holds $pc"
	[[ $run_pkgs == *" $pkg "* ]] || fail "$m comes from $pkg, which deps-run lacks"
done
# run depends on deps-run, not deps; check on deps.
mk -n run MNT="$T/mnt" >"$T/run.n" 2>&1 || true
grep -q "for p in build-essential pkg-config" "$T/run.n" || fail "make run does not run deps-run: $(head -3 "$T/run.n")"
grep -q "cppcheck" "$T/run.n" && fail "make run installs the test packages"
mk -n check TESTS=/bin/true >"$T/check.n" 2>&1 || true
grep -q "cppcheck" "$T/check.n" || fail "make check does not install the test packages"
exit 0
