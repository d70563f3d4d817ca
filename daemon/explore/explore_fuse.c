// SPDX-License-Identifier: MIT
/* `plugdisk explore`'s disks (see explore_fuse.h). Each state gets a file of its own, with
 * an inode number no other state has, so the kernel never serves one state's cached pages
 * for another; when a state goes, its pages are dropped. A read is the base image, the
 * state's overlay laid on it, then the checker's own writes; a write goes to 4 KiB scratch
 * pages of the state, which die with it, so that a checker may mount the state (a journal
 * replay writes) without touching the base or the log. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fuse_lowlevel.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/log.h"
#include "daemon/explore/explore_fuse.h"

#define XF_PAGE 4096u
#define XF_BUCKETS 4096u

struct xf_page {
	struct xf_page *next;
	uint64_t index;
	uint8_t data[XF_PAGE];
};

/* The served state of inode @ino, with a reference, or NULL. */
static struct xf_state *xf_get(struct xf *x, fuse_ino_t ino)
{
	struct xf_state *s;

	if (ino < 2)
		return NULL;
	pthread_mutex_lock(&x->lock);
	for (s = x->states; s; s = s->next)
		if (s->id == ino - 2 && !s->gone)
			break;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&x->lock);
	return s;
}

static void xf_put(struct xf *x, struct xf_state *s)
{
	pthread_mutex_lock(&x->lock);
	if (--s->refs == 0)
		pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
}

/* The state as the log left it: base image, then the overlay. */
static int xf_read_state(struct xf *x, struct xf_state *s, uint64_t off, uint64_t len,
			 uint8_t *buf)
{
	uint64_t got = 0;

	while (got < len && off + got < x->base_size) {
		uint64_t want = len - got;
		ssize_t n;

		if (want > x->base_size - off - got)
			want = x->base_size - off - got;
		n = pread(x->base_fd, buf + got, want, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (uint64_t)n;
	}
	memset(buf + got, 0, len - got);
	extmap_read(s->map, off, len, buf);
	return 0;
}

static struct xf_page *xf_page_find(struct xf_state *s, uint64_t index)
{
	struct xf_page *p;

	for (p = s->buckets[index % XF_BUCKETS]; p; p = p->next)
		if (p->index == index)
			return p;
	return NULL;
}

static void xf_attr(struct xf *x, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = (off_t)x->size;
		st->st_blocks = (blkcnt_t)(x->size / 512);
	}
	st->st_blksize = XF_PAGE;
}

static void xf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct xf *x = fuse_req_userdata(req);
	struct fuse_entry_param e;
	struct xf_state *s;
	unsigned long long id;
	int n = 0;

	if (parent != FUSE_ROOT_ID || sscanf(name, "state-%llu%n", &id, &n) != 1 ||
	    name[n] || !(s = xf_get(x, (fuse_ino_t)id + 2))) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = (fuse_ino_t)id + 2;
	e.generation = 1;
	xf_attr(x, e.ino, &e.attr);
	xf_put(x, s);
	fuse_reply_entry(req, &e);
}

static void xf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct xf *x = fuse_req_userdata(req);
	struct xf_state *s = NULL;
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && !(s = xf_get(x, ino))) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	xf_attr(x, ino, &st);
	if (s)
		xf_put(x, s);
	fuse_reply_attr(req, &st, 0);
}

static void xf_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct xf *x = fuse_req_userdata(req);

	if ((to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size != x->size) {
		fuse_reply_err(req, EPERM); /* a disk keeps its size */
		return;
	}
	xf_getattr(req, ino, fi);
}

static void xf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct xf *x = fuse_req_userdata(req);
	struct xf_state *s = xf_get(x, ino);

	if (!s) {
		fuse_reply_err(req, ino == FUSE_ROOT_ID ? EISDIR : ENOENT);
		return;
	}
	xf_put(x, s);
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

static void xf_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct xf *x = fuse_req_userdata(req);
	struct xf_state *s = xf_get(x, ino);
	uint64_t o = (uint64_t)off, len = size;
	uint8_t *buf;
	int ret;

	(void)fi;
	if (!s) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (o >= x->size) {
		xf_put(x, s);
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (len > x->size - o)
		len = x->size - o;
	buf = malloc(len ? len : 1);
	if (!buf) {
		xf_put(x, s);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = xf_read_state(x, s, o, len, buf);
	if (!ret) {
		pthread_mutex_lock(&s->lock);
		if (s->scratch_pages)
			for (uint64_t i = o / XF_PAGE; i * XF_PAGE < o + len; i++) {
				struct xf_page *p = xf_page_find(s, i);
				uint64_t ps = i * XF_PAGE, a = ps > o ? ps : o;
				uint64_t b = ps + XF_PAGE < o + len ? ps + XF_PAGE : o + len;

				if (p)
					memcpy(buf + (a - o), p->data + (a - ps), b - a);
			}
		pthread_mutex_unlock(&s->lock);
	}
	xf_put(x, s);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, (const char *)buf, len);
	free(buf);
}

static void xf_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct xf *x = fuse_req_userdata(req);
	struct xf_state *s = xf_get(x, ino);
	uint64_t o = (uint64_t)off, len = size;
	int ret = 0;

	(void)fi;
	if (!s) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (o >= x->size || len > x->size - o) {
		xf_put(x, s);
		fuse_reply_err(req, ENOSPC);
		return;
	}
	pthread_mutex_lock(&s->lock);
	for (uint64_t i = o / XF_PAGE; !ret && i * XF_PAGE < o + len; i++) {
		struct xf_page *p = xf_page_find(s, i);
		uint64_t ps = i * XF_PAGE, a = ps > o ? ps : o;
		uint64_t b = ps + XF_PAGE < o + len ? ps + XF_PAGE : o + len;

		if (!p) {
			uint64_t plen = ps + XF_PAGE <= x->size ? XF_PAGE : x->size - ps;

			p = malloc(sizeof(*p));
			if (!p) {
				ret = -ENOMEM;
				break;
			}
			p->index = i;
			ret = xf_read_state(x, s, ps, plen, p->data);
			if (ret) {
				free(p);
				break;
			}
			p->next = s->buckets[i % XF_BUCKETS];
			s->buckets[i % XF_BUCKETS] = p;
			s->scratch_pages++;
		}
		memcpy(p->data + (a - ps), data + (a - o), b - a);
	}
	pthread_mutex_unlock(&s->lock);
	xf_put(x, s);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, size);
}

static void xf_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino, (void)fi;
	fuse_reply_err(req, 0);
}

static void xf_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	xf_ok(req, ino, fi);
}

static const struct fuse_lowlevel_ops xf_ops = {
	.lookup = xf_lookup,
	.getattr = xf_getattr,
	.setattr = xf_setattr,
	.open = xf_open,
	.read = xf_read,
	.write = xf_write,
	.flush = xf_ok,
	.release = xf_ok,
	.fsync = xf_fsync,
};

/* A thread of the loop: wait for a request or the quit event; a request read is always
 * answered. The device is non-blocking, so a thread that lost a request to another gets
 * EAGAIN and waits again. It ends at the quit event, or when the connection ends (ENODEV:
 * the mount is gone). */
static void *xf_thread(void *arg)
{
	struct xf *x = arg;
	struct fuse_buf buf = { 0 };
	struct pollfd pfd[2] = {
		{ .fd = fuse_session_fd(x->se), .events = POLLIN },
		{ .fd = x->quit_fd, .events = POLLIN },
	};

	pthread_setname_np(pthread_self(), "plugdisk-xfuse");
	while (!fuse_session_exited(x->se)) {
		int res;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("explore: poll: %m");
			break;
		}
		if (pfd[1].revents)
			break;
		res = fuse_session_receive_buf(x->se, &buf);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0)
			break; /* 0: the connection ended; an error was printed by libfuse */
		fuse_session_process_buf(x->se, &buf);
	}
	free(buf.mem);
	return NULL;
}

/* Tell the threads to end, and wait for them. */
static void xf_join(struct xf *x)
{
	uint64_t one = 1;

	if (write(x->quit_fd, &one, sizeof(one)) != sizeof(one))
		log_err("explore: write to the quit event: %m");
	for (unsigned int i = 0; i < x->nthreads; i++)
		pthread_join(x->threads[i], NULL);
	x->nthreads = 0;
}

int xf_start(struct xf *x, const char *mnt, int base_fd, uint64_t size)
{
	/* auto_unmount: fusermount3 stays beside explore and unmounts when explore's end
	 * closes their socket, so that a SIGKILLed explore leaves no dead mount behind. */
	char *argv[] = { (char *)"plugdisk-explore", (char *)"-o",
			 (char *)"fsname=plugdisk-explore,subtype=plugdisk-explore,auto_unmount",
			 NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct stat st;
	int err, fd;

	memset(x, 0, sizeof(*x));
	x->quit_fd = -1;
	x->base_fd = base_fd;
	x->size = size;
	if (fstat(base_fd, &st)) {
		err = -errno;
		log_err("explore: fstat of the base image: %m");
		return err;
	}
	x->base_size = (uint64_t)st.st_size;
	x->mnt = strdup(mnt);
	if (!x->mnt)
		return -ENOMEM;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->cond, NULL);
	x->quit_fd = eventfd(0, EFD_CLOEXEC);
	if (x->quit_fd < 0) {
		err = -errno;
		log_err("explore: eventfd: %m");
		goto fail;
	}
	x->se = fuse_session_new(&args, &xf_ops, sizeof(xf_ops), x);
	fuse_opt_free_args(&args); /* the session may have added to them */
	if (!x->se) {
		log_err("explore: fuse_session_new failed");
		err = -EIO;
		goto fail;
	}
	if (fuse_session_mount(x->se, mnt)) {
		log_err("explore: fuse_session_mount %s failed", mnt);
		fuse_session_destroy(x->se);
		err = -EIO;
		goto fail;
	}
	x->mounted = true;
	/* No checker may hold the connection open past explore's end; and a thread that
	 * another beat to a request must not block in its read. */
	fd = fuse_session_fd(x->se);
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)) {
		err = -errno;
		log_err("explore: fcntl of the FUSE device: %m");
		goto fail_mounted;
	}
	for (; x->nthreads < XF_THREADS; x->nthreads++) {
		err = pthread_create(&x->threads[x->nthreads], NULL, xf_thread, x);
		if (err) {
			log_err("explore: pthread_create: %s", strerror(err));
			err = -err;
			xf_join(x);
			goto fail_mounted;
		}
	}
	x->dev = stat(mnt, &st) == 0 ? st.st_dev : 0; /* served by the threads */
	return 0;
fail_mounted:
	fuse_session_unmount(x->se);
	fuse_session_destroy(x->se);
	x->mounted = false;
fail:
	if (x->quit_fd >= 0)
		close(x->quit_fd);
	pthread_cond_destroy(&x->cond);
	pthread_mutex_destroy(&x->lock);
	free(x->mnt);
	x->mnt = NULL;
	return err;
}

int xf_add(struct xf *x, struct xf_state *s, uint64_t id, const struct extmap *map)
{
	memset(s, 0, sizeof(*s));
	s->buckets = calloc(XF_BUCKETS, sizeof(*s->buckets));
	if (!s->buckets)
		return -ENOMEM;
	s->id = id;
	s->map = map;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_lock(&x->lock);
	s->next = x->states;
	x->states = s;
	pthread_mutex_unlock(&x->lock);
	return 0;
}

void xf_remove(struct xf *x, struct xf_state *s)
{
	struct xf_state **pp;
	char name[64];

	pthread_mutex_lock(&x->lock);
	s->gone = true;
	while (s->refs)
		pthread_cond_wait(&x->cond, &x->lock);
	for (pp = &x->states; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	pthread_mutex_unlock(&x->lock);
	/* The kernel's pages and name of it go too: the memory is the next state's. Either
	 * may be unknown to the kernel already (-ENOENT), which is fine. */
	snprintf(name, sizeof(name), "state-%" PRIu64, s->id);
	fuse_lowlevel_notify_inval_entry(x->se, FUSE_ROOT_ID, name, strlen(name));
	fuse_lowlevel_notify_inval_inode(x->se, (fuse_ino_t)s->id + 2, 0, 0);
	for (unsigned int i = 0; i < XF_BUCKETS; i++)
		for (struct xf_page *p = s->buckets[i], *n; p; p = n) {
			n = p->next;
			free(p);
		}
	free(s->buckets);
	pthread_mutex_destroy(&s->lock);
}

/* Is the connection still up? Its device shows POLLERR once it has ended. */
static bool xf_connected(struct xf *x)
{
	struct pollfd pfd = { .fd = fuse_session_fd(x->se), .events = 0 };

	return poll(&pfd, 1, 0) == 0 || !(pfd.revents & POLLERR);
}

void xf_stop(struct xf *x)
{
	if (!x->mounted)
		return;
	/* Unmount first, as root: the threads serve until then. Another mount namespace (a
	 * checker that unshared its own) or a lazy detach may keep the connection after it. */
	if (geteuid() == 0 && umount2(x->mnt, 0) && errno == EBUSY) {
		log_warn("explore: %s is busy (a checker left it in use): detaching it", x->mnt);
		umount2(x->mnt, MNT_DETACH);
	}
	/* The threads end between requests: none is read and then dropped. */
	xf_join(x);
	/* Still connected: end the connection by closing its only descriptor, so that the
	 * kernel fails whatever is sent to it from now on, instead of leaving it to wait. The
	 * number stays open, on a pipe whose reader is gone (it polls POLLERR), for libfuse
	 * to close: seeing the connection over, it then unmounts nothing a second time.
	 * Without root, fusermount unmounts (lazily) once the device is closed. */
	if (geteuid() == 0 && xf_connected(x)) {
		int p[2];

		if (pipe2(p, O_CLOEXEC) == 0) {
			close(p[0]);
			if (dup3(p[1], fuse_session_fd(x->se), O_CLOEXEC) < 0)
				log_err("explore: dup3: %m");
			close(p[1]);
		} else {
			log_err("explore: pipe2: %m");
		}
	}
	fuse_session_unmount(x->se);
	fuse_session_destroy(x->se);
	x->mounted = false;
	close(x->quit_fd);
	x->quit_fd = -1;
	pthread_cond_destroy(&x->cond);
	pthread_mutex_destroy(&x->lock);
	free(x->mnt);
	x->mnt = NULL;
}
