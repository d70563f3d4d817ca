# SPDX-License-Identifier: MIT
# Write logs (cache.log, doc/replay.md) made byte by byte, for tests of what plugdisk's log
# readers accept. Source it after lib.sh:  . "$(dirname "$0")/../wlog-lib.sh"

# wlog_hdr VERSION UNIT DISK_SIZE [END]: the 32-byte header on stdout.
wlog_hdr() { perl -e 'print pack("a8 V V Q< Q<", "PDWLOG01", @ARGV)' "$1" "$2" "$3" "${4:-0}"; }

# wlog_rec TYPE EPOCH OFFSET LEN [FLAGS]: a 32-byte record header on stdout (a write's data
# and a mark's text follow it, padded to 8 bytes: wlog_data).
wlog_rec() { perl -e 'print pack("V V Q< Q< Q<", $ARGV[0], $ARGV[4], @ARGV[1..3])' "$1" "$2" "$3" "$4" "${5:-0}"; }

# wlog_data LEN BYTE: LEN bytes of BYTE (two hex digits), padded with zeros to 8.
wlog_data() {
	perl -e 'my $d = chr(hex($ARGV[1])) x $ARGV[0]; print $d, "\0" x ((8 - $ARGV[0] % 8) % 8)' "$1" "$2"
}
