#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The systemd units as `make install` writes them: `systemd-analyze verify` prints nothing, and
# `systemd-analyze security --offline=yes` scores plugdisk@.service no worse than recorded.
. "$(dirname "$0")/../lib.sh"

# The exposure score recorded for plugdisk@.service (systemd 252). Lower it when the unit
# gets tighter; the test fails if the unit's exposure rises above it.
MAX_EXPOSURE=${MAX_EXPOSURE:-2.9}

require_cmd systemd-analyze make
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

# Install into a scratch root, with ExecStart= pointing at the built binary so that verify
# finds an executable there. B= reuses the build that made $PLUGDISK (nothing is rebuilt).
D=$T/root
bindir=$(dirname "$PLUGDISK")
# B= as the Makefile spells it (relative to the tree when the build is inside it): a build
# dir spelt another way would write dependency files that later builds do not match.
bdir=$(realpath --relative-to="$TOP" "$bindir")
case $bdir in ../*) bdir=$bindir ;; esac
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP" --no-print-directory install DESTDIR="$D" PREFIX=/usr/local BINDIR="$bindir" \
	B="$bdir" >"$T/install.log" 2>&1 || { cat "$T/install.log" >&2; fail "make install failed"; }
U=$T/units
mkdir -p "$U"
cp "$D/usr/local/lib/systemd/system/plugdisk@.service" "$U/"
cp "$D/usr/local/share/doc/plugdisk/examples/srv-plugdisk-t1.mount" "$U/"
grep -qx "ExecStart=$bindir/plugdisk -f -c /etc/plugdisk/%i.conf" "$U/plugdisk@.service" ||
	fail "ExecStart does not name the installed binary: $(grep ExecStart= "$U/plugdisk@.service")"
grep -q '@[A-Z]*@' "$U/plugdisk@.service" && fail "unsubstituted @VARIABLE@ in the unit"

# verify: an instance of the template and the example mount unit (which requires it); the
# scratch directory goes first in the unit search path (the trailing colon keeps the rest).
(cd "$U" && SYSTEMD_UNIT_PATH="$U:" systemd-analyze verify --man=no \
	plugdisk@t1.service srv-plugdisk-t1.mount) >"$T/verify.log" 2>&1 || true
if [ -s "$T/verify.log" ]; then
	sed 's/^/    | /' "$T/verify.log" >&2
	fail "systemd-analyze verify printed something"
fi

# The /etc/fstab line of doc/service.md, through the real fstab generator: plugdisk@t1 before
# the mount, and (thanks to nofail) no ordering cycle with local-fs.target.
FSTAB_LINE='/run/plugdisk/t1/disk  /srv/plugdisk/t1  ext4  loop,nofail,x-systemd.requires=plugdisk@t1.service  0  0'
grep -qF "    $FSTAB_LINE" "$TOP/doc/service.md" || fail "doc/service.md does not give the fstab line tested here"
gen=/lib/systemd/system-generators/systemd-fstab-generator
if [ -x "$gen" ]; then
	G=$T/gen
	mkdir -p "$G/normal" "$G/early" "$G/late"
	echo "$FSTAB_LINE" >"$T/fstab"
	SYSTEMD_LOG_LEVEL=err SYSTEMD_FSTAB=$T/fstab SYSTEMD_IN_INITRD=0 \
		"$gen" "$G/normal" "$G/early" "$G/late" || fail "fstab generator failed on the fstab line of doc/service.md"
	grep -qx 'Requires=plugdisk@t1.service' "$G/normal/srv-plugdisk-t1.mount" ||
		fail "the fstab line does not make the mount require plugdisk@t1.service"
	rm -f "$U/srv-plugdisk-t1.mount"
	(cd "$U" && SYSTEMD_UNIT_PATH="$U:$G/normal:" systemd-analyze verify --man=no \
		srv-plugdisk-t1.mount local-fs.target) >"$T/verify-fstab.log" 2>&1 || true
	if [ -s "$T/verify-fstab.log" ]; then
		sed 's/^/    | /' "$T/verify-fstab.log" >&2
		fail "systemd-analyze verify printed something for the fstab line"
	fi
fi
log "verify: clean"

(cd "$U" && systemd-analyze security --offline=yes --no-pager plugdisk@.service) \
	>"$T/security.log" 2>&1 || true
score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$T/security.log")
[ -n "$score" ] || { cat "$T/security.log" >&2; fail "no exposure score from systemd-analyze security"; }
log "exposure $score (recorded $MAX_EXPOSURE)"
grep '^✗' "$T/security.log" | sed 's/  */ /g' >&2
awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN {exit !(s <= m)}' ||
	fail "exposure $score rose above the recorded $MAX_EXPOSURE"
exit 0
