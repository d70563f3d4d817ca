// SPDX-License-Identifier: MIT
/* dm-log-writes logs read into plugdisk write logs (see dmlog.h).
 *
 * The mapping onto the write log's model: writes between two flush entries share an epoch; a
 * flush entry (or a write with the FLUSH flag, before its data) is a FLUSH record closing
 * it; a FUA write is a write followed by a FLUSH record, as plugdisk logs a FUA write; a
 * discard is a DISCARD record, a barrier in plugdisk's model (the writes before it are
 * durable from there); a mark is a MARK record with its text (at most WLOG_MARK_MAX bytes
 * kept). The sector size is the atomic write unit (at most WLOG_ATOMIC_MAX). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cache/wlog.h"
#include "core/crash/dmlog.h"

struct dmlog_entry {
	uint64_t sector, nr_sectors, flags, data_len;
	uint64_t pos;		/* the entry's byte */
	const uint8_t *data;	/* a write's data, or a mark's text */
	uint64_t off, len;	/* bytes on the disk */
};

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int dmlog_is(const void *buf, size_t len)
{
	return len >= 8 && get_le64(buf) == DMLOG_MAGIC;
}

/* The entry at d_pos, checked by itself. 0 or -EINVAL (@err). */
static int dmlog_entry(const uint8_t *buf, uint64_t len, uint32_t ss, uint64_t n,
		       uint64_t *pos, struct dmlog_entry *e, char *err, size_t errlen)
{
	const uint64_t known = DMLOG_F_FLUSH | DMLOG_F_FUA | DMLOG_F_DISCARD | DMLOG_F_MARK |
			       DMLOG_F_METADATA;
	const char *bad = NULL;
	uint64_t data = 0;

	e->pos = *pos;
	if (*pos > len || len - *pos < ss) {
		snprintf(err, errlen, "entry %" PRIu64 " at byte %" PRIu64 ": past the log's end "
			 "(%" PRIu64 " bytes)", n, *pos, len);
		return -EINVAL;
	}
	e->sector = get_le64(buf + *pos);
	e->nr_sectors = get_le64(buf + *pos + 8);
	e->flags = get_le64(buf + *pos + 16);
	e->data_len = get_le64(buf + *pos + 24);
	e->data = buf + *pos + DMLOG_ENTRY_HDR;
	if (e->flags & ~known)
		bad = "unknown flags";
	else if (e->flags & DMLOG_F_MARK) {
		if (e->flags != DMLOG_F_MARK || e->sector || e->nr_sectors)
			bad = "a mark with flags, a sector or sectors";
		else if (e->data_len > ss - DMLOG_ENTRY_HDR)
			bad = "mark text longer than its sector";
	} else if (e->data_len && (e->flags & DMLOG_F_DISCARD || !e->nr_sectors ||
				   e->data_len > e->nr_sectors * (uint64_t)ss))
		bad = "data length";
	else if (e->flags & DMLOG_F_DISCARD && (e->flags & (DMLOG_F_FLUSH | DMLOG_F_FUA)))
		bad = "a discard with FLUSH or FUA";
	else if (!e->nr_sectors && (e->flags & DMLOG_F_DISCARD || !(e->flags & DMLOG_F_FLUSH)))
		bad = "0 sectors";
	else if (e->sector > UINT64_MAX / ss || e->nr_sectors > UINT64_MAX / ss ||
		 e->sector * ss > UINT64_MAX - e->nr_sectors * ss)
		bad = "sectors past 2^64 bytes";
	else if (!(e->flags & DMLOG_F_DISCARD) && e->nr_sectors * ss > WLOG_WRITE_MAX)
		bad = "a write longer than 2^32 bytes";
	if (bad) {
		snprintf(err, errlen, "entry %" PRIu64 " at byte %" PRIu64 ": %s (sector %" PRIu64
			 ", %" PRIu64 " sectors, flags 0x%" PRIx64 ", data length %" PRIu64 ")",
			 n, *pos, bad, e->sector, e->nr_sectors, e->flags, e->data_len);
		return -EINVAL;
	}
	e->off = e->sector * ss;
	e->len = e->nr_sectors * ss;
	*pos += ss;
	if (!(e->flags & (DMLOG_F_DISCARD | DMLOG_F_MARK)))
		data = e->len;
	if (data) {
		e->data = buf + *pos;
		if (len - *pos < data) {
			snprintf(err, errlen, "entry %" PRIu64 " at byte %" PRIu64 ": its %" PRIu64
				 " bytes of data pass the log's end (%" PRIu64 " bytes)", n, e->pos,
				 data, len);
			return -EINVAL;
		}
		*pos += data;
	}
	return 0;
}

/* The super block: sector size and entries. 0, -EINVAL or -EPROTO (@err). */
static int dmlog_super(const uint8_t *buf, uint64_t len, uint32_t *ss, uint64_t *n, char *err,
		       size_t errlen)
{
	uint64_t v;

	if (len < 28 || !dmlog_is(buf, len)) {
		snprintf(err, errlen, "not a dm-log-writes log");
		return -EINVAL;
	}
	v = get_le64(buf + 8);
	if (v != DMLOG_VERSION) {
		snprintf(err, errlen, "dm-log-writes version %" PRIu64 "; plugdisk reads version %d",
			 v, DMLOG_VERSION);
		return -EPROTO;
	}
	*n = get_le64(buf + 16);
	*ss = (uint32_t)buf[24] | (uint32_t)buf[25] << 8 | (uint32_t)buf[26] << 16 |
	      (uint32_t)buf[27] << 24;
	if (*ss < DMLOG_SECTOR_MIN || *ss > DMLOG_SECTOR_MAX || (*ss & (*ss - 1))) {
		snprintf(err, errlen, "super block: sector size %" PRIu32 " (a power of two from "
			 "%d to %d)", *ss, DMLOG_SECTOR_MIN, DMLOG_SECTOR_MAX);
		return -EINVAL;
	}
	if (len < *ss || *n > (len - *ss) / *ss) {
		snprintf(err, errlen, "super block: %" PRIu64 " entries of %" PRIu32 " bytes or more "
			 "do not fit in %" PRIu64 " bytes", *n, *ss, len);
		return -EINVAL;
	}
	return 0;
}

int dmlog_validate(const uint8_t *buf, uint64_t len, struct dmlog_summary *sum, char *err,
		   size_t errlen)
{
	struct dmlog_summary s = { 0 };
	struct dmlog_entry e;
	uint64_t pos, n;
	int ret = dmlog_super(buf, len, &s.sectorsize, &n, err, errlen);

	if (ret)
		return ret;
	pos = s.sectorsize;
	for (uint64_t i = 0; i < n; i++) {
		ret = dmlog_entry(buf, len, s.sectorsize, i + 1, &pos, &e, err, errlen);
		if (ret)
			return ret;
		s.entries++;
		if (e.flags & DMLOG_F_MARK) {
			s.marks++;
			continue;
		}
		s.flushes += !!(e.flags & DMLOG_F_FLUSH);
		s.fuas += !!(e.flags & DMLOG_F_FUA) && e.nr_sectors;
		if (e.flags & DMLOG_F_DISCARD)
			s.discards++;
		else if (e.nr_sectors) {
			s.writes++;
			s.write_bytes += e.len;
		}
		if (e.nr_sectors && e.off + e.len > s.extent)
			s.extent = e.off + e.len;
	}
	if (sum)
		*sum = s;
	return 0;
}

/* Append @e to @l, the open epoch in *@epoch. */
static void dmlog_put(struct wlog *l, const struct dmlog_entry *e, uint64_t *epoch)
{
	if (e->flags & DMLOG_F_MARK) {
		uint64_t n = e->data_len < WLOG_MARK_MAX ? e->data_len : WLOG_MARK_MAX;

		wlog_append(l, WLOG_MARK, *epoch, 0, n, e->data);
		return;
	}
	if (e->flags & DMLOG_F_DISCARD) {
		wlog_append(l, WLOG_DISCARD, *epoch, e->off, e->len, NULL);
		return;
	}
	if (e->flags & DMLOG_F_FLUSH)
		wlog_append(l, WLOG_FLUSH, (*epoch)++, 0, 0, NULL);
	if (!e->nr_sectors)
		return;
	wlog_append(l, WLOG_WRITE, *epoch, e->off, e->len, e->data);
	if (e->flags & DMLOG_F_FUA)
		wlog_append(l, WLOG_FLUSH, (*epoch)++, 0, 0, NULL);
}

int dmlog_to_wlog(const uint8_t *buf, uint64_t len, uint64_t disk_size, const char *out,
		  struct dmlog_summary *sum, char *err, size_t errlen)
{
	struct dmlog_summary s;
	struct dmlog_entry e;
	uint64_t pos, epoch = 1;
	uint32_t atomic;
	struct wlog l;
	int ret = dmlog_validate(buf, len, &s, err, errlen);

	if (ret)
		return ret;
	if (!disk_size)
		disk_size = s.extent ? s.extent : s.sectorsize;
	if (s.extent > disk_size) {
		snprintf(err, errlen, "a write or discard ends at byte %" PRIu64 ", past the disk's "
			 "end (%" PRIu64 " bytes)", s.extent, disk_size);
		return -EINVAL;
	}
	atomic = s.sectorsize < WLOG_ATOMIC_MAX ? s.sectorsize : WLOG_ATOMIC_MAX;
	ret = wlog_open(&l, out, disk_size, atomic);
	if (ret) {
		snprintf(err, errlen, "open %s: %s", out, strerror(-ret));
		return ret;
	}
	pos = s.sectorsize;
	for (uint64_t i = 0; i < s.entries && !l.error && !ret; i++) {
		/* validated above: an error here would be a change of the buffer meanwhile */
		ret = dmlog_entry(buf, len, s.sectorsize, i + 1, &pos, &e, err, errlen);
		if (!ret)
			dmlog_put(&l, &e, &epoch);
	}
	if (!ret) {
		ret = l.error;
		if (ret)
			snprintf(err, errlen, "write %s: %s", out, strerror(-ret));
	}
	wlog_close(&l);
	if (sum)
		*sum = s;
	return ret;
}

/* The size of the file or block device behind @fd. 0 or -errno. */
static int fd_size(int fd, uint64_t *size)
{
	struct stat st;
	off_t end;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISBLK(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		return 0;
	}
	end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		return -errno;
	*size = (uint64_t)end;
	return 0;
}

/* Convert the dm log open at @fd into an unlinked file open at s->fd. */
static int dmlog_src_convert(struct dmlog_src *s, int fd, uint64_t size, uint64_t disk_size,
			     char *err, size_t errlen)
{
	const char *dir = getenv("TMPDIR");
	char tmp[4096];
	void *map;
	int ret, tfd;

	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "mmap: %s", strerror(-ret));
		return ret;
	}
	snprintf(tmp, sizeof(tmp), "%s/plugdisk-dmlog-XXXXXX", dir && *dir ? dir : "/var/tmp");
	tfd = mkstemp(tmp);
	if (tfd < 0) {
		ret = -errno;
		snprintf(err, errlen, "mkstemp %s: %s", tmp, strerror(-ret));
		goto out;
	}
	close(tfd);
	ret = dmlog_to_wlog(map, size, disk_size, tmp, &s->sum, err, errlen);
	if (!ret) {
		s->fd = open(tmp, O_RDONLY | O_CLOEXEC);
		if (s->fd < 0) {
			ret = -errno;
			snprintf(err, errlen, "open %s: %s", tmp, strerror(-ret));
		}
	}
	unlink(tmp);
	if (!ret) {
		snprintf(s->path, sizeof(s->path), "/proc/self/fd/%d", s->fd);
		s->converted = 1;
	}
out:
	munmap(map, size);
	return ret;
}

int dmlog_src_open(struct dmlog_src *s, const char *path, uint64_t disk_size, char *err,
		   size_t errlen)
{
	uint8_t magic[8];
	uint64_t size = 0;
	int fd, ret = 0;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	snprintf(s->path, sizeof(s->path), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* the write log reader says why */
	if (pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	    dmlog_is(magic, sizeof(magic))) {
		ret = fd_size(fd, &size);
		if (ret)
			snprintf(err, errlen, "%s", strerror(-ret));
		else
			ret = dmlog_src_convert(s, fd, size, disk_size, err, errlen);
	}
	close(fd);
	return ret;
}

void dmlog_src_close(struct dmlog_src *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
