#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Odd I/O through the mount: unaligned buffered offsets and lengths verify; zero-length I/O
# does nothing; truncate/ftruncate/O_TRUNC fail and change nothing; creating, deleting,
# renaming and linking fail with EPERM or EACCES; stats cannot be made writable; reads of
# stats at odd offsets and lengths agree with one big read.
. "$(dirname "$0")/../lib.sh"
require_fuse
build_helper pdio
P=$T/pdio
S=$((8 << 20))
pd_start -s 8M
D=$MNT/disk

# Unaligned buffered I/O verifies, through the mount and in the image.
assert_eq "$($P "$D" write 1 1 1 write 4095 2 2 write 12345 100001 3 write $((S - 3)) 3 4)" \
	"$(printf '1\n2\n100001\n3')" "unaligned writes"
assert_eq "$($P "$D" verify 1 1 1 verify 4095 2 2 verify 12345 100001 3 verify $((S - 3)) 3 4)" \
	"$(printf '1 ok\n2 ok\n100001 ok\n3 ok')" "unaligned reads"
assert_eq "$($P "$T/disk.img" verify 12345 100001 3)" "100001 ok" "unaligned write in the image"
assert_eq "$($P "$D" zeros 2 4093 zeros 4097 8248)" "$(printf '4093 ok\n8248 ok')" \
	"bytes between unaligned writes untouched"
# O_DIRECT at an unaligned offset: either refused with EINVAL or done correctly.
r=$($P -d "$D" pwrite 777 1000 5)
case $r in
EINVAL) log "O_DIRECT unaligned: EINVAL" ;;
1000) assert_eq "$($P "$D" verify 777 1000 5)" "1000 ok" "O_DIRECT unaligned data" ;;
*) fail "O_DIRECT unaligned pwrite: $r" ;;
esac

# Zero-length I/O succeeds and does nothing, also at and past the end.
before=$(sha_of "$D")
assert_eq "$($P "$D" pwrite 100 0 9 pwrite $S 0 9 pwrite $((S + 4096)) 0 9 pread 0 0 pread $S 0)" \
	"$(printf '0\n0\n0\n0\n0')" "zero-length I/O"
assert_eq "$($P -d "$D" pwrite 4096 0 9 pread 4096 0)" "$(printf '0\n0')" "zero-length O_DIRECT I/O"

# Size changes fail and change nothing.
for len in 0 4096 $((S + 4096)); do
	r=$($P "$D" ftruncate $len)
	case $r in EPERM | EINVAL | EACCES | EOPNOTSUPP | EFBIG) ;; *) fail "ftruncate $len: $r" ;; esac
done
log "ftruncate: $r"
truncate -s 1M "$D" 2>/dev/null && fail "truncate -s 1M succeeded"
truncate -s +1M "$D" 2>/dev/null && fail "truncate -s +1M succeeded"
(: >"$D") 2>/dev/null && log "note: open(O_TRUNC) of disk succeeded"
assert_eq "$(stat -c %s "$D")" $S "disk size after truncates"
assert_eq "$(stat -c %s "$T/disk.img")" $S "image size after truncates"
assert_eq "$(sha_of "$D")" "$before" "disk content after truncates and O_TRUNC"

# The namespace is fixed: EPERM or EACCES for every change.
perm() {	# perm DESC CMD...: CMD fails with "Operation not permitted" or "Permission denied"
	local desc=$1; shift
	if "$@" 2>"$T/err"; then fail "$desc succeeded"; fi
	grep -qE "Operation not permitted|Permission denied" "$T/err" ||
		{ cat "$T/err" >&2; fail "$desc: not EPERM/EACCES"; }
}
perm "create a file" touch "$MNT/new"
perm "create with >" sh -c "echo x >'$MNT/new2'"
perm "mkdir" mkdir "$MNT/dir"
perm "mknod fifo" mkfifo "$MNT/fifo"
perm "unlink disk" rm -f "$MNT/disk"
perm "unlink stats" rm -f "$MNT/stats"
perm "rename disk" mv -T "$MNT/disk" "$MNT/disk2"
perm "rename onto stats" mv -T "$MNT/disk" "$MNT/stats"
perm "hard link" ln "$MNT/disk" "$MNT/disk3"
perm "symlink" ln -s disk "$MNT/sym"
assert_eq "$(ls "$MNT" | sort | tr '\n' ' ')" "control disk stat stats " "directory listing"
assert_eq "$(sha_of "$D")" "$before" "disk content after namespace changes"

# stats: writes other than "reset" fail, and chmod cannot make it writable.
rc=0; (printf 'hello\n' >"$MNT/stats") 2>"$T/err" || rc=$?
[ $rc != 0 ] || fail "writing 'hello' to stats succeeded"
chmod 0666 "$MNT/stats" 2>/dev/null && log "note: chmod 0666 stats succeeded"
rc=0; (printf 'hello\n' >"$MNT/stats") 2>"$T/err" || rc=$?
[ $rc != 0 ] || fail "writing 'hello' to stats after chmod succeeded"
r=$($P -w "$MNT/stats" pwrite 0 10 1)
case $r in EINVAL | EPERM | EACCES | "open EACCES" | "open EPERM") ;; *) fail "pwrite stats: $r" ;; esac
[ "$($P -w "$MNT/stat" pwrite 0 10 1)" = 10 ] && fail "writing stat succeeded"

# Reads of stats and stat at odd offsets and lengths, and past the end.
r=$($P -r "$MNT/stats" statread)
[[ $r =~ ^[0-9]+\ ok$ ]] || fail "stats statread: $r"
[ "${r% ok}" -gt 200 ] || fail "stats only ${r% ok} bytes"
assert_eq "$($P -r "$MNT/stats" pread 100000000 4096 pread 0 1)" "$(printf '0\n1')" "stats read past end"
r=$($P -r "$MNT/stat" statread)
[[ $r =~ ^[0-9]+\ ok$ ]] || fail "stat statread: $r"
assert_eq "$(wc -w <"$MNT/stat")" 17 "fields in stat"
grep -q . "$MNT/stats" || fail "stats reads empty with grep"
assert_identities
pd_stop
assert_eq "$(sha_of "$T/disk.img")" "$before" "image after the daemon stopped"
