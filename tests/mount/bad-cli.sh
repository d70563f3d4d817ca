#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad command lines: each gets a clear message and its documented exit status (2 option,
# 3 image, 4 mountpoint), and nothing on disk changes: the existing image keeps its checksum,
# no image is created, no mount is left.
. "$(dirname "$0")/../lib.sh"
require_fuse
# timeout: a daemon that wrongly accepts its arguments would otherwise run on in -f mode.
PD=(timeout -k 5 15 "$PLUGDISK")

mkdir "$T/cwd" "$T/m2"
cd "$T/cwd" || fail "cd"
head -c 1M /dev/urandom >"$T/img"
sum=$(sha_of "$T/img")
mtime=$(stat -c %Y.%y "$T/img")

# unchanged: the image is intact, the scratch cwd is empty (no default plugdisk.img
# created), and nothing is mounted on the mountpoints.
unchanged() {
	assert_eq "$(sha_of "$T/img")" "$sum" "$1: image changed"
	assert_eq "$(stat -c %Y.%y "$T/img")" "$mtime" "$1: image mtime changed"
	assert_eq "$(ls -A "$T/cwd")" "" "$1: files created in the working directory"
	mountpoint -q "$MNT" && fail "$1: left a mount on $MNT"
	mountpoint -q "$T/m2" && fail "$1: left a mount on $T/m2"
	return 0
}
# case_ STATUS DESC PATTERN ARGS...: exit STATUS, message matching PATTERN (grep -E -i).
case_() {
	local want=$1 desc=$2 pat=$3; shift 3
	expect_exit "$want" "${PD[@]}" "$@"
	grep -qEi -- "$pat" "$T/out" || { cat "$T/out" >&2; fail "$desc: message lacks '$pat'"; }
	grep -q "error: " "$T/out" && { cat "$T/out" >&2; fail "$desc: a stray 'error: '"; }
	unchanged "$desc"
	log "ok: $desc ($want): $(head -n1 "$T/out")"
}

# Options and arguments. Every message starts "plugdisk: ", not with the path the binary was
# started by, and none carries a log level's "error: ".
case_ 2 "unknown option" "^plugdisk: unrecognized option '--bogus'" --bogus -i "$T/img" -s 1M "$MNT"
case_ 2 "unknown short option" "^plugdisk: invalid option -- 'Z'" -f -Z -i "$T/img" -s 1M "$MNT"
case_ 2 "missing mountpoint" "mountpoint" -f -i "$T/img" -s 1M
case_ 2 "extra argument" "extra" -f -i "$T/img" -s 1M "$MNT" extra
case_ 2 "option without its value" "requires an argument|-i" -f -s 1M "$MNT" -i
case_ 2 "size 0" "disk.size" -f -i "$T/new.img" -s 0 "$MNT"
case_ 2 "size not a multiple of 512" "512" -f -i "$T/new.img" -s 1000 "$MNT"
case_ 2 "size not a number" "disk.size" -f -i "$T/new.img" -s 12Q "$MNT"
case_ 2 "--set unknown key" "nokey" -f -i "$T/img" -s 1M --set nokey=1 "$MNT"
case_ 2 "--set without =" "queue.plug" -f -i "$T/img" -s 1M --set queue.plug "$MNT"
case_ 2 "--set out of range" "queue.nomerges" -f -i "$T/img" -s 1M --set queue.nomerges=3 "$MNT"
case_ 2 "--set wrong type" "controller.iops" -f -i "$T/img" -s 1M --set controller.iops=abc "$MNT"
# A refused value names the option as it was typed, not the key's --set spelling.
case_ 2 "-s names -s" "^plugdisk: -s 1000: disk\.size: .*512" -f -i "$T/new.img" -s 1000 "$MNT"
case_ 2 "--size names --size" "^plugdisk: --size 1000: disk\.size: .*512" \
	-f -i "$T/new.img" --size 1000 "$MNT"
case_ 2 "--size= names --size" "^plugdisk: --size 12Q: disk\.size: not a size" \
	-f -i "$T/new.img" --size=12Q "$MNT"
case_ 2 "-i names -i" "^plugdisk: -i '': disk\.image: must not be empty" -f -i "" -s 1M "$MNT"
case_ 2 "--image names --image" "^plugdisk: --image '': disk\.image: must not be empty" \
	-f --image= -s 1M "$MNT"
case_ 2 "-o names -o" "^plugdisk: -o .*: mount\.options: must not hold control" \
	-f -i "$T/img" -s 1M -o "$(printf 'ro\001')" "$MNT"
case_ 2 "--options names --options" "^plugdisk: --options .*: mount\.options: must not hold" \
	-f -i "$T/img" -s 1M --options="$(printf 'ro\001')" "$MNT"
case_ 2 "--set still names --set" "^plugdisk: --set disk\.size=1000: disk\.size: .*512" \
	-f -i "$T/new.img" --set disk.size=1000 "$MNT"
# A key spelt wrong names the nearest one.
case_ 2 "--set typo suggests" "controller\.latecy_us: unknown key \(did you mean controller\.latency_us\?\)" \
	-f -i "$T/img" -s 1M --set controller.latecy_us=5 "$MNT"
case_ 2 "--set group typo suggests" "did you mean controller\.latency_us\?" \
	-f -i "$T/img" -s 1M --set controler.latency_us=5 "$MNT"
case_ 2 "--set far from any key" "xyzzy: unknown key$" -f -i "$T/img" -s 1M --set xyzzy=5 "$MNT"
# disk.image: a URI of another scheme, or an NBD URI mistyped, is refused, not made a file.
case_ 2 "NBD:// upper case" "^plugdisk: -i NBD://h/x: disk\.image: .*not an NBD URI" \
	-f -i NBD://h/x -s 1M "$MNT"
case_ 2 "nbd:/ one slash" "^plugdisk: -i nbd:/x: disk\.image: .*not an NBD URI" -f -i nbd:/x -s 1M "$MNT"
case_ 2 "http://" "^plugdisk: -i http://h/x: disk\.image: unknown URI scheme \"http:\"" \
	-f -i http://h/x -s 1M "$MNT"
case_ 2 "nbd+unx://" "unknown NBD transport" -f -i "nbd+unx:///?socket=/s" -s 1M "$MNT"
[ -e "$T/cwd/http:" ] || [ -e "$T/cwd/NBD:" ] || [ -e "$T/cwd/nbd:" ] &&
	fail "a URI became a directory"
[ -e "$T/new.img" ] && fail "an image was created by a refused command line"
# An NBD server that is not there: the message names disk.image and the address, not the
# libnbd call that failed. (Port 1: nothing listens on it.)
case_ 3 "NBD server not there" "^plugdisk: disk\.image nbd://127\.0\.0\.1:1/x: cannot connect: .*refused" \
	-f -i nbd://127.0.0.1:1/x "$MNT"
grep -q "nbd_" "$T/out" && fail "the NBD message names a libnbd function: $(cat "$T/out")"

# Mountpoints.
touch "$T/file"
case_ 4 "mountpoint missing" "nope" -f -i "$T/img" -s 1M "$T/nope"
case_ 4 "mountpoint not a directory" "$T/file" -f -i "$T/img" -s 1M "$T/file"
[ -e "$T/nope" ] && fail "the missing mountpoint was created"

# Images.
mkdir "$T/imgdir"
ln -s "$T/img" "$T/link.img"
case_ 3 "image in a missing directory" "nodir" -f -i "$T/nodir/x.img" -s 1M "$MNT"
case_ 3 "image is a directory" "imgdir" -f -i "$T/imgdir" -s 1M "$MNT"
case_ 3 "image is a symlink" "link.img" -f -i "$T/link.img" -s 1M "$MNT"
case_ 3 "image of another size" "(1048576|1M|1 MiB).*(2097152|2M|2 MiB)|(2097152|2M|2 MiB).*(1048576|1M|1 MiB)" \
	-f -i "$T/img" -s 2M "$MNT"
[ -e "$T/nodir" ] && fail "the image's missing directory was created"

# An image on a read-only filesystem (root can write any mode, so use a read-only mount),
# and a new image larger than its filesystem.
mkdir "$T/ro" "$T/small"
mount -t tmpfs -o size=4M tmpfs "$T/ro" || fail "mount tmpfs"
track_mount "$T/ro"
cp "$T/img" "$T/ro/img"
mount -o remount,ro "$T/ro" || fail "remount ro"
case_ 3 "image unwritable (read-only fs)" "read-only|ro/img" -f -i "$T/ro/img" -s 1M "$MNT"
case_ 3 "new image on a read-only fs" "read-only|ro/new" -f -i "$T/ro/new.img" -s 1M "$MNT"
assert_eq "$(sha_of "$T/ro/img")" "$sum" "image on the read-only fs"
mount -t tmpfs -o size=4M tmpfs "$T/small" || fail "mount tmpfs"
track_mount "$T/small"
case_ 3 "size larger than the backing filesystem" "small/big.img|size|space" \
	-f -i "$T/small/big.img" -s 8M "$MNT"
[ -e "$T/small/big.img" ] && fail "an image larger than its filesystem was left behind"

# Two daemons on one image; a second daemon on a mounted mountpoint.
pd_start -i "$T/img" -s 1M
first=$PD_PID
expect_exit 3 "${PD[@]}" -f -i "$T/img" -s 1M "$T/m2"
grep -qEi "lock|in use|busy" "$T/out" || { cat "$T/out" >&2; fail "second daemon: message lacks lock"; }
mountpoint -q "$T/m2" && fail "second daemon on one image mounted"
log "ok: two daemons on one image (3): $(head -n1 "$T/out")"
head -c 1M /dev/urandom >"$T/img2"
expect_exit 4 "${PD[@]}" -f -i "$T/img2" -s 1M "$MNT"
grep -qEi "mounted|busy" "$T/out" || { cat "$T/out" >&2; fail "already mounted: message"; }
log "ok: mountpoint already mounted (4): $(head -n1 "$T/out")"
kill -0 "$first" || fail "the first daemon died"
[ "$(stat_get disk_size_bytes)" = $((1 << 20)) ] || fail "first mount no longer answers"
pd_stop "$first"
unchanged "after the first daemon stopped"

# Sizes, durations and words as people write them; --dump-config prints what they mean.
expect_exit 0 "$PLUGDISK" --dump-config -i "$T/new.img" -s 1.5G --set controller.latency_us=2ms \
	--set "controller.read_latency_us=1.5 ms" --set cache.flush=honor \
	--set controller.bandwidth=100MB/s --set queue.max_request_size=1MiB
for want in 'size = "1536M";' 'latency_us = 2000;' 'read_latency_us = 1500;' \
	'flush = "honour";' 'bandwidth = 100000000;' 'max_request_size = "1M";'; do
	grep -qF "	$want" "$T/out" || { cat "$T/out" >&2; fail "--dump-config lacks '$want'"; }
done
case_ 2 "a duration not whole" "controller\.latency_us: \"1500ns\" is not a whole number of microseconds" \
	-f -i "$T/img" --set controller.latency_us=1500ns "$MNT"
case_ 2 "a fraction of a byte" "^plugdisk: -s 0\.3K: disk\.size: not a size" -f -i "$T/new.img" -s 0.3K "$MNT"
case_ 2 "size 0 reads cleanly" "^plugdisk: -s 0: disk\.size: must be between 512 and 1E \(got 0\)$" \
	-f -i "$T/new.img" -s 0 "$MNT"
[ -e "$T/new.img" ] && fail "an image was created by --dump-config or a refused size"

# --help and --version succeed.
expect_exit 0 "$PLUGDISK" --help
grep -q "MOUNTPOINT" "$T/out" || fail "--help shows no usage"
expect_exit 0 "$PLUGDISK" --version
grep -qE "[0-9]+\.[0-9]+" "$T/out" || fail "--version shows no version"
