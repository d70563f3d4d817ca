#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every command a test requires (require_cmd, command -v) is installed, and by a package that
# 'make deps' installs: one in the Makefile's DEB_PACKAGES, a dependency of one, or a
# package every Debian system has (priority required, or essential). So a fresh machine's
# 'make check' skips no test for want of a tool.
. "$(dirname "$0")/../lib.sh"
require_cmd dpkg-query apt-cache

make -s -C "$TOP" print-deps >"$T/deps" || fail "make print-deps failed"
[ "$(wc -l <"$T/deps")" -ge 10 ] || fail "make print-deps listed only $(wc -l <"$T/deps") packages"
# The packages those pull in, two levels down (build-essential brings make and gcc;
# pkg-config brings pkgconf, which brings pkgconf-bin).
for _ in 1 2; do
	xargs apt-cache depends --no-recommends --no-suggests --no-enhances <"$T/deps" 2>/dev/null |
		awk '$1 ~ /Depends:$/ {gsub(/[<>]/, "", $2); print $2}' >"$T/more"
	sort -u "$T/deps" "$T/more" -o "$T/deps"
done

# The commands: the arguments of require_cmd and of command -v in the tests, names only.
grep -rhE '(require_cmd|command -v) ' "$TOP/tests" --include='*.sh' | grep -vE '^[[:space:]]*#' |
	grep -oE '(require_cmd|command -v)( +[A-Za-z0-9._+-]+)+' |
	sed -E 's/^(require_cmd|command -v)//' | tr ' ' '\n' | grep -E '^[A-Za-z0-9._+-]+$' |
	sort -u >"$T/cmds"
n=$(wc -l <"$T/cmds")
[ "$n" -ge 20 ] || fail "only $n required commands found in the tests"
log "$n commands required by the tests"

bad=0
while read -r c; do
	path=$(command -v "$c") || { log "not installed: $c"; bad=$((bad + 1)); continue; }
	[[ $path == /* ]] || continue # a shell builtin
	# dpkg knows a file by the path its package ships, before or after the /usr merge.
	pkg=$(dpkg-query -S "*bin/$(basename "$(readlink -f "$path")")" 2>/dev/null |
		awk -F': ' '{print $1}' | tr ', ' '\n\n' | sed 's/:.*//' | grep . | head -1)
	[ -z "$pkg" ] && pkg=$(dpkg-query -S "*bin/$c" 2>/dev/null | awk -F': ' '{print $1; exit}' | sed 's/[:,].*//')
	[ -n "$pkg" ] || { log "$c ($path) belongs to no Debian package"; bad=$((bad + 1)); continue; }
	grep -qx "$pkg" "$T/deps" && continue
	read -r prio ess < <(dpkg-query -W -f='${Priority} ${Essential}\n' "$pkg" 2>/dev/null)
	[ "$prio" = required ] || [ "$ess" = yes ] && continue
	log "$c comes from $pkg, which 'make deps' does not install (add it to DEB_PACKAGES)"
	bad=$((bad + 1))
done <"$T/cmds"
[ "$bad" = 0 ] || fail "$bad required commands are not installed by 'make deps'"
