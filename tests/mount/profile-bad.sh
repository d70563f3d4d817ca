#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An unknown profile, from --profile or from the config file, exits with status 2, names the
# place and every known profile, and mounts nothing.
. "$(dirname "$0")/../lib.sh"
require_fuse
PD=(timeout -k 5 15 "$PLUGDISK")

known=$("$PLUGDISK" --list-profiles | grep -E '^[a-z0-9][a-z0-9.-]*$')
[ "$(wc -l <<<"$known")" -ge 8 ] || fail "fewer than 8 profiles listed"
check_names() {
	local p
	for p in $known; do grep -qF -- "$p" "$T/out" || fail "$1: message lacks $p"; done
	mountpoint -q "$MNT" && fail "$1: mounted"
	log "ok: $1: $(head -n1 "$T/out")"
}

expect_exit 2 "${PD[@]}" -f -i "$T/img" -s 1M --profile hdd-7201 "$MNT"
grep -qF -- '--profile hdd-7201' "$T/out" || fail "--profile: message lacks the option"
check_names "--profile"

C=$T/bad.conf
printf 'disk = { image = "%s"; size = "1M"; };\nprofile = "gp2";\n' "$T/img" >"$C"
chmod 0644 "$C"
expect_exit 2 "${PD[@]}" -f -c "$C" "$MNT"
grep -qE 'bad\.conf:2: profile: unknown profile "gp2"' "$T/out" ||
	fail "file: message lacks bad.conf:2 and the name"
check_names "config file"

expect_exit 2 "${PD[@]}" -f -i "$T/img" -s 1M --profile ebs-gp2 \
	--set controller.latency_dist=lognormal "$MNT"
grep -qF 'controller.latency_dist' "$T/out" || fail "model rule: message lacks the key"
[ ! -e "$T/img" ] || fail "a refused start created the image"
