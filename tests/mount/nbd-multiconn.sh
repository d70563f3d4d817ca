#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Multi-conn: a server that advertises it (nbdkit's memory plugin) gets two connections per
# online CPU (at most 4) by default and controller.connections when set; with several, commands
# go out on more than one of them (nbdkit's log filter numbers the connections); a server that
# does not (the multi-conn filter's disable mode) gets one, with a warning when more were asked
# for. Data verifies.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../nbd-lib.sh"
require_fuse
require_nbd
require_cmd fio
cd "$T" || fail "cd $T"

nbdkit_start unix --filter=log memory 16M logfile="$T/log1"
pd_start -i "$NBD_URI" -s 16M
assert_eq "$(stat_get nbd_can_multi_conn)" 1 "the memory plugin advertises multi-conn"
want=$(($(getconf _NPROCESSORS_ONLN) * 2))
[ "$want" -le 4 ] || want=4
assert_eq "$(stat_get nbd_connections)" "$want" "default connections (two per CPU, at most 4)"
assert_eq "$(stat_get nbd_connections_up)" "$want" "connections up"
pd_stop
pd_start -i "$NBD_URI" -s 16M --set controller.connections=4
assert_eq "$(stat_get nbd_connections_up)" 4 "controller.connections=4: connections up"
fio_verify "$MNT/disk" mc randwrite 8M 32 --fsync=16
used=$(grep -oE 'connection=[0-9]+ (Write|Read)' "$T/log1" | cut -d' ' -f1 | sort -u | wc -l)
log "commands went out on $used connections"
assert_gt "$used" 1 "connections that carried commands"
grep -q 'Flush id=' "$T/log1" || fail "no Flush reached the server"
pd_stop
pd_start -i "$NBD_URI" -s 16M --set controller.connections=2
assert_eq "$(stat_get nbd_connections)" 2 "controller.connections=2"
pd_stop
nbd_kill

nbdkit_start unix --filter=multi-conn memory 16M multi-conn-mode=disable
pd_start -i "$NBD_URI" -s 16M --set controller.connections=3
assert_eq "$(stat_get nbd_can_multi_conn)" 0 "multi-conn hidden"
assert_eq "$(stat_get nbd_connections)" 1 "one connection without multi-conn"
grep -q 'does not advertise multi-conn' "$T/daemon.log" || fail "no warning about controller.connections"
fio_verify "$MNT/disk" single randwrite 8M 32
pd_stop
log "ok"
