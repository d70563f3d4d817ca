# SPDX-License-Identifier: MIT
# Helpers of the tests of `plugdisk replay` over a cache.log of steps of 256 KiB, step J in
# region J-1 of the disk from $T/pJ. Source it after lib.sh:  . "$(dirname "$0")/../replay-lib.sh"

# zero N: N zero bytes.
zero() { head -c "$1" /dev/zero; }
# region IMG N: region N of IMG (256 KiB each).
region() { dd if="$1" bs=256K skip="$2" count=1 status=none; }

# replay_flush_has N STEPS: `plugdisk replay --flush N` of $T/w.log rebuilds $T/r.img with
# each step J of 1 to 4 in its region when J is in the list STEPS, and zeroes there when not.
replay_flush_has() {
	local n=$1 steps=" $2 " j
	rm -f "$T/r.img"
	"$PLUGDISK" replay "$T/w.log" "$T/r.img" --flush "$n" >/dev/null 2>"$T/err" ||
		{ cat "$T/err" >&2; fail "replay --flush $n failed"; }
	for j in 1 2 3 4; do
		if [[ $steps == *" $j "* ]]; then
			cmp -s <(region "$T/r.img" $((j - 1))) "$T/p$j" ||
				fail "--flush $n: step $j missing"
		else
			cmp -s <(region "$T/r.img" $((j - 1))) <(zero 256K) ||
				fail "--flush $n: step $j present"
		fi
	done
}
