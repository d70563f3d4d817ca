/* SPDX-License-Identifier: MIT */
/* The write cache's log (cache.log): every write that completed into the cache, every flush
 * that completed, and power cuts, in completion order, for `plugdisk replay`.
 *
 * Format (all integers little-endian, as this machine writes them):
 *   header, 32 bytes: magic "PDWLOG01", u32 version (2), u32 atomic_write, u64 disk_size,
 *                     u64 reserved (0);
 *   then records, each a 32-byte header { u32 type, u32 reserved, u64 epoch, u64 offset,
 *   u64 len } followed, for a write only, by its len bytes of data padded with zeros to a
 *   multiple of 8:
 *     WRITE   (1) a write completed into the cache; epoch: its flush epoch;
 *     FLUSH   (2) a flush completed: every write of an epoch <= epoch is durable;
 *     DISCARD (3) a discard completed (offset, len); epoch: the open epoch then;
 *     CUT     (4) a power cut; what follows belongs to the next power-on period;
 *     FLUSH_FAILED (5, version 2) a flush that closed epoch `epoch` failed: it made nothing
 *             durable, and a later FLUSH covers that epoch's writes.
 *     MARK    (6, version 2) a mark (the control file's "mark TEXT"): len bytes of text
 *             follow, as a write's data; epoch: the open epoch then.
 * A FLUSH with WLOG_F_IGNORED in reserved completed under cache.flush = ignore: the host saw
 * it complete, but it made nothing durable.
 * Flush N is the N-th FLUSH record: every write of an epoch up to the largest epoch of the
 * first N FLUSH records is durable then (concurrent flushes may complete out of epoch
 * order). Version 1 logs, without FLUSH_FAILED or MARK records, read the same way. A torn
 * last record (the daemon died while writing it) is ignored by the reader. */
#ifndef PLUGDISK_WLOG_H
#define PLUGDISK_WLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum wlog_type {
	WLOG_WRITE = 1,
	WLOG_FLUSH = 2,
	WLOG_DISCARD = 3,
	WLOG_CUT = 4,
	WLOG_FLUSH_FAILED = 5,
	WLOG_MARK = 6,
};

/* Flags in a record's reserved field. */
#define WLOG_F_IGNORED 1u

/* Longest mark text. */
#define WLOG_MARK_MAX 1024

#define WLOG_MAGIC "PDWLOG01"
#define WLOG_VERSION 2		/* written; versions 1..WLOG_VERSION are read */

struct wlog_hdr {
	char magic[8];
	uint32_t version;
	uint32_t atomic_write;
	uint64_t disk_size;
	uint64_t reserved;
};

struct wlog_rec {
	uint32_t type;
	uint32_t reserved;
	uint64_t epoch;
	uint64_t offset;
	uint64_t len;
};

struct wlog {
	int fd;
	char *path;
	int error;	/* the first write error (-errno); logging stops after it */
	uint64_t size;	/* bytes written: where the next record goes */
};

/* Create (truncate) @path and write the header. 0 or -errno (logged). */
int wlog_open(struct wlog *l, const char *path, uint64_t disk_size, uint32_t atomic_write);

/* Append one record (and @data for a write). Errors are logged once and stop the log.
 * The caller serialises calls (the cache's lock), so records are in completion order. */
void wlog_append(struct wlog *l, enum wlog_type type, uint64_t epoch, uint64_t offset,
		 uint64_t len, const void *data);

/* As wlog_append, with @flags in the record's reserved field; a MARK carries @data too. */
void wlog_append_flags(struct wlog *l, enum wlog_type type, uint32_t flags, uint64_t epoch,
		       uint64_t offset, uint64_t len, const void *data);

void wlog_close(struct wlog *l);

/* Reading. */
struct wlog_reader {
	FILE *f;
	struct wlog_hdr hdr;
	uint8_t *buf;	/* the last write's (or mark's) data, unless skip_data */
	size_t cap;
	bool skip_data;	/* wlog_next seeks over write data instead of reading it */
	uint64_t pos;	/* file offset of the next record */
	uint64_t size;	/* the file's size when opened */
	uint64_t data_pos;	/* file offset of the last write's (or mark's) data */
};

/* Open @path and check the header. 0, -EINVAL (not a log), -EPROTO (a version this reader
 * does not know; r->hdr.version says which), or -errno. */
int wlog_reader_open(struct wlog_reader *r, const char *path);

/* The next record into @rec (its data, for a write or a mark, in r->buf, unless
 * r->skip_data; its file offset in r->data_pos either way). 1, 0 at the end (or at a torn
 * last record), -ENOMEM, or -EINVAL for a record that makes no sense. */
int wlog_next(struct wlog_reader *r, struct wlog_rec *rec);

/* Back to the first record. 0 or -errno. */
int wlog_reader_rewind(struct wlog_reader *r);

void wlog_reader_close(struct wlog_reader *r);

#endif
