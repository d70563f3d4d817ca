// SPDX-License-Identifier: MIT
/* plugdisk write logs written as dm-log-writes logs (see dmlog.h). A write is held back until
 * the flush that makes it durable (a FLUSH record of its epoch or a later one) or a discard
 * (a barrier), then written before it, as the kernel's target logs it; failed flushes, power
 * cuts' sequels and atomic unit changes have no entry; a flush under cache.flush = ignore is
 * written as the flush it claimed to be. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cache/wlog.h"
#include "core/crash/dmlog.h"
#include "core/util/full_rw.h"

#define DMLOG_COPY (1u << 20)

struct held {
	uint64_t off, len, epoch, data_pos;
};

struct exporter {
	int in, out;
	uint32_t ss;
	uint64_t pos;		/* where the next entry goes */
	struct dmlog_summary sum;
	struct held *held;
	uint64_t nheld, cap;
	uint8_t *buf;
	const char *call;
};

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static int xwrite(struct exporter *x, const void *p, size_t len, uint64_t at)
{
	struct iovec iov = { (void *)p, len };

	return full_rw(x->out, true, &iov, 1, at, &x->call);
}

/* One entry: its sector (with a mark's text), then a write's data copied from the wlog. */
static int put_entry(struct exporter *x, uint64_t flags, uint64_t off, uint64_t len,
		     const void *text, uint64_t text_len, uint64_t data_pos)
{
	uint8_t *sec = x->buf;
	int ret;

	memset(sec, 0, x->ss);
	put_le64(sec, off / x->ss);
	put_le64(sec + 8, len / x->ss);
	put_le64(sec + 16, flags);
	put_le64(sec + 24, text_len);
	if (text_len)
		memcpy(sec + DMLOG_ENTRY_HDR, text, text_len);
	ret = xwrite(x, sec, x->ss, x->pos);
	if (ret)
		return ret;
	x->pos += x->ss;
	x->sum.entries++;
	if (flags & (DMLOG_F_DISCARD | DMLOG_F_MARK) || !len)
		return 0;
	for (uint64_t at = 0; at < len; at += DMLOG_COPY) {
		size_t n = len - at > DMLOG_COPY ? DMLOG_COPY : (size_t)(len - at);
		struct iovec iov = { x->buf, n };

		ret = full_rw(x->in, false, &iov, 1, data_pos + at, &x->call);
		if (!ret)
			ret = xwrite(x, x->buf, n, x->pos);
		if (ret)
			return ret;
		x->pos += n;
	}
	return 0;
}

/* Write the held writes of an epoch up to @epoch (a prefix: epochs never go back). */
static int put_held(struct exporter *x, uint64_t epoch)
{
	uint64_t i = 0;
	int ret = 0;

	for (; i < x->nheld && x->held[i].epoch <= epoch && !ret; i++)
		ret = put_entry(x, 0, x->held[i].off, x->held[i].len, NULL, 0, x->held[i].data_pos);
	if (i)
		memmove(x->held, x->held + i, (x->nheld - i) * sizeof(*x->held));
	x->nheld -= i;
	return ret;
}

static int hold(struct exporter *x, const struct wlog_rec *rec, uint64_t data_pos)
{
	if (x->nheld == x->cap) {
		uint64_t c = x->cap ? 2 * x->cap : 256;
		struct held *h = realloc(x->held, c * sizeof(*h));

		if (!h)
			return -ENOMEM;
		x->held = h;
		x->cap = c;
	}
	x->held[x->nheld++] = (struct held){ rec->offset, rec->len, rec->epoch, data_pos };
	x->sum.writes++;
	x->sum.write_bytes += rec->len;
	return 0;
}

static int export_rec(struct exporter *x, struct wlog_reader *r, const struct wlog_rec *rec)
{
	uint64_t n;
	int ret;

	switch (rec->type) {
	case WLOG_WRITE:
		return hold(x, rec, r->data_pos);
	case WLOG_FLUSH:
		ret = put_held(x, rec->epoch);
		x->sum.flushes++;
		return ret ? ret : put_entry(x, DMLOG_F_FLUSH, 0, 0, NULL, 0, 0);
	case WLOG_DISCARD:
		ret = put_held(x, UINT64_MAX);
		x->sum.discards++;
		return ret ? ret : put_entry(x, DMLOG_F_DISCARD, rec->offset, rec->len, NULL, 0, 0);
	case WLOG_MARK:
		n = x->ss - DMLOG_ENTRY_HDR - 1; /* the kernel keeps a NUL's room */
		x->sum.marks++;
		return put_entry(x, DMLOG_F_MARK, 0, 0, r->buf, rec->len < n ? rec->len : n, 0);
	default:
		return 0;
	}
}

/* Every record checked, and aligned to @ss, before anything is written. */
static int export_check(const char *path, uint32_t ss, char *err, size_t errlen)
{
	struct wlog_summary sum;
	struct wlog_reader r;
	struct wlog_rec rec;
	int ret = wlog_validate_path(path, &sum, err, errlen);

	if (ret)
		return ret;
	ret = wlog_reader_open(&r, path);
	if (ret) {
		snprintf(err, errlen, "%s", strerror(-ret));
		return ret;
	}
	r.skip_data = true;
	while ((ret = wlog_next(&r, &rec)) > 0 && rec.type != WLOG_CUT) {
		if ((rec.type == WLOG_WRITE || rec.type == WLOG_DISCARD) &&
		    (rec.offset % ss || rec.len % ss)) {
			snprintf(err, errlen, "record %" PRIu64 " at byte %" PRIu64 ": %s of %" PRIu64
				 " bytes at byte %" PRIu64 " is not in whole %" PRIu32 "-byte sectors",
				 r.nrec, r.rec_pos, wlog_type_name(rec.type), rec.len, rec.offset, ss);
			ret = -EINVAL;
			break;
		}
	}
	wlog_reader_close(&r);
	return ret < 0 ? ret : 0;
}

int dmlog_from_wlog(const char *wlog_path, const char *out, uint32_t ss,
		    struct dmlog_summary *sum, char *err, size_t errlen)
{
	struct exporter x = { .in = -1, .out = -1, .ss = ss, .pos = ss };
	struct wlog_reader r;
	struct wlog_rec rec;
	uint8_t super[28];
	int ret = export_check(wlog_path, ss, err, errlen);

	if (ret)
		return ret;
	x.sum.sectorsize = ss;
	ret = wlog_reader_open(&r, wlog_path);
	if (ret) {
		snprintf(err, errlen, "%s", strerror(-ret));
		return ret;
	}
	x.buf = malloc(DMLOG_COPY > ss ? DMLOG_COPY : ss);
	x.in = open(wlog_path, O_RDONLY | O_CLOEXEC);
	x.out = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (!x.buf || x.in < 0 || x.out < 0) {
		ret = !x.buf ? -ENOMEM : -errno;
		snprintf(err, errlen, "%s: %s", x.buf && x.in < 0 ? wlog_path : out,
			 strerror(-ret));
		goto out;
	}
	r.skip_data = true; /* a write's data is copied by offset; a mark's text is read */
	while ((ret = wlog_next(&r, &rec)) > 0 && rec.type != WLOG_CUT) {
		ret = export_rec(&x, &r, &rec);
		if (ret)
			break;
	}
	if (!ret)
		ret = put_held(&x, UINT64_MAX); /* pending at the end, as the kernel's teardown */
	if (!ret) {
		memset(super, 0, sizeof(super));
		put_le64(super, DMLOG_MAGIC);
		put_le64(super + 8, DMLOG_VERSION);
		put_le64(super + 16, x.sum.entries);
		memcpy(super + 24, &(uint32_t){ ss }, 4); /* little-endian machines only, as wlog */
		memset(x.buf, 0, ss);
		memcpy(x.buf, super, sizeof(super));
		ret = xwrite(&x, x.buf, ss, 0); /* last: a log cut short has no valid super */
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	else if (ret)
		snprintf(err, errlen, "%s %s: %s", x.call ? x.call : "write", out, strerror(-ret));
out:
	if (sum)
		*sum = x.sum;
	if (x.out >= 0 && close(x.out) && !ret) {
		ret = -errno;
		snprintf(err, errlen, "close %s: %s", out, strerror(-ret));
	}
	if (x.in >= 0)
		close(x.in);
	free(x.buf);
	free(x.held);
	wlog_reader_close(&r);
	return ret;
}
