// SPDX-License-Identifier: MIT
/* FUSE over io_uring under libfuse 3.14: the session's read and writev are ours
 * (fuse_session_custom_io()), libfuse still decodes requests and builds replies.
 *
 * Notes on the design.
 *
 * Start. The kernel sends FUSE_INIT on /dev/fuse, where a classic receive thread reads it
 * through ring_read(), which notes whether the kernel offers FUSE_OVER_IO_URING. libfuse
 * 3.14 does not know the flag, so ring_writev() adds it to the INIT reply when the rings
 * were set up before (an accepted flag makes the kernel hold new requests until every queue
 * has an entry registered, so it is only accepted when registering can follow). Then each
 * ring thread registers its queue's entries. If a registration fails, the kernel drops the
 * flag and keeps using /dev/fuse: that is the fallback to the classic transport. The
 * classic receive threads keep reading /dev/fuse throughout, for interrupts, forgets and
 * anything sent before the rings were ready.
 *
 * The data path (requests, replies, who commits them, affinity, the plug) is described in
 * fuse_uring_ring.c.
 *
 * Stop. pd_uring_stop() sets u->stopping and writes each queue's eventfd; the ring thread
 * sees it at the eventfd's completion and ends. Unmounting ends the connection, which
 * completes every waiting entry with -ENOTCONN.
 *
 * Lock order: u->lock, then a queue's sq_lock (never taken together in practice); neither
 * is held across a FUSE request's processing. */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "core/util/log.h"
#include "daemon/daemon.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/fuse_uring.h"
#include "daemon/fuse/fuse_uring_int.h"

#define ENABLE_PARAM "/sys/module/fuse/parameters/enable_uring"
#define CPU_POSSIBLE "/sys/devices/system/cpu/possible"
/* How long the start may take: FUSE_INIT and registration. */
#define READY_TIMEOUT_S 10

/* ---- setup and teardown ---- */

/* Number of possible CPUs, as the kernel counts its queues (num_possible_cpus()). */
static unsigned int possible_cpus(void)
{
	FILE *f = fopen(CPU_POSSIBLE, "re");
	unsigned int n = 0, a, b;
	int c;

	if (!f)
		return 0;
	for (;;) {
		if (fscanf(f, "%u", &a) != 1)
			break;
		b = a;
		c = fgetc(f);
		if (c == '-') {
			if (fscanf(f, "%u", &b) != 1)
				break;
			c = fgetc(f);
		}
		if (b >= a)
			n += b - a + 1;
		if (c != ',')
			break;
	}
	fclose(f);
	return n;
}

/* Whether the kernel's FUSE io_uring is on; with @may_set, turn it on if it is off.
 * 0 (on), -ENOENT (no such parameter: a kernel without it), -EOPNOTSUPP (off), -errno. */
static int enable_param(bool may_set)
{
	char c = 0;
	int fd = open(ENABLE_PARAM, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, &c, 1);
	close(fd);
	if (n == 1 && (c == 'Y' || c == '1'))
		return 0;
	if (!may_set)
		return -EOPNOTSUPP;
	fd = open(ENABLE_PARAM, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1) {
		int saved = errno;

		log_err("write %s: %s", ENABLE_PARAM, strerror(saved));
		if (fd >= 0)
			close(fd);
		return -saved;
	}
	close(fd);
	log_info("mount.io_uring = on: set %s to 1", ENABLE_PARAM);
	return 0;
}

static void ring_free(struct pd_uring *u)
{
	if (u->queues) {
		for (unsigned int i = 0; i < u->nr_queues; i++) {
			struct ring_queue *q = &u->queues[i];

			if (q->ring_ok)
				io_uring_queue_exit(&q->ring);
			if (q->evfd >= 0)
				close(q->evfd);
			pthread_mutex_destroy(&q->sq_lock);
			for (unsigned int k = 0; q->ent && k < u->depth; k++)
				pd_ring_io_free(q->ent[k].io);
			free(q->ent);
		}
	}
	if (u->mem)
		munmap(u->mem, u->mem_size);
	free(u->queues);
	free(u->held);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
}

static int ring_queue_init(struct pd_uring *u, struct ring_queue *q, unsigned int qid,
			   size_t ent_size)
{
	struct io_uring_params p;
	int ret;

	q->u = u;
	q->qid = qid;
	q->evfd = eventfd(0, EFD_CLOEXEC);
	if (q->evfd < 0)
		return -errno;
	q->ent = calloc(u->depth, sizeof(*q->ent));
	if (!q->ent)
		return -ENOMEM;
	for (unsigned int i = 0; i < u->depth; i++) {
		struct ring_ent *e = &q->ent[i];
		char *base = (char *)u->mem + ((size_t)qid * u->depth + i) * ent_size;

		e->q = q;
		e->idx = qid * u->depth + i;
		e->hdr = (struct pd_fuse_uring_req_header *)base;
		e->buf = base + RING_ROOM;
		e->iov[0].iov_base = e->hdr;
		e->iov[0].iov_len = sizeof(*e->hdr);
		e->iov[1].iov_base = e->buf + RING_ROOM;
		e->iov[1].iov_len = u->payload_size;
		e->io = pd_ring_io_new();
		if (!e->io)
			return -ENOMEM;
	}
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
	p.cq_entries = 2 * (u->depth + 1);
	ret = io_uring_queue_init_params(u->depth + 1, &q->ring, &p);
	if (ret)
		return ret;
	q->ring_ok = true;
	return 0;
}

static const char *mode_name(uint32_t mode)
{
	return mode == CONF_IO_URING_ON ? "on" : mode == CONF_IO_URING_OFF ? "off" : "auto";
}

/* No io_uring: log why; an error when mount.io_uring = on. */
static int ring_unavailable(struct pd *pd, const char *why)
{
	if (pd->cfg.io_uring.mode == CONF_IO_URING_ON) {
		log_err("mount.io_uring = on, but FUSE over io_uring cannot be used: %s", why);
		return -EOPNOTSUPP;
	}
	log_info("FUSE transport: classic /dev/fuse (mount.io_uring = %s: %s)",
		 mode_name(pd->cfg.io_uring.mode), why);
	return 0;
}

int pd_uring_prepare(struct pd *pd)
{
	struct pd_uring *u;
	char why[160];
	int ret;

	pd->uring = NULL;
	if (pd->cfg.io_uring.mode == CONF_IO_URING_OFF)
		return ring_unavailable(pd, "off by configuration");
	ret = enable_param(pd->cfg.io_uring.mode == CONF_IO_URING_ON && geteuid() == 0);
	if (ret == -ENOENT)
		return ring_unavailable(pd, "this kernel has no FUSE io_uring (" ENABLE_PARAM
					    " is missing)");
	if (ret == -EOPNOTSUPP)
		return ring_unavailable(pd, "the kernel's FUSE io_uring is off: as root, echo 1 >"
					    " " ENABLE_PARAM ", or set mount.io_uring = on");
	if (ret) {
		snprintf(why, sizeof(why), "%s: %s", ENABLE_PARAM, strerror(-ret));
		return ring_unavailable(pd, why);
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return ring_unavailable(pd, "out of memory");
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	u->pd = pd;
	u->state = RS_WAIT_INIT;
	pd->uring = u;
	return 0;
}

int pd_uring_setup(struct pd *pd)
{
	struct fuse_custom_io io = { .read = ring_read, .writev = ring_writev };
	struct pd_uring *u = pd->uring;
	size_t ent_size;
	char why[160];
	int ret;

	if (!u)
		return 0;
	u->se = pd->se;
	u->fd = fuse_session_fd(pd->se);
	u->depth = pd->cfg.io_uring.depth;
	u->nr_queues = possible_cpus();
	/* The kernel wants room for max_write and for max_pages pages; plugdisk asks for
	 * max_write = PD_MAX_WRITE, and libfuse sets max_pages to match. */
	u->payload_size = PD_MAX_WRITE;
	if (!u->nr_queues || u->nr_queues > 65536) {
		snprintf(why, sizeof(why), "cannot count the possible CPUs in %s", CPU_POSSIBLE);
		goto fail;
	}
	ent_size = 2 * RING_ROOM + u->payload_size;
	u->mem_size = ent_size * u->nr_queues * u->depth;
	/* Pages are only touched as requests use them. */
	u->mem = mmap(NULL, u->mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	u->held = calloc((size_t)u->nr_queues * u->depth, sizeof(*u->held));
	u->queues = calloc(u->nr_queues, sizeof(*u->queues));
	if (u->mem == MAP_FAILED || !u->held || !u->queues) {
		if (u->mem == MAP_FAILED)
			u->mem = NULL;
		snprintf(why, sizeof(why), "out of memory for %u queues of %u entries",
			 u->nr_queues, u->depth);
		goto fail;
	}
	for (unsigned int i = 0; i < u->nr_queues; i++) {
		u->queues[i].evfd = -1;
		pthread_mutex_init(&u->queues[i].sq_lock, NULL);
	}
	for (unsigned int i = 0; i < u->nr_queues; i++) {
		ret = ring_queue_init(u, &u->queues[i], i, ent_size);
		if (ret) {
			snprintf(why, sizeof(why), "io_uring_queue_init: %s", strerror(-ret));
			goto fail;
		}
	}
	ret = fuse_session_custom_io(pd->se, &io, u->fd);
	if (ret) {
		snprintf(why, sizeof(why), "fuse_session_custom_io: %s", strerror(-ret));
		goto fail;
	}
	for (unsigned int i = 0; i < u->nr_queues; i++) {
		ret = pthread_create(&u->queues[i].thread, NULL, ring_thread, &u->queues[i]);
		if (ret) {
			/* No ring thread for this queue: the INIT reply must not accept
			 * io_uring. The threads started see the state and end. The custom
			 * I/O stays installed and passes everything to /dev/fuse. */
			log_err("pthread_create (FUSE ring): %s", strerror(ret));
			snprintf(why, sizeof(why), "pthread_create: %s", strerror(ret));
			pthread_mutex_lock(&u->lock);
			u->state = RS_CLASSIC;
			u->logged = true;
			pthread_cond_broadcast(&u->cond);
			pthread_mutex_unlock(&u->lock);
			for (unsigned int k = 0; k < i; k++) {
				pthread_join(u->queues[k].thread, NULL);
				u->queues[k].thread_ok = false;
			}
			return ring_unavailable(pd, why);
		}
		u->queues[i].thread_ok = true;
	}
	return 0;

fail:
	ring_free(u);
	pd->uring = NULL;
	return ring_unavailable(pd, why);
}

int pd_uring_wait_ready(struct pd *pd)
{
	struct pd_uring *u = pd->uring;
	struct timespec ts;
	enum ring_state st;
	int err, ret = 0;

	if (!u)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += READY_TIMEOUT_S;
	pthread_mutex_lock(&u->lock);
	while ((u->state == RS_WAIT_INIT || u->state == RS_REGISTERING) && ret != ETIMEDOUT)
		ret = pthread_cond_timedwait(&u->cond, &u->lock, &ts);
	st = u->state;
	err = u->error;
	pthread_mutex_unlock(&u->lock);

	switch (st) {
	case RS_RUNNING:
		log_info("FUSE transport: io_uring, %u queues of %u entries (mount.io_uring = %s)",
			 u->nr_queues, u->depth, mode_name(pd->cfg.io_uring.mode));
		return 0;
	case RS_CLASSIC:
		if (u->logged)
			return pd->cfg.io_uring.mode == CONF_IO_URING_ON ? -EOPNOTSUPP : 0;
		return ring_unavailable(pd, "the kernel did not offer FUSE_OVER_IO_URING in"
					    " FUSE_INIT");
	case RS_FAILED: {
		char why[128];

		snprintf(why, sizeof(why), "registering the ring entries failed: %s",
			 strerror(-err));
		return ring_unavailable(pd, why);
	}
	default:
		log_err("FUSE io_uring: no FUSE_INIT or registration within %d s", READY_TIMEOUT_S);
		return -ETIMEDOUT;
	}
}

void pd_uring_stop(struct pd *pd)
{
	struct pd_uring *u = pd->uring;
	uint64_t one = 1;

	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	u->stop = true;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	smp_store_mb(u->stopping, 1);
	for (unsigned int i = 0; i < u->nr_queues; i++) {
		struct ring_queue *q = &u->queues[i];

		if (!q->thread_ok)
			continue;
		if (write(q->evfd, &one, sizeof(one)) != sizeof(one))
			log_err("write (eventfd of FUSE queue %u): %m", q->qid);
		pthread_join(q->thread, NULL);
		q->thread_ok = false;
		/* Replies pushed while the thread ended; later ones commit themselves. */
		ring_commit_replies(q);
	}
}

void pd_uring_destroy(struct pd *pd)
{
	if (!pd->uring)
		return;
	pd_uring_stop(pd);
	ring_free(pd->uring);
	pd->uring = NULL;
}

void pd_uring_info(struct pd *pd, struct pd_uring_info *info)
{
	struct pd_uring *u = pd->uring;
	bool running = false;

	memset(info, 0, sizeof(*info));
	info->transport = "classic";
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	running = u->state == RS_RUNNING;
	pthread_mutex_unlock(&u->lock);
	if (!running)
		return;
	info->transport = "io_uring";
	info->queues = u->nr_queues;
	info->depth = u->depth;
	info->requests = 0;
	for (unsigned int i = 0; i < u->nr_queues; i++)
		info->requests += READ_ONCE(u->queues[i].requests) -
				  READ_ONCE(u->queues[i].requests_base);
	info->commit_waits = READ_ONCE(u->commit_waits);
}

void pd_uring_stats_reset(struct pd *pd)
{
	struct pd_uring *u = pd->uring;

	if (!u)
		return;
	for (unsigned int i = 0; i < u->nr_queues; i++)
		WRITE_ONCE(u->queues[i].requests_base, READ_ONCE(u->queues[i].requests));
	WRITE_ONCE(u->commit_waits, 0);
}
