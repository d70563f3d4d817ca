#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bash completion: `make install` puts it at PREFIX/share/bash-completion/completions/
# plugdisk (under DESTDIR), it is what completion/gen.sh makes from the built binary, and,
# sourced into bash, it completes options, keys and their words, profiles, control commands
# and stats formats, with the lists of this very binary.
. "$(dirname "$0")/../lib.sh"
require_cmd make
[ -x "$PLUGDISK" ] || fail "daemon binary $PLUGDISK not built"

# Installed where bash-completion looks, under DESTDIR, with PREFIX.
D=$T/root
bindir=$(dirname "$PLUGDISK")
bdir=$(realpath --relative-to="$TOP" "$bindir")
case $bdir in ../*) bdir=$bindir ;; esac
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP" --no-print-directory install \
	DESTDIR="$D" PREFIX=/usr B="$bdir" >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log" >&2; fail "make install failed"; }
comp=$D/usr/share/bash-completion/completions/plugdisk
[ -f "$comp" ] || fail "not installed at $comp: $(find "$D" -name 'plugdisk*' | tr '\n' ' ')"
sh "$TOP/completion/gen.sh" "$PLUGDISK" "$TOP/completion/plugdisk.bash.in" >"$T/gen" ||
	fail "gen.sh failed"
cmp -s "$comp" "$T/gen" || fail "the installed completion is not what gen.sh makes"
grep -q '@GENERATED@' "$comp" && fail "the placeholder was not replaced"
bash -n "$comp" || fail "the completion is not valid bash"

# complete LINE: what bash would offer at the end of LINE (COMP_LINE and COMP_POINT as bash
# sets them; the function splits the words itself).
mkdir "$T/mnt-a" "$T/mnt-b"
complete_line() {
	bash -c '. "$1"; COMP_LINE=$2; COMP_POINT=${#2}; COMPREPLY=(); _plugdisk
		printf "%s\n" "${COMPREPLY[@]}"' _ "$comp" "$1" | sort | tr '\n' ' ' | sed 's/ $//'
}
check() { assert_eq "$(complete_line "$1")" "$2" "completion of '$1'"; }

check "plugdisk --se" "--set"
check "plugdisk --read" "--readonly"
check "plugdisk --log-level d" "debug"
check "plugdisk --set cache.mo" "cache.mode="
check "plugdisk --set cache.mode=" "none writeback"
check "plugdisk --set cache.flush=h" "honour"
check "plugdisk --set disk.read_only=t" "true"
check "plugdisk --set=queue.pl" "queue.plug="
check "plugdisk --profile ebs-" "ebs-gp2 ebs-gp3 ebs-io2"
check "plugdisk st" "stats"
check "plugdisk ctl $T/mnt-" "$T/mnt-a $T/mnt-b"
check "plugdisk ctl $T/mnt-a po" "powercut poweron"
check "plugdisk ctl $T/mnt-a fault " "add clear del list"
check "plugdisk ctl $T/mnt-a powercut arm mode=t" "tear"
check "plugdisk stats $T/mnt-a --format=" "json openmetrics text"
check "plugdisk top $T/mnt-a --b" "--batch"
check "plugdisk replay log --mode s" "subset"
# Every subcommand's own options, and not the daemon's.
check "plugdisk explore --b" "--budget"
check "plugdisk explore --sa" "--sampler"
check "plugdisk explore --sampler u" "uniform"
check "plugdisk explore --se" "--seed"
check "plugdisk ex" "explore"
check "plugdisk stats --h" "--help"
check "plugdisk --log-f" "--log-file"
for sub in top stats replay explore; do
	got=$(complete_line "plugdisk $sub -")
	case " $got " in *" --set "* | *" --pidfile "*) fail "plugdisk $sub - offers the daemon's options: $got" ;; esac
	for o in $("$PLUGDISK" "$sub" --help 2>&1 | grep -v '^Exit status:' |
		grep -oE -- '(^|[] ,(\[|])--[a-z][a-z-]*' | sed 's/^[] ,(|[]*//' | sort -u); do
		case " $got " in *" $o "* | *" $o= "*) ;; *) fail "plugdisk $sub - does not offer $o: $got" ;; esac
	done
done
# `make` builds it, as plugdisk(8) FILES says.
[ -f "$bindir/completion/plugdisk" ] || fail "make did not build $bindir/completion/plugdisk"

# The lists are this binary's: every key it knows, every profile, every control command.
keys=$("$PLUGDISK" --list-keys | awk '{ print $1 }' | sort | tr '\n' ' ' | sed 's/ $//')
assert_eq "$(complete_line "plugdisk --set " | tr ' ' '\n' | sed 's/=$//' | sort | tr '\n' ' ' |
	sed 's/ $//')" "$keys" "every key"
n=$("$PLUGDISK" ctl --list-commands | wc -l)
assert_eq "$(complete_line "plugdisk ctl $T/mnt-a " | wc -w)" "$n" "every control command"
for p in $("$PLUGDISK" --list-profiles | grep -E '^[a-z0-9][a-z0-9._-]*$'); do
	[[ " $(complete_line "plugdisk --profile ") " == *" $p "* ]] || fail "profile $p not offered"
done

# uninstall takes it away again.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP" --no-print-directory uninstall \
	DESTDIR="$D" PREFIX=/usr B="$bdir" >>"$T/install.log" 2>&1 || fail "make uninstall failed"
[ -e "$comp" ] && fail "uninstall left the completion"
exit 0
