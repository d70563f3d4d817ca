// SPDX-License-Identifier: MIT
/* The FUSE operations: the mount's fixed tree (disk, stats, stat, control) and its
 * attributes, with each file's I/O handed to its module: the disk's to data.c, stats' and
 * stat's to statfile.c, control's to control.c. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "daemon/control/control.h"
#include "daemon/daemon.h"
#include "daemon/fuse/background.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/disk_open.h"
#include "daemon/fuse/fuse_reply.h"
#include "daemon/fuse/fuse_uring.h"
#include "daemon/fuse/statfile.h"

#define PD_MAX_BACKGROUND 256u

static struct pd *req_pd(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static const char *const ino_name[INO_NR] = { NULL, NULL, "disk", "stats", "stat", "control" };

/* ---- attributes ---- */

static void fill_attr(struct pd *pd, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_blksize = 4096;
	pthread_mutex_lock(&pd->attr_lock);
	st->st_mode = pd->mode[ino];
	st->st_uid = pd->uid[ino];
	st->st_gid = pd->gid[ino];
	if (ino == INO_DISK) {
		st->st_atim = pd->atime;
		st->st_mtim = pd->mtime;
		st->st_ctim = pd->ctime;
	} else {
		st->st_atim = st->st_mtim = st->st_ctim = pd->start_time;
	}
	pthread_mutex_unlock(&pd->attr_lock);
	if (ino == INO_ROOT) {
		st->st_nlink = 2;
	} else {
		st->st_nlink = 1;
		if (ino == INO_DISK) {
			st->st_size = (off_t)pd->be.size;
			st->st_blocks = (blkcnt_t)(pd->be.size / 512);
		} else if (ino == INO_CONTROL) {
			st->st_size = PD_CONTROL_SIZE;
		}
	}
}

static void pd_init(void *userdata, struct fuse_conn_info *conn)
{
	struct pd *pd = userdata;
	unsigned int ring_bg = pd_uring_max_background(pd);

	conn->max_write = PD_MAX_WRITE;
	conn->max_read = 0;
	conn->max_readahead = PD_MAX_WRITE;
	/* The kernel's default of 12 background requests would cap async direct I/O from a
	 * loop device far below the controller's queue depth. */
	conn->max_background = PD_MAX_BACKGROUND;
	/* FUSE over io_uring: a queue's entries hold its requests until they are answered. */
	if (ring_bg)
		conn->max_background = ring_bg;
	conn->congestion_threshold = conn->max_background * 3 / 4;
	/* On io_uring, lowered once the mount answers while nothing holds requests
	 * (background.c). */
	pd_background_init(pd, conn->max_background, ring_bg != 0);
	conn->want |= FUSE_CAP_ASYNC_DIO | FUSE_CAP_ASYNC_READ;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/* Requests are read into memory, where a large write's data stays (pd_write_buf). With
	 * splice reading on, libfuse gives every receive thread a pipe at its first request
	 * and, when the pipe cannot grow to max_write, reads with read() anyway. */
	conn->want &= ~(unsigned)FUSE_CAP_SPLICE_READ;
	conn->time_gran = 1;
}

static void pd_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pd *pd = req_pd(req);
	struct fuse_entry_param e;

	if (parent != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	memset(&e, 0, sizeof(e));
	for (fuse_ino_t ino = INO_DISK; ino < INO_NR; ino++) {
		if (strcmp(name, ino_name[ino]))
			continue;
		e.ino = ino;
		e.attr_timeout = 1.0;
		e.entry_timeout = 1.0;
		fill_attr(pd, ino, &e.attr);
		fuse_reply_entry(req, &e);
		return;
	}
	fuse_reply_err(req, ENOENT);
}

static void pd_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino >= INO_NR) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(req_pd(req), ino, &st);
	fuse_reply_attr(req, &st, 1.0);
}

static void set_time(struct timespec *dst, const struct timespec *src, bool now)
{
	if (now)
		clock_gettime(CLOCK_REALTIME, dst);
	else
		*dst = *src;
}

static void pd_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct pd *pd = req_pd(req);
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct stat st;

	(void)fi;
	if (ino >= INO_NR) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		/* A disk has the size it has: only a no-op "truncate" to that size is allowed. */
		if (ino != INO_DISK || (uint64_t)attr->st_size != pd->be.size) {
			fuse_reply_err(req, EPERM);
			return;
		}
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		/* Only disk's permission bits may change; stats, stat and control keep theirs. */
		if (ino != INO_DISK && ino != INO_ROOT) {
			fuse_reply_err(req, EPERM);
			return;
		}
	}
	if ((to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) && ctx->uid != 0) {
		fuse_reply_err(req, EPERM);
		return;
	}
	pthread_mutex_lock(&pd->attr_lock);
	if (to_set & FUSE_SET_ATTR_MODE)
		pd->mode[ino] = (pd->mode[ino] & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		pd->uid[ino] = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		pd->gid[ino] = attr->st_gid;
	if (ino == INO_DISK) {
		if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
			set_time(&pd->atime, &attr->st_atim, to_set & FUSE_SET_ATTR_ATIME_NOW);
		if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
			set_time(&pd->mtime, &attr->st_mtim, to_set & FUSE_SET_ATTR_MTIME_NOW);
		clock_gettime(CLOCK_REALTIME, &pd->ctime);
	}
	pthread_mutex_unlock(&pd->attr_lock);
	fill_attr(pd, ino, &st);
	fuse_reply_attr(req, &st, 1.0);
}

static void pd_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const char *const names[] = { ".", "..", "disk", "stats", "stat", "control" };
	static const fuse_ino_t inos[] = { INO_ROOT, INO_ROOT, INO_DISK, INO_STATS, INO_STAT,
					   INO_CONTROL };
	char buf[1024];
	size_t pos = 0;

	(void)fi;
	if (ino != INO_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (size > sizeof(buf))
		size = sizeof(buf);
	for (off_t i = off; i < (off_t)(sizeof(names) / sizeof(names[0])); i++) {
		struct stat st = { .st_ino = inos[i], .st_mode = i < 2 ? S_IFDIR : S_IFREG };
		size_t n = fuse_add_direntry(req, buf + pos, size - pos, names[i], &st, i + 1);

		if (n > size - pos)
			break;
		pos += n;
	}
	fuse_reply_buf(req, buf, pos);
}

static void pd_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct pd *pd = req_pd(req);
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = pd->be.size / 4096;
	sv.f_files = INO_NR - 1;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static void pd_deny(fuse_req_t req)
{
	fuse_reply_err(req, EPERM);
}

static void pd_mknod(fuse_req_t req, fuse_ino_t p, const char *n, mode_t m, dev_t d)
{
	(void)p, (void)n, (void)m, (void)d;
	pd_deny(req);
}

static void pd_mkdir(fuse_req_t req, fuse_ino_t p, const char *n, mode_t m)
{
	(void)p, (void)n, (void)m;
	pd_deny(req);
}

static void pd_unlink(fuse_req_t req, fuse_ino_t p, const char *n)
{
	(void)p, (void)n;
	pd_deny(req);
}

static void pd_symlink(fuse_req_t req, const char *l, fuse_ino_t p, const char *n)
{
	(void)l, (void)p, (void)n;
	pd_deny(req);
}

static void pd_rename(fuse_req_t req, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn,
		      unsigned int flags)
{
	(void)p, (void)n, (void)np, (void)nn, (void)flags;
	pd_deny(req);
}

static void pd_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t np, const char *nn)
{
	(void)ino, (void)np, (void)nn;
	pd_deny(req);
}

static void pd_create(fuse_req_t req, fuse_ino_t p, const char *n, mode_t m,
		      struct fuse_file_info *fi)
{
	(void)p, (void)n, (void)m, (void)fi;
	pd_deny(req);
}

/* ---- open files ---- */

static void pd_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pd *pd = req_pd(req);
	int ret;

	switch (ino) {
	case INO_DISK:
		if (pd->be.read_only && (fi->flags & O_ACCMODE) != O_RDONLY) {
			fuse_reply_err(req, EROFS);
			return;
		}
		if (READ_ONCE(pd->stopping)) {
			fuse_reply_err(req, PD_ESTOPPED);
			return;
		}
		fi->keep_cache = 1;
		fi->noflush = 1;
		/* An O_DIRECT open (a loop device with direct I/O) goes around the page cache in
		 * the kernel too, and its writes run in parallel, as on a block device: see
		 * fuse_reply.c. Buffered opens keep the page cache and readahead. Such an open's
		 * O_DSYNC writes get no FUSE fsync after them: pd_write_buf() flushes them. */
		if ((fi->flags & O_DIRECT) && pd_reply_dio_may_mmap(pd))
			fi->direct_io = 1;
		/* The handle carries the power fence (disk_open.c). */
		ret = pd_disk_open_new(pd, fi->direct_io, &fi->fh);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
		if (fi->direct_io)
			pd_reply_open_flags(PD_FOPEN_PARALLEL_DIRECT_WRITES);
		if (fuse_reply_open(req, fi) == -ENOENT)
			pd_disk_open_release(fi->fh); /* interrupted: no release will come */
		return;
	case INO_STATS:
	case INO_STAT:
		statfile_open(req, ino, fi);
		return;
	case INO_CONTROL:
		control_file_open(req, fi);
		return;
	default:
		fuse_reply_err(req, EISDIR);
		return;
	}
}

static void pd_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino == INO_STATS || ino == INO_STAT)
		statfile_release(req, fi);
	else if (ino == INO_CONTROL)
		control_file_release(req, fi);
	else {
		if (ino == INO_DISK)
			pd_disk_open_release(fi->fh);
		fuse_reply_err(req, 0);
	}
}

/* Refuse a request of disk from an open that a power cut fenced; true when refused. */
static bool pd_fenced(fuse_req_t req, struct fuse_file_info *fi)
{
	int ret = pd_disk_open_check(req_pd(req), fi->fh);

	if (!ret)
		return false;
	fuse_reply_err(req, -ret);
	return true;
}

static void pd_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* Every acknowledged write is already in the image; durability is fsync's job. */
	(void)ino, (void)fi;
	fuse_reply_err(req, 0);
}

static void pd_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	switch (ino) {
	case INO_DISK:
		if (!pd_fenced(req, fi))
			pd_disk_read(req, size, off);
		return;
	case INO_STATS:
	case INO_STAT:
		statfile_read(req, size, off, fi);
		return;
	case INO_CONTROL:
		control_file_read(req, size, off, fi);
		return;
	default:
		fuse_reply_err(req, EISDIR);
		return;
	}
}

static void pd_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	switch (ino) {
	case INO_DISK:
		if (pd_fenced(req, fi))
			return;
		/* libfuse hands fuse_write_in.flags over in fi->flags. */
		pd_disk_write(req, bufv, off, pd_disk_write_flags(fi->fh, (uint32_t)fi->flags));
		return;
	case INO_STATS:
		statfile_write(req, bufv);
		return;
	case INO_CONTROL:
		control_file_write(req, bufv, fi);
		return;
	case INO_STAT:
		fuse_reply_err(req, EACCES);
		return;
	default:
		fuse_reply_err(req, EISDIR);
		return;
	}
}

static void pd_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	if (ino == INO_DISK) {
		if (!pd_fenced(req, fi))
			pd_disk_fsync(req);
	}
	else
		fuse_reply_err(req, 0);
}

static void pd_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	if (ino == INO_DISK) {
		if (!pd_fenced(req, fi))
			pd_disk_fallocate(req, mode, off, len);
	} else
		fuse_reply_err(req, EPERM);
}

const struct fuse_lowlevel_ops pd_fuse_ops = {
	.init = pd_init,
	.lookup = pd_lookup,
	.getattr = pd_getattr,
	.setattr = pd_setattr,
	.mknod = pd_mknod,
	.mkdir = pd_mkdir,
	.unlink = pd_unlink,
	.rmdir = pd_unlink,
	.symlink = pd_symlink,
	.rename = pd_rename,
	.link = pd_link,
	.create = pd_create,
	.open = pd_open,
	.read = pd_read,
	.write_buf = pd_write_buf,
	.flush = pd_flush,
	.release = pd_release,
	.fsync = pd_fsync,
	.readdir = pd_readdir,
	.statfs = pd_statfs,
	.fallocate = pd_fallocate,
};

