// SPDX-License-Identifier: MIT
/* The write cache's log: appending records, and reading them back (see wlog.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/util/full_rw.h"
#include "core/util/log.h"
#include "core/cache/wlog.h"

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
	struct wlog_hdr h = { .version = WLOG_VERSION, .atomic_write = atomic_write,
			      .disk_size = disk_size };
	struct iovec iov = { &h, sizeof(h) };
	const char *call;
	int ret;

	memset(l, 0, sizeof(*l));
	memcpy(h.magic, WLOG_MAGIC, sizeof(h.magic));
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

	if (l->fd < 0 || l->error)
		return;
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
		l->error = ret;
		log_err("cache.log: %s %s: %s; the log stops here", call, l->path, strerror(-ret));
	}
}

void wlog_close(struct wlog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	free(l->path);
	l->path = NULL;
}

int wlog_reader_open(struct wlog_reader *r, const char *path)
{
	struct stat st;
	int ret;

	memset(r, 0, sizeof(*r));
	r->f = fopen(path, "rbe");
	if (!r->f)
		return -errno;
	if (fread(&r->hdr, sizeof(r->hdr), 1, r->f) != 1 ||
	    memcmp(r->hdr.magic, WLOG_MAGIC, sizeof(r->hdr.magic))) {
		ret = -EINVAL;
		goto err;
	}
	if (r->hdr.version < 1 || r->hdr.version > WLOG_VERSION) {
		ret = -EPROTO;
		goto err;
	}
	r->pos = sizeof(r->hdr);
	if (fstat(fileno(r->f), &st) == 0)
		r->size = (uint64_t)st.st_size;
	return 0;
err:
	fclose(r->f);
	r->f = NULL;
	return ret;
}

int wlog_next(struct wlog_reader *r, struct wlog_rec *rec)
{
	uint64_t padded;

	if (fread(rec, sizeof(*rec), 1, r->f) != 1)
		return 0;
	r->pos += sizeof(*rec);
	if (rec->type < WLOG_WRITE || rec->type > WLOG_MARK ||
	    (rec->type >= WLOG_FLUSH_FAILED && r->hdr.version < 2))
		return -EINVAL;
	if (rec->type == WLOG_MARK) {
		if (rec->len > WLOG_MARK_MAX)
			return -EINVAL;
	} else if (rec->type != WLOG_WRITE) {
		return 1;
	} else if (!rec->len || rec->len > (1ull << 32) || rec->offset > r->hdr.disk_size ||
		   rec->len > r->hdr.disk_size - rec->offset) {
		return -EINVAL;
	}
	padded = (rec->len + 7) & ~7ull;
	r->data_pos = r->pos;
	r->pos += padded;
	if (r->skip_data && rec->type == WLOG_WRITE) {
		/* The caller maps the data itself: a record past the end is torn. */
		if (fseeko(r->f, (off_t)padded, SEEK_CUR))
			return 0;
		return r->pos <= r->size ? 1 : 0;
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

int wlog_reader_rewind(struct wlog_reader *r)
{
	if (fseeko(r->f, (off_t)sizeof(r->hdr), SEEK_SET) < 0)
		return -errno;
	r->pos = sizeof(r->hdr);
	return 0;
}

void wlog_reader_close(struct wlog_reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}
