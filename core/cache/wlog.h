/* SPDX-License-Identifier: MIT */
/* The write cache's log (cache.log): every write that completed into the cache, every flush
 * that completed, and power cuts, in completion order, for `plugdisk replay`.
 *
 * Format (all integers little-endian, as this machine writes them):
 *   header, 32 bytes: magic "PDWLOG01", u32 version (2, or 3 once a record of version 3
 *                     is in it), u32 atomic_write (a power of two, 512..16384), u64
 *                     disk_size (> 0), u64 end (0, or where a write error cut the log
 *                     short: no record starts at or after it);
 *   then records, each a 32-byte header { u32 type, u32 reserved, u64 epoch, u64 offset,
 *   u64 len } followed, for a write only, by its len bytes of data padded with zeros to a
 *   multiple of 8:
 *     WRITE   (1) a write completed into the cache; epoch: its flush epoch;
 *     FLUSH   (2) a flush completed: every write of an epoch <= epoch is durable;
 *     DISCARD (3) a discard sent down (offset, len) once every write before it reached
 *             the image; a write that completes while it is in flight follows it; epoch:
 *             the open epoch then;
 *     CUT     (4) a power cut; what follows belongs to the next power-on period;
 *     FLUSH_FAILED (5, version 2) a flush that closed epoch `epoch` failed: it made nothing
 *             durable, and a later FLUSH covers that epoch's writes.
 *     MARK    (6, version 2) a mark (the control file's "mark TEXT"): len bytes of text
 *             follow, as a write's data; epoch: the open epoch then.
 *     ATOMIC  (7, version 3) the atomic write unit changed (a reload): len is the new unit,
 *             at which a cut tears the writes logged after it (those before it keep the
 *             unit they were cached under); epoch: the open epoch then.
 * Every field is checked by one validator (wlog_validate*) before a reader acts on the log:
 * a write or a discard of 1..2^32 (a discard: any length > 0) bytes inside the disk, epochs
 * of writes and discards that never go back, the fields a record does not use zero.
 * A FLUSH with WLOG_F_IGNORED in reserved completed under cache.flush = ignore: the host saw
 * it complete, but it made nothing durable.
 * Flush N is the N-th FLUSH record: every write of an epoch up to the largest epoch of the
 * first N FLUSH records is durable then (concurrent flushes may complete out of epoch
 * order). Version 1 logs, without FLUSH_FAILED or MARK records, read the same way. A torn
 * last record (the daemon died while writing it) is ignored by the reader.
 *
 * A log cut short: when a write to the log fails (ENOSPC, EIO), logging stops, the file is
 * cut back to its last whole record and the header's end is set to that byte, by a pwrite
 * over the header's own bytes: it needs no new block, so it works on a full filesystem. A
 * header that could not be rewritten then is rewritten at close. end was zero in every log
 * written before it meant this (and zero still means "whole"), so the field needs no new
 * version: old logs read as whole, and a nonzero end outside the file is refused as any bad
 * field is. Readers count the records before end and say that the log is cut short after
 * record N: the writes that completed after it are in no log, so no state past it is known.
 * The error itself is named in the daemon's log only: the header has no room for it, and a
 * longer header would make every reader before it refuse every log. */
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
	WLOG_ATOMIC = 7,
};

/* Flags in a record's reserved field. */
#define WLOG_F_IGNORED 1u

/* Longest mark text. */
#define WLOG_MARK_MAX 1024

#define WLOG_MAGIC "PDWLOG01"
#define WLOG_VERSION 3		/* the newest; versions 1..WLOG_VERSION are read */
#define WLOG_VERSION_BASE 2	/* written at open; raised in place by a newer record */
#define WLOG_ATOMIC_MIN 512
#define WLOG_ATOMIC_MAX 16384
#define WLOG_WRITE_MAX (1ull << 32)	/* longest write record */

struct wlog_hdr {
	char magic[8];
	uint32_t version;
	uint32_t atomic_write;
	uint64_t disk_size;
	uint64_t end;		/* 0, or where a write error cut the log short */
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
	uint32_t version;	/* the header's version now */
	uint64_t lost;	/* records not written since the write error */
	bool end_unsaved;	/* the header's end could not be written: retried at close */
};

/* Create (truncate) @path and write the header. 0 or -errno (logged). */
int wlog_open(struct wlog *l, const char *path, uint64_t disk_size, uint32_t atomic_write);

/* Append one record (and @data for a write). Errors are logged once and stop the log: the
 * file is cut back to its last whole record and the header's end says so (readers report the
 * log as cut short). The caller serialises calls (the cache's lock), so records are in
 * completion order. An ATOMIC record raises the header's version to 3. */
void wlog_append(struct wlog *l, enum wlog_type type, uint64_t epoch, uint64_t offset,
		 uint64_t len, const void *data);

/* As wlog_append, with @flags in the record's reserved field; a MARK carries @data too. */
void wlog_append_flags(struct wlog *l, enum wlog_type type, uint32_t flags, uint64_t epoch,
		       uint64_t offset, uint64_t len, const void *data);

/* Close the log; a header that could not say that the log was cut short is rewritten now. */
void wlog_close(struct wlog *l);

/* A record type's name, for messages ("record" for an unknown one). */
const char *wlog_type_name(uint32_t type);

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
	uint64_t rec_pos;	/* file offset of the last record */
	uint64_t nrec;		/* records read (the last one is record nrec, from 1) */
	char why[96];		/* after -EINVAL from wlog_next: what is wrong with it */
	uint8_t *skip_buf;	/* where short data that skip_data skips is read */
};

/* Open @path and check the header. 0, -EINVAL (not a log, or a bad header field: r->why
 * says which), -EPROTO (a version this reader does not know; r->hdr.version says which),
 * or -errno. */
int wlog_reader_open(struct wlog_reader *r, const char *path);

/* As wlog_reader_open, over @f (the reader owns it from here) of @size bytes. */
int wlog_reader_open_file(struct wlog_reader *r, FILE *f, uint64_t size);

/* The next record into @rec (its data, for a write or a mark, in r->buf, unless
 * r->skip_data for a write; its file offset in r->data_pos either way). 1, 0 at the end
 * (or at a torn last record, or at the header's end), -ENOMEM, or -EINVAL for a record
 * that makes no sense by itself (r->why says why). Epoch order is wlog_validate's. */
int wlog_next(struct wlog_reader *r, struct wlog_rec *rec);

/* Read @len bytes of the last write's data from @off into it, into @buf (for a reader
 * with skip_data). 0, -EIO for a short file, or -errno. */
int wlog_read_data(struct wlog_reader *r, uint64_t off, void *buf, size_t len);

/* What a whole log holds, as wlog_validate found it. */
struct wlog_summary {
	struct wlog_hdr hdr;
	uint64_t records, writes, write_bytes, flushes, discards, marks;
	uint64_t end;		/* the byte after the last whole record read */
	uint64_t cut_short;	/* 0, or where a write error cut the log short (hdr.end), when
				 * what is read reaches it (no power cut before it) */
	uint64_t cut_short_after;	/* with cut_short: the records before it (the last
					 * one logged is record cut_short_after, from 1) */
	bool cut;		/* stopped at the first power cut, which ends what is read */
	bool torn;		/* a torn last record was left out */
};

/* The one check of a write log, for every reader (replay, explore, and any to come): the
 * header and every record up to the first power cut, before anything acts on it. 0; -EINVAL
 * with @err naming the header field or the record (its number from 1 and its byte); -EPROTO
 * (a version this reader does not know); -ENOMEM or -errno. @sum may be NULL.
 * wlog_validate_buf is the entry point for fuzzing (tests/fuzz/). */
int wlog_validate(struct wlog_reader *r, struct wlog_summary *sum, char *err, size_t errlen);
int wlog_validate_path(const char *path, struct wlog_summary *sum, char *err, size_t errlen);
int wlog_validate_buf(const void *buf, size_t len, struct wlog_summary *sum, char *err,
		      size_t errlen);

/* The words every reader says of a log cut short after record @after, at byte @at, into
 * @buf: "the log is cut short after record N ...". */
void wlog_cut_short_text(char *buf, size_t len, uint64_t after, uint64_t at);

/* Back to the first record. 0 or -errno. */
int wlog_reader_rewind(struct wlog_reader *r);

void wlog_reader_close(struct wlog_reader *r);

#endif
