#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Static checks: cppcheck over every C file, and clang's scan-build over a clean build of the
# daemon and the unit tests. Fails on any finding that tests/static/ does not list with a
# reason: cppcheck.supp (cppcheck's suppression format) and scan-build.baseline (known
# scan-build findings, without line numbers, so that moving code does not make them new).
# Usage: tests/static/check.sh [cppcheck|scan-build]... (default: both). Run from the top.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/static
out=${STATIC_OUT:-build/static}
mkdir -p "$out"
rc=0

# Every entry of a list carries its reason: '#' lines right above it (entries with no blank
# line between them share the reason above the first).
check_reasons() {
	awk -v f="$1" '
		/^[[:space:]]*$/ { why = 0; next }
		/^#/ { why = 1; next }
		!why { printf "%s:%d: entry without a # reason above it: %s\n", f, NR, $0; bad = 1 }
		END { exit bad }' "$1"
}

run_cppcheck() {
	command -v cppcheck >/dev/null || { echo "static: cppcheck is not installed (make deps)"; return 1; }
	check_reasons "$here/cppcheck.supp" || return 1
	echo "static: cppcheck"
	# warning, performance and portability: the classes that find defects. (style is
	# taste, and information is cppcheck's own notes about missing system headers.)
	if ! cppcheck --std=c11 --enable=warning,performance,portability --inline-suppr \
		--suppressions-list="$here/cppcheck.supp" --error-exitcode=1 --quiet \
		-I. -D_GNU_SOURCE --template='{file}:{line}: {severity} ({id}): {message}' \
		core conf daemon tests 2>"$out/cppcheck.txt"; then
		cat "$out/cppcheck.txt"
		echo "static: cppcheck found the above; fix them, or list them in $here/cppcheck.supp with a reason"
		return 1
	fi
	cat "$out/cppcheck.txt"
}

run_scan_build() {
	command -v scan-build >/dev/null || { echo "static: scan-build is not installed (make deps)"; return 1; }
	check_reasons "$here/scan-build.baseline" || return 1
	echo "static: scan-build (a clean build in build-scan/)"
	rm -rf build-scan "$out/scan-build"
	scan-build -o "$out/scan-build" make -j2 B=build-scan all >"$out/scan-build.log" 2>&1 || {
		tail -30 "$out/scan-build.log"
		echo "static: the scan-build build failed (log: $out/scan-build.log)"
		return 1
	}
	# "file:line:col: warning: message [checker]" -> "file: message [checker]"
	grep -E '^[^ :]+:[0-9]+:[0-9]+: warning: .*\[[a-z]+\.[A-Za-z.]+\]$' "$out/scan-build.log" |
		sed -E 's/^([^:]+):[0-9]+:[0-9]+: warning: /\1: /' | LC_ALL=C sort >"$out/scan-found.txt" || true
	grep -Ev '^(#|[[:space:]]*$)' "$here/scan-build.baseline" | LC_ALL=C sort >"$out/scan-known.txt" || true
	LC_ALL=C comm -23 "$out/scan-found.txt" "$out/scan-known.txt" >"$out/scan-new.txt"
	LC_ALL=C comm -13 "$out/scan-found.txt" "$out/scan-known.txt" >"$out/scan-gone.txt"
	if [ -s "$out/scan-gone.txt" ]; then
		echo "static: fixed, so they can leave $here/scan-build.baseline:"
		sed 's/^/  /' "$out/scan-gone.txt"
	fi
	if [ -s "$out/scan-new.txt" ]; then
		grep -E '^[^ :]+:[0-9]+:[0-9]+: warning: .*\[[a-z]+\.' "$out/scan-build.log" || true
		echo "static: new scan-build findings (reports in $out/scan-build):"
		sed 's/^/  /' "$out/scan-new.txt"
		return 1
	fi
	echo "static: scan-build: $(wc -l <"$out/scan-found.txt") finding(s), all known"
}

[ $# -gt 0 ] || set -- cppcheck scan-build
for what in "$@"; do
	case $what in
	cppcheck) run_cppcheck || rc=1 ;;
	scan-build) run_scan_build || rc=1 ;;
	*) echo "usage: $0 [cppcheck|scan-build]..." >&2; exit 2 ;;
	esac
done
exit $rc
