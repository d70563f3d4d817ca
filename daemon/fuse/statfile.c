// SPDX-License-Identifier: MIT
/* MOUNTPOINT/stats and MOUNTPOINT/stat: each open takes a snapshot of the queue and renders
 * it; reads are served from that text. Writing "reset" to stats zeroes the counters.
 *
 * A reader killed in the middle of a read makes the kernel send release while the read may
 * still be waiting to be served, by another thread or after the release. So an open file's
 * snapshot is found through a registry, under snap_lock, never through the bare file handle:
 * a read takes a reference while the snapshot is registered, release unregisters it and
 * drops the open's reference, and the last reference frees it. A read that comes after its
 * release finds nothing and returns end of file. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control/cache_ctl.h"
#include "daemon/daemon.h"
#include "daemon/fuse/background.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/disk_open.h"
#include "daemon/fuse/fuse_uring.h"
#include "daemon/fuse/statfile.h"

#define STATS_BUF_SIZE (64u * 1024u)

struct snap_buf {
	struct snap_buf *prev, *next;	/* snap_lock: the registry of open snapshots */
	unsigned int refs;		/* snap_lock: the open, and each read in progress */
	size_t len;
	char text[];
};

/* Lock order: independent of every other lock; held only for list and reference updates. */
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct snap_buf snap_list = { .prev = &snap_list, .next = &snap_list };

static struct snap_buf *snap_render(struct pd *pd, fuse_ino_t ino)
{
	struct stats_snapshot *ss = malloc(sizeof(*ss));
	struct snap_buf *sb = malloc(sizeof(*sb) + STATS_BUF_SIZE);
	struct pd_uring_info ui;

	if (!ss || !sb) {
		free(ss);
		free(sb);
		return NULL;
	}
	queue_snapshot(&pd->q, ss);
	snprintf(ss->name, sizeof(ss->name), "%s", pd->cfg.disk_name);
	ss->disk_size = pd->be.size;
	pd_uring_info(pd, &ui);
	ss->transport = ui.transport;
	ss->ring_queues = ui.queues;
	ss->ring_depth = ui.depth;
	ss->ring_requests = ui.requests;
	ss->ring_commit_waits = ui.commit_waits;
	pd_data_parked_info(pd, &ss->parked, &ss->parks, &ss->parked_peak);
	ss->max_background = pd_background_now(pd);
	pd_disk_open_stats(&ss->opens_fenced, &ss->requests_fenced);
	sb->refs = 1;
	if (ino == INO_STATS) {
		sb->len = stats_format(ss, sb->text, STATS_BUF_SIZE);
		sb->len += chain_stats(&pd->chain, sb->text + sb->len, STATS_BUF_SIZE - sb->len);
	} else {
		sb->len = stats_format_stat(ss, sb->text, STATS_BUF_SIZE);
	}
	free(ss);
	return sb;
}

char *pd_stats_text(struct pd *pd)
{
	struct snap_buf *sb = snap_render(pd, INO_STATS);
	char *text;

	if (!sb)
		return NULL;
	text = strndup(sb->text, sb->len);
	free(sb);
	return text;
}

/* @fh's snapshot with a reference taken, or NULL if it is not (or no longer) registered. */
static struct snap_buf *snap_get(uint64_t fh)
{
	struct snap_buf *found = NULL;

	pthread_mutex_lock(&snap_lock);
	for (struct snap_buf *sb = snap_list.next; sb != &snap_list; sb = sb->next) {
		if ((uintptr_t)sb == fh) {
			sb->refs++;
			found = sb;
			break;
		}
	}
	pthread_mutex_unlock(&snap_lock);
	return found;
}

/* Drop a reference; @unregister also takes the snapshot out of the registry (release). */
static void snap_put(struct snap_buf *sb, bool unregister)
{
	bool last;

	pthread_mutex_lock(&snap_lock);
	if (unregister) {
		sb->prev->next = sb->next;
		sb->next->prev = sb->prev;
	}
	last = --sb->refs == 0;
	pthread_mutex_unlock(&snap_lock);
	if (last)
		free(sb);
}

void statfile_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct pd *pd = fuse_req_userdata(req);
	struct snap_buf *sb;

	if (ino == INO_STAT && (fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	/* O_TRUNC (the shell's `echo reset > stats`) means nothing to a virtual file. */
	fi->direct_io = 1;
	fi->fh = 0;
	if ((fi->flags & O_ACCMODE) == O_WRONLY) {
		fuse_reply_open(req, fi);
		return;
	}
	sb = snap_render(pd, ino);
	if (!sb) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&snap_lock);
	sb->next = snap_list.next;
	sb->prev = &snap_list;
	snap_list.next->prev = sb;
	snap_list.next = sb;
	pthread_mutex_unlock(&snap_lock);
	fi->fh = (uintptr_t)sb;
	if (fuse_reply_open(req, fi) == -ENOENT)
		snap_put(sb, true); /* interrupted open: no release will come */
}

void statfile_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct snap_buf *sb = fi->fh ? snap_get(fi->fh) : NULL;

	if (!sb || off < 0 || (size_t)off >= sb->len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, sb->text + off,
			       size < sb->len - (size_t)off ? size : sb->len - (size_t)off);
	if (sb)
		snap_put(sb, false);
}

/* "reset", with or without a newline, at any offset: `echo reset >> stats` writes at the end
 * of what the kernel thinks the file holds. */
void statfile_write(fuse_req_t req, struct fuse_bufvec *bufv)
{
	struct pd *pd = fuse_req_userdata(req);
	char buf[16];
	size_t n = fuse_buf_size(bufv);
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(sizeof(buf));
	ssize_t got;

	if (n == 0 || n > sizeof(buf)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	dst.buf[0].mem = buf;
	got = fuse_buf_copy(&dst, bufv, 0);
	if (got < 0) {
		fuse_reply_err(req, (int)-got);
		return;
	}
	if (!((got == 5 || (got == 6 && buf[5] == '\n')) && !memcmp(buf, "reset", 5))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	queue_stats_reset(&pd->q);
	pd_uring_stats_reset(pd);
	chain_stats_reset(&pd->chain);
	pd_disk_open_stats_reset();
	fuse_reply_write(req, n);
}

void statfile_release(fuse_req_t req, struct fuse_file_info *fi)
{
	if (fi->fh)
		snap_put((struct snap_buf *)(uintptr_t)fi->fh, true);
	fuse_reply_err(req, 0);
}

void statfile_free_all(void)
{
	struct snap_buf *sb, *next;

	pthread_mutex_lock(&snap_lock);
	sb = snap_list.next;
	snap_list.next = snap_list.prev = &snap_list;
	pthread_mutex_unlock(&snap_lock);
	/* No FUSE thread runs: the open's is the only reference left. */
	for (; sb != &snap_list; sb = next) {
		next = sb->next;
		free(sb);
	}
}
