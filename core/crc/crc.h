/* SPDX-License-Identifier: MIT */
/* The crc stage: a checksum per block, kept in a side file, and a read whose data does not
 * match it fails with EIO. For testing a stack under silent corruption: a bit flipped in the
 * image behind the daemon's back, or by a corrupting fault below this stage, is seen by the
 * next read of its block instead of reaching the application.
 *
 * The side file holds one 8-byte entry per block of the disk, at 8 * block number: the
 * block's CRC-32 in the low half and bit 32 set when it is known. A write records the
 * checksum of every whole block it covers once the stage below has written it; a block it
 * covers in part, and a discarded block, becomes unknown, and an unknown block is never
 * refused. A read checks the whole blocks it covers. A read that races a write of the same
 * block may see the block's old data against its new checksum, and fail: the stage is for
 * tests that do not read what they are writing. */
#ifndef PLUGDISK_CRC_H
#define PLUGDISK_CRC_H

#include <stdint.h>

/* crc.*: filled in by conf/ (or by tests). */
struct crc_params {
	char *file;		/* crc.file: the side file ("" = the stage cannot run) */
	uint32_t block_size;	/* crc.block_size: bytes per checksum, a power of two */
};

#define CRC_DEFAULT_BLOCK_SIZE 4096u

/* CRC-32 (IEEE 802.3, reflected, as zlib's crc32()) of @len bytes at @p, continuing @crc
 * (0 to start). */
uint32_t crc32_update(uint32_t crc, const void *p, uint64_t len);

#endif
