# SPDX-License-Identifier: MIT
# Helpers shared by the crash and power-cut cycles (crash.sh, powercut.sh): the writer and
# verifier, seeded random choices, the writer's deadline, and lib.sh's cleanup lists kept to
# the one daemon and the one loop device alive at a time. Source it after lib.sh, once RANDOM
# is seeded:  . "$TESTS_DIR/crash/cycle-lib.sh"
# The failure messages name the caller's current cycle, $cycle.

# The writer/verifier: from the build (make passes CRASHTOOL or BUILD), else compiled here.
CT=${CRASHTOOL:-${BUILD:-$TOP/build}/tests/crash/crashtool}
if [ ! -x "$CT" ]; then
	CT=$T/crashtool
	${CC:-cc} -O2 -pthread -o "$CT" "$TESTS_DIR/crash/crashtool.c" || fail "cannot build crashtool"
fi

rand() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }		# rand LO HI
pick() { shift $((RANDOM % $#)); echo "$1"; }			# pick WORD...
sleep_ms() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

# Only one daemon and one loop device live at a time: once gone, drop them from lib.sh's
# cleanup lists so that a recycled PID or loop number is never touched.
forget_daemon() { _pd_pids=(); }
forget_loop() { _pd_loops=(); }
# attach_loop FILE [losetup options]: like lib.sh's loop_attach, but sets DEV in this shell, so
# that the cleanup list really holds the device (a $(...) subshell would lose it).
attach_loop() {
	local f=$1; shift
	DEV=$(losetup -f --show "$@" "$f") || fail "cycle $cycle: losetup $f failed"
	_pd_loops+=("$DEV")
}

# wait_writer PID EVENT: the writer must stop within 60 s of EVENT (the crash, the power cut),
# with status 0 (finished) or 3 (I/O error after EVENT). Anything else is a harness failure;
# a hang is reported with where the writer is blocked.
wait_writer() {
	local pid=$1 event=$2 rc=0
	if ! pid_gone_within 60 "$pid"; then
		ps -o pid,stat,wchan:32,cmd -p "$pid" >&2 || true
		kill -KILL "$pid" 2>/dev/null
		fail "cycle $cycle: writer still blocked 60 s after $event"
	fi
	wait "$pid" || rc=$?
	case $rc in 0 | 3) ;; *) cat "$T/writer.log" >&2; fail "cycle $cycle: writer exited with status $rc" ;; esac
}
