#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A request wakes one receive thread, not all: with four receive threads and a lone
# synchronous reader (fio, iodepth 1), the daemon makes fewer than 4.5 read, poll and epoll
# calls per request (one read that finds the request and one sleep, 2.1 on a quiet machine,
# up to 3.3 on a busy one, where a thread that has just replied sometimes takes the next
# request from the one woken for it; when every idle thread woke for each request and all but
# one found EAGAIN, it was 7.4). Counted with strace, whose slowness changes no count. On
# io_uring the rings carry the requests and the receive threads stay asleep.
. "$(dirname "$0")/../lib.sh"
require_fuse
require_cmd fio strace

pd_start -s 64M --set mount.threads=4
fio --name=fill --filename="$MNT/disk" --rw=write --bs=1M --size=16M --direct=1 \
	--output="$T/fill.log" >/dev/null 2>&1 || fail "fio fill failed"
strace -f -qq -c -e trace=read,poll,ppoll,epoll_wait,epoll_pwait -o "$T/strace" -p "$PD_PID" &
st_pid=$!
at_cleanup "kill $st_pid 2>/dev/null"
sleep 1 # strace attaches to every thread
r0=$(stat_get read_ios)
fio --name=qd1 --filename="$MNT/disk" --rw=randread --bs=4k --size=16M --direct=1 \
	--ioengine=psync --runtime=3 --time_based --output="$T/fio.log" >/dev/null 2>&1 ||
	fail "fio failed"
r1=$(stat_get read_ios)
sleep 0.5
kill -INT $st_pid
wait $st_pid 2>/dev/null
ios=$((r1 - r0))
[ -f "$T/strace" ] || fail "strace wrote no summary"
# No such call at all (io_uring) leaves the summary without a total line.
calls=$(awk '$NF == "total" {print $(NF - 2)}' "$T/strace")
calls=${calls:-0}
[[ $calls =~ ^[0-9]+$ ]] || { cat "$T/strace" >&2; fail "unreadable strace summary"; }
cat "$T/strace" >&2
log "$ios reads, $calls read/poll/epoll calls by the daemon"
assert_gt "$ios" 1000 "reads done under strace"
per=$(awk -v c="$calls" -v n="$ios" 'BEGIN {printf "%.2f", c / n}')
log "$per calls per request"
awk -v p="$per" 'BEGIN {exit !(p < 4.5)}' || fail "$per read/poll/epoll calls per request, want under 4.5"
pd_stop
