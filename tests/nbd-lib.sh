# SPDX-License-Identifier: MIT
# Helpers for the NBD backend's mount tests: NBD servers (nbdkit, qemu-nbd) on a Unix socket
# or on 127.0.0.1, started and stopped by PID, cleaned up by lib.sh's trap. Source it after
# lib.sh:  . "$(dirname "$0")/../nbd-lib.sh"

_nbd_pids=()
at_cleanup '_nbd_stop_all'
_nbd_stop_all() {
	# Filesystems, loop devices and plugdisk first, while the server is still up (plugdisk
	# flushes at exit), then the servers.
	_pd_release
	_pd_term "${_nbd_pids[@]}"
}

require_nbd() { require_cmd nbdkit; }

# nbd_free_port: print a TCP port on 127.0.0.1 that nothing listens on.
nbd_free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 30000))
		ss -Hltn "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return 0; }
	done
	fail "no free TCP port"
}

# _nbd_started NAME TEST-OP PATH: the server NAME was just started as a background job:
# track it for cleanup, set NBD_PID, and wait (deadline 10 s) until `test TEST-OP PATH` holds
# (its pid file written, its socket made); fail with $T/NAME.log if it exits first.
_nbd_started() {
	local name=$1 op=$2 path=$3 i
	NBD_PID=$!
	_nbd_pids+=("$NBD_PID")
	for i in $(seq 200); do
		test "$op" "$path" && return 0
		kill -0 "$NBD_PID" 2>/dev/null || { cat "$T/$name.log" >&2; fail "$name exited"; }
		sleep 0.05
	done
	fail "$name did not start within 10 s"
}

# nbdkit_start unix|tcp [nbdkit args: filters, plugin, params]: start nbdkit in the
# foreground (background job) on $T/nbd.sock or a free port of 127.0.0.1; wait until it
# listens. Sets NBD_PID and NBD_URI. Restarting with the same transport reuses the address.
nbdkit_start() {
	local tr=$1; shift
	rm -f "$T/nbdkit.pid"
	if [ "$tr" = unix ]; then
		NBD_URI="nbd+unix:///?socket=$T/nbd.sock"
		rm -f "$T/nbd.sock" # left behind by a killed server
		nbdkit -f -U "$T/nbd.sock" -P "$T/nbdkit.pid" "$@" >>"$T/nbdkit.log" 2>&1 &
	else
		[ -n "${NBD_PORT:-}" ] || NBD_PORT=$(nbd_free_port)
		NBD_URI="nbd://127.0.0.1:$NBD_PORT/"
		nbdkit -f -i 127.0.0.1 -p "$NBD_PORT" -P "$T/nbdkit.pid" "$@" >>"$T/nbdkit.log" 2>&1 &
	fi
	_nbd_started nbdkit -s "$T/nbdkit.pid"
}

# nbd_kill [PID]: kill the server with SIGKILL and reap it.
nbd_kill() {
	local p=${1:-$NBD_PID}
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
}

# qemu_nbd_start IMAGE [qemu-nbd args]: export IMAGE with qemu-nbd on $T/qnbd.sock (as a
# background job; cache=none so that acknowledged writes are in the image file only after
# flush is meaningless here, and writes go to the file). Sets NBD_PID and NBD_URI.
qemu_nbd_start() {
	local img=$1; shift
	require_cmd qemu-nbd
	NBD_URI="nbd+unix:///?socket=$T/qnbd.sock"
	qemu-nbd --persistent --socket="$T/qnbd.sock" "$@" "$img" >>"$T/qemu-nbd.log" 2>&1 &
	_nbd_started qemu-nbd -S "$T/qnbd.sock"
}
