/* SPDX-License-Identifier: MIT */
/* The Linux kernel's dm-log-writes log format (Documentation/admin-guide/device-mapper/
 * log-writes.rst), read into a plugdisk write log and written from one.
 *
 * Layout (integers little-endian): a super block in the first sector { u64 magic
 * 0x6a736677736872, u64 version 1, u64 nr_entries, u32 sectorsize }, then nr_entries
 * entries from byte sectorsize on, each one sector { u64 sector, u64 nr_sectors, u64 flags,
 * u64 data_len } (a MARK: its data_len bytes of text follow in the same sector), zero padded,
 * then, for a write, nr_sectors sectors of data. Sectors are of sectorsize bytes. The kernel
 * logs a write once a flush (or its own FUA) made it durable, just before that flush. */
#ifndef PLUGDISK_DMLOG_H
#define PLUGDISK_DMLOG_H

#include <stdint.h>
#include <stddef.h>

#define DMLOG_MAGIC 0x6a736677736872ull
#define DMLOG_VERSION 1
#define DMLOG_F_FLUSH (1u << 0)
#define DMLOG_F_FUA (1u << 1)
#define DMLOG_F_DISCARD (1u << 2)
#define DMLOG_F_MARK (1u << 3)
#define DMLOG_F_METADATA (1u << 4)
#define DMLOG_ENTRY_HDR 32
#define DMLOG_SECTOR_MIN 512
#define DMLOG_SECTOR_MAX 65536

struct dmlog_summary {
	uint32_t sectorsize;
	uint64_t entries, writes, write_bytes, flushes, fuas, discards, marks;
	uint64_t extent;	/* the end of the furthest write or discard, in bytes */
};

/* Whether @buf (@len bytes) starts with a dm-log-writes super block's magic. */
int dmlog_is(const void *buf, size_t len);

/* Check a whole dm-log-writes log, every field of the super block and of every entry.
 * 0, -EINVAL (@err names the field or the entry and its byte), -EPROTO (another version). */
int dmlog_validate(const uint8_t *buf, uint64_t len, struct dmlog_summary *sum, char *err,
		   size_t errlen);

/* Write the dm log in @buf as a plugdisk write log at @out, for a disk of @disk_size bytes
 * (0: the log's extent). The log is validated first: nothing is written for a bad one.
 * 0, -EINVAL/-EPROTO (@err says why), or -errno. */
int dmlog_to_wlog(const uint8_t *buf, uint64_t len, uint64_t disk_size, const char *out,
		  struct dmlog_summary *sum, char *err, size_t errlen);

/* A log given by the user, as a plugdisk write log to read: the file itself, or a converted
 * copy of a dm-log-writes log (in $TMPDIR, default /var/tmp, unlinked once opened). */
struct dmlog_src {
	char path[4096];	/* what to read */
	int fd;			/* the converted copy's descriptor, or -1 */
	int converted;
	struct dmlog_summary sum;
};

/* Fill @s for @path, converting a dm-log-writes log (disk size @disk_size, 0: its extent).
 * 0, -EINVAL/-EPROTO (@err), or -errno (@err). */
int dmlog_src_open(struct dmlog_src *s, const char *path, uint64_t disk_size, char *err,
		   size_t errlen);
void dmlog_src_close(struct dmlog_src *s);

/* Write the plugdisk write log @wlog_path as a dm-log-writes log at @out with sectors of
 * @sectorsize bytes: a write goes just before the flush that made it durable, as the kernel
 * logs it; writes still pending at the log's end go last. Every record is checked (and
 * aligned to @sectorsize) before @out is created. 0, -EINVAL (@err), or -errno. */
int dmlog_from_wlog(const char *wlog_path, const char *out, uint32_t sectorsize,
		    struct dmlog_summary *sum, char *err, size_t errlen);

#endif
