// SPDX-License-Identifier: MIT
/* The write cache's log: appending records, and reading them back (see wlog.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/util/full_rw.h"
#include "core/util/log.h"
#include "core/cache/wlog.h"

/* Write data up to this long is read past, not seeked over, by a reader with skip_data. */
#define WLOG_SKIP_READ 65536

/* Append all of @iov at the log's end. 0 or -errno, *@call naming the failed call. */
static int wlog_write(struct wlog *l, struct iovec *iov, unsigned int cnt, const char **call)
{
	uint64_t n = 0;
	int ret;

	for (unsigned int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	ret = full_rw(l->fd, true, iov, cnt, l->size, call);
	if (!ret)
		l->size += n;
	return ret;
}

int wlog_open(struct wlog *l, const char *path, uint64_t disk_size, uint32_t atomic_write)
{
	struct wlog_hdr h = { .version = WLOG_VERSION_BASE, .atomic_write = atomic_write,
			      .disk_size = disk_size };
	struct iovec iov = { &h, sizeof(h) };
	const char *call;
	int ret;

	memset(l, 0, sizeof(*l));
	memcpy(h.magic, WLOG_MAGIC, sizeof(h.magic));
	l->version = h.version;
	l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (l->fd < 0) {
		ret = -errno;
		log_err("cache.log: open %s: %m", path);
		return ret;
	}
	ret = wlog_write(l, &iov, 1, &call);
	if (ret) {
		log_err("cache.log: %s %s: %s", call, path, strerror(-ret));
		close(l->fd);
		l->fd = -1;
		return ret;
	}
	l->path = strdup(path);
	return 0;
}

/* Overwrite @len bytes of the header at @off (bytes that are there already: no new space).
 * 0 or -errno, *@call naming the failed call. */
static int wlog_patch_hdr(struct wlog *l, uint64_t off, const void *p, size_t len,
			  const char **call)
{
	struct iovec iov = { (void *)p, len };

	return full_rw(l->fd, true, &iov, 1, off, call);
}

/* A write to the log failed: cut the file back to its last whole record and say in the
 * header where the log ends, so that a reader reports it as cut short. Both only rewrite
 * or free space, so they work on a full filesystem too. */
static void wlog_cut_short(struct wlog *l, int err, const char *call)
{
	uint64_t end = l->size;
	const char *call2;
	int ret;

	l->error = err;
	log_err("cache.log: %s %s: %s; the log stops here, at byte %llu", call, l->path,
		strerror(-err), (unsigned long long)end);
	if (ftruncate(l->fd, (off_t)end) < 0)
		log_err("cache.log: ftruncate %s: %m", l->path);
	ret = wlog_patch_hdr(l, offsetof(struct wlog_hdr, end), &end, sizeof(end), &call2);
	if (ret) {
		l->end_unsaved = true;
		log_err("cache.log: %s %s: %s; its header cannot say that the log was cut short "
			"yet (tried again at close)", call2, l->path, strerror(-ret));
	}
}

void wlog_append(struct wlog *l, enum wlog_type type, uint64_t epoch, uint64_t offset,
		 uint64_t len, const void *data)
{
	wlog_append_flags(l, type, 0, epoch, offset, len, data);
}

void wlog_append_flags(struct wlog *l, enum wlog_type type, uint32_t flags, uint64_t epoch,
		       uint64_t offset, uint64_t len, const void *data)
{
	static const uint8_t zeros[8];
	struct wlog_rec r = { .type = type, .reserved = flags, .epoch = epoch, .offset = offset,
			      .len = len };
	struct iovec iov[3] = { { &r, sizeof(r) } };
	const char *call;
	int cnt = 1, ret;

	if (l->fd < 0)
		return;
	if (l->error) {
		l->lost++;
		return;
	}
	if (type == WLOG_ATOMIC && l->version < 3) { /* before the record that needs it */
		uint32_t v = 3;

		ret = wlog_patch_hdr(l, offsetof(struct wlog_hdr, version), &v, sizeof(v), &call);
		if (ret) {
			wlog_cut_short(l, ret, call);
			l->lost++;
			return;
		}
		l->version = v;
	}
	if (type == WLOG_WRITE || type == WLOG_MARK) {
		iov[cnt].iov_base = (void *)data;
		iov[cnt++].iov_len = len;
		if (len % 8) {
			iov[cnt].iov_base = (void *)zeros;
			iov[cnt++].iov_len = 8 - len % 8;
		}
	}
	ret = wlog_write(l, iov, cnt, &call);
	if (ret) {
		wlog_cut_short(l, ret, call);
		l->lost++;
	}
}

void wlog_close(struct wlog *l)
{
	uint64_t end = l->size;
	const char *call;
	int ret;

	/* Without its end the log would read as whole, offering states as if the writes it
	 * lost never happened: one more try (a transient EIO may have passed). */
	if (l->fd >= 0 && l->end_unsaved) {
		ret = wlog_patch_hdr(l, offsetof(struct wlog_hdr, end), &end, sizeof(end), &call);
		if (ret)
			log_err("cache.log: %s %s: %s; the log is cut short at byte %llu, and its "
				"header does not say so: readers take it for whole", call, l->path,
				strerror(-ret), (unsigned long long)end);
		else
			log_info("cache.log: %s: its header says now that it was cut short at byte "
				 "%llu", l->path, (unsigned long long)end);
		l->end_unsaved = false;
	}
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	free(l->path);
	l->path = NULL;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Check the header in r->hdr against a file of r->size bytes. 0, -EINVAL (r->why) or
 * -EPROTO. */
static int wlog_check_hdr(struct wlog_reader *r)
{
	const struct wlog_hdr *h = &r->hdr;

	if (memcmp(h->magic, WLOG_MAGIC, sizeof(h->magic))) {
		snprintf(r->why, sizeof(r->why), "not a plugdisk write log");
		return -EINVAL;
	}
	if (h->version < 1 || h->version > WLOG_VERSION)
		return -EPROTO;
	if (!is_pow2(h->atomic_write) || h->atomic_write < WLOG_ATOMIC_MIN ||
	    h->atomic_write > WLOG_ATOMIC_MAX) {
		snprintf(r->why, sizeof(r->why), "header: atomic write unit %" PRIu32 " (a power of "
			 "two from %d to %d)", h->atomic_write, WLOG_ATOMIC_MIN, WLOG_ATOMIC_MAX);
		return -EINVAL;
	}
	if (!h->disk_size) {
		snprintf(r->why, sizeof(r->why), "header: disk size 0");
		return -EINVAL;
	}
	if (h->end && (h->end < sizeof(*h) || h->end > r->size)) {
		snprintf(r->why, sizeof(r->why), "header: end %" PRIu64 " outside the file (%" PRIu64
			 " bytes)", h->end, r->size);
		return -EINVAL;
	}
	if (h->end)
		r->size = h->end; /* nothing after it was written whole */
	return 0;
}

int wlog_reader_open_file(struct wlog_reader *r, FILE *f, uint64_t size)
{
	int ret;

	memset(r, 0, sizeof(*r));
	r->f = f;
	r->size = size;
	if (fread(&r->hdr, sizeof(r->hdr), 1, r->f) != 1) {
		snprintf(r->why, sizeof(r->why), "not a plugdisk write log");
		ret = -EINVAL;
		goto err;
	}
	ret = wlog_check_hdr(r);
	if (ret)
		goto err;
	r->pos = sizeof(r->hdr);
	return 0;
err:
	fclose(r->f);
	r->f = NULL;
	return ret;
}

int wlog_reader_open(struct wlog_reader *r, const char *path)
{
	struct stat st;
	FILE *f;
	int ret;

	memset(r, 0, sizeof(*r));
	f = fopen(path, "rbe");
	if (!f)
		return -errno;
	if (fstat(fileno(f), &st)) {
		ret = -errno;
		fclose(f);
		return ret;
	}
	return wlog_reader_open_file(r, f, (uint64_t)st.st_size);
}

/* Whether @rec makes sense by itself, in a log with header @h. 0 or -EINVAL (r->why). */
static int wlog_check_rec(struct wlog_reader *r, const struct wlog_rec *rec)
{
	const struct wlog_hdr *h = &r->hdr;
	uint32_t min_version = rec->type >= WLOG_ATOMIC ? 3 : rec->type >= WLOG_FLUSH_FAILED ? 2 : 1;
	const char *bad = NULL;

	if (rec->type < WLOG_WRITE || rec->type > WLOG_ATOMIC) {
		snprintf(r->why, sizeof(r->why), "unknown type %" PRIu32, rec->type);
		return -EINVAL;
	}
	if (h->version < min_version) {
		snprintf(r->why, sizeof(r->why), "type %" PRIu32 " in a version %" PRIu32 " log",
			 rec->type, h->version);
		return -EINVAL;
	}
	if (rec->reserved & ~(rec->type == WLOG_FLUSH ? WLOG_F_IGNORED : 0u))
		bad = "unknown flags";
	switch (rec->type) {
	case WLOG_WRITE:
	case WLOG_DISCARD:
		if (!rec->len)
			bad = "length 0";
		else if (rec->type == WLOG_WRITE && rec->len > WLOG_WRITE_MAX)
			bad = "longer than 2^32 bytes";
		else if (rec->offset >= h->disk_size || rec->len > h->disk_size - rec->offset)
			bad = "past the disk's end";
		break;
	case WLOG_MARK:
		if (rec->offset)
			bad = "offset not 0";
		else if (rec->len > WLOG_MARK_MAX)
			bad = "text longer than 1024 bytes";
		break;
	case WLOG_ATOMIC:
		if (rec->offset)
			bad = "offset not 0";
		else if (!is_pow2(rec->len) || rec->len < WLOG_ATOMIC_MIN ||
			 rec->len > WLOG_ATOMIC_MAX)
			bad = "unit not a power of two from 512 to 16384";
		break;
	default: /* flush, cut, failed flush */
		if (rec->offset || rec->len)
			bad = "offset or length not 0";
		break;
	}
	if (!bad)
		return 0;
	snprintf(r->why, sizeof(r->why), "%s %s (offset %" PRIu64 ", length %" PRIu64 ")",
		 wlog_type_name(rec->type), bad, rec->offset, rec->len);
	return -EINVAL;
}

const char *wlog_type_name(uint32_t type)
{
	static const char *const names[] = { NULL, "write", "flush", "discard", "power cut",
					     "failed flush", "mark", "atomic unit change" };

	return type >= 1 && type <= WLOG_ATOMIC ? names[type] : "record";
}

int wlog_next(struct wlog_reader *r, struct wlog_rec *rec)
{
	uint64_t padded;
	int ret;

	if (r->pos + sizeof(*rec) > r->size || fread(rec, sizeof(*rec), 1, r->f) != 1)
		return 0;
	r->rec_pos = r->pos;
	r->nrec++;
	r->pos += sizeof(*rec);
	ret = wlog_check_rec(r, rec);
	if (ret)
		return ret;
	if (rec->type != WLOG_WRITE && rec->type != WLOG_MARK)
		return 1;
	padded = (rec->len + 7) & ~7ull;
	r->data_pos = r->pos;
	r->pos += padded;
	if (r->pos > r->size)
		return 0; /* torn last record */
	if (r->skip_data && rec->type == WLOG_WRITE) {
		/* The caller reads or maps the data itself. Short data is read past, through
		 * stdio's buffer: a seek would drop the buffer at every record. */
		if (padded > WLOG_SKIP_READ) {
			if (fseeko(r->f, (off_t)padded, SEEK_CUR))
				return 0;
			return 1;
		}
		if (!r->skip_buf && !(r->skip_buf = malloc(WLOG_SKIP_READ)))
			return -ENOMEM;
		return fread(r->skip_buf, 1, padded, r->f) == padded ? 1 : 0;
	}
	if (padded + 1 > r->cap) { /* + 1: a mark's text ends with a NUL */
		uint8_t *nb = realloc(r->buf, padded + 1);

		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->cap = padded + 1;
	}
	if (fread(r->buf, 1, padded, r->f) != padded)
		return 0; /* torn last record */
	r->buf[rec->len] = 0;
	return 1;
}

int wlog_read_data(struct wlog_reader *r, uint64_t off, void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	const char *call;

	return full_rw(fileno(r->f), false, &iov, 1, r->data_pos + off, &call);
}

int wlog_validate(struct wlog_reader *r, struct wlog_summary *sum, char *err, size_t errlen)
{
	struct wlog_summary s = { .hdr = r->hdr, .cut_short = r->hdr.end };
	uint64_t last_epoch = 0;
	struct wlog_rec rec;
	int ret;

	r->skip_data = true;
	while ((ret = wlog_next(r, &rec)) > 0) {
		s.records++;
		switch (rec.type) {
		case WLOG_WRITE:
		case WLOG_DISCARD:
			if (rec.epoch < last_epoch) {
				snprintf(r->why, sizeof(r->why), "%s in epoch %" PRIu64 " after epoch %"
					 PRIu64 ": epochs never go back", wlog_type_name(rec.type),
					 rec.epoch, last_epoch);
				ret = -EINVAL;
				goto out;
			}
			last_epoch = rec.epoch;
			if (rec.type == WLOG_WRITE) {
				s.writes++;
				s.write_bytes += rec.len;
			} else {
				s.discards++;
			}
			break;
		case WLOG_FLUSH:
			s.flushes++;
			break;
		case WLOG_MARK:
			s.marks++;
			break;
		case WLOG_CUT:
			s.cut = true;
			break;
		}
		s.end = r->pos;
		if (s.cut)
			break;
	}
	if (!s.end)
		s.end = sizeof(r->hdr);
	s.torn = !ret && !s.cut && r->nrec > s.records;
	/* A log cut short after its first power cut reads whole up to that cut. */
	if (s.cut)
		s.cut_short = 0;
	s.cut_short_after = s.cut_short ? s.records : 0;
out:
	if (ret == -EINVAL)
		snprintf(err, errlen, "record %" PRIu64 " at byte %" PRIu64 ": %s", r->nrec,
			 r->rec_pos, r->why);
	else if (ret < 0)
		snprintf(err, errlen, "record %" PRIu64 " at byte %" PRIu64 ": %s", r->nrec,
			 r->rec_pos, strerror(-ret));
	if (sum)
		*sum = s;
	return ret < 0 ? ret : 0;
}

/* The message of a failed wlog_reader_open. */
static void open_error(const struct wlog_reader *r, int ret, char *err, size_t errlen)
{
	if (ret == -EPROTO)
		snprintf(err, errlen, "write log version %" PRIu32 "; this plugdisk reads versions "
			 "1 to %d", r->hdr.version, WLOG_VERSION);
	else if (ret == -EINVAL)
		snprintf(err, errlen, "%s", r->why);
	else
		snprintf(err, errlen, "%s", strerror(-ret));
}

int wlog_validate_path(const char *path, struct wlog_summary *sum, char *err, size_t errlen)
{
	struct wlog_reader r;
	int ret = wlog_reader_open(&r, path);

	if (ret) {
		open_error(&r, ret, err, errlen);
		return ret;
	}
	ret = wlog_validate(&r, sum, err, errlen);
	wlog_reader_close(&r);
	return ret;
}

int wlog_validate_buf(const void *buf, size_t len, struct wlog_summary *sum, char *err,
		      size_t errlen)
{
	struct wlog_reader r;
	FILE *f;
	int ret;

	if (!len) {
		snprintf(err, errlen, "not a plugdisk write log");
		return -EINVAL;
	}
	f = fmemopen((void *)buf, len, "rb");
	if (!f)
		return -errno;
	ret = wlog_reader_open_file(&r, f, len);
	if (ret) {
		open_error(&r, ret, err, errlen);
		return ret;
	}
	ret = wlog_validate(&r, sum, err, errlen);
	wlog_reader_close(&r);
	return ret;
}

void wlog_cut_short_text(char *buf, size_t len, uint64_t after, uint64_t at)
{
	snprintf(buf, len, "the log is cut short after record %" PRIu64 " (at byte %" PRIu64
		 "): a write to it failed (the daemon's log names the error); writes after it "
		 "are not in the log, so no state past it is known", after, at);
}

int wlog_reader_rewind(struct wlog_reader *r)
{
	if (fseeko(r->f, (off_t)sizeof(r->hdr), SEEK_SET) < 0)
		return -errno;
	r->pos = sizeof(r->hdr);
	r->nrec = 0;
	return 0;
}

void wlog_reader_close(struct wlog_reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->buf);
	free(r->skip_buf);
	memset(r, 0, sizeof(*r));
}
