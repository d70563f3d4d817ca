// SPDX-License-Identifier: MIT
/* The FUSE receive threads: read requests from /dev/fuse, hand them to libfuse, and flush the
 * queue's plug before sleeping.
 *
 * Before a receive thread blocks for the next request with nothing pending, it unplugs the
 * queue, the way the block layer flushes a task's plug when the task sleeps: a lone
 * synchronous request never waits for the unplug timer. With FUSE over io_uring
 * (fuse_uring.c) requests arrive through the rings instead and these threads only see
 * FUSE_INIT, interrupts, forgets and whatever came before the rings were ready.
 *
 * Waiting. /dev/fuse is non-blocking: a thread reads, and only when nothing is there does
 * it sleep, in epoll_wait() on an epoll set of its own that holds /dev/fuse and kick_fd with
 * EPOLLEXCLUSIVE and the quit pipe without: a new request wakes one sleeping thread, not
 * all of them (with poll(), every idle thread woke for each request and all but one found
 * EAGAIN: two wasted system calls per request and idle thread). A thread busy with a request
 * is not in its epoll_wait(), so the kernel passes the wakeup on to one that is; a busy
 * thread reads again before it sleeps, and epoll is level-triggered, so no request waits
 * unseen.
 *
 * Stopping. pd_fuse_join() writes to the quit pipe, which wakes every sleeping thread at
 * once; no signal is involved, so no system call of a thread doing I/O is interrupted
 * (nbdkit's quit pipe). */
#define FUSE_USE_VERSION 34

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <sys/epoll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/util/barrier.h"
#include "core/util/log.h"
#include "daemon/daemon.h"
#include "daemon/fuse/data.h"
#include "daemon/fuse/fuse_uring.h"

static bool fuse_has_pending(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

/* A receive thread runs the I/O it dispatches itself (as blk-mq issues directly from the
 * submitter) unless that would leave FUSE requests waiting with no thread to read them: then
 * it hands the I/O to a worker and goes back for the next request. A FUSE request is left
 * waiting only when one is pending and every other receive thread is busy. */
static __thread bool tls_fuse_idle; /* this thread just saw no FUSE request left unread */

/* Another receive thread is in read() or waiting to: the kernel hands it the next request. */
static bool pd_reader_waiting(struct pd *pd)
{
	return READ_ONCE(pd->readers_waiting) != 0;
}

static bool pd_may_run_inline(void *arg)
{
	struct pd *pd = arg;

	return tls_fuse_idle || pd_reader_waiting(pd) || !fuse_has_pending(pd->fuse_fd);
}

/* A receive thread's epoll set: /dev/fuse and kick_fd exclusive, the quit pipe not.
 * Returns the epoll fd or -errno. */
static int pd_fuse_epoll_new(struct pd *pd)
{
	const struct {
		int fd;
		uint32_t events;
	} watch[] = {
		{ pd->fuse_fd, EPOLLIN | EPOLLEXCLUSIVE },
		{ pd->quit_pipe[0], EPOLLIN },
		{ pd->kick_fd, EPOLLIN | EPOLLEXCLUSIVE },
	};
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0) {
		int err = errno;

		log_err("epoll_create1: %s", strerror(err));
		return -err;
	}
	for (size_t i = 0; i < sizeof(watch) / sizeof(watch[0]); i++) {
		struct epoll_event ev = { .events = watch[i].events, .data.fd = watch[i].fd };

		if (epoll_ctl(ep, EPOLL_CTL_ADD, watch[i].fd, &ev) < 0) {
			int err = errno;

			log_err("epoll_ctl: %s", strerror(err));
			close(ep);
			return -err;
		}
	}
	return ep;
}

/* Sleep until /dev/fuse has a request or the quit pipe is written. Returns false on quit. */
static bool pd_fuse_wait(struct pd *pd, int ep)
{
	struct epoll_event ev[3];

	for (;;) {
		int n;
		bool go = true;

		atomic_add_return_relaxed(pd->readers_sleeping, 1);
		n = epoll_wait(ep, ev, 3, -1);
		atomic_sub_return_relaxed(pd->readers_sleeping, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			log_err("epoll_wait: %m");
			return false;
		}
		for (int i = 0; i < n; i++) {
			uint64_t v;

			if (ev[i].data.fd == pd->quit_pipe[0])
				go = false;
			/* Budget freed with requests parked: whoever reads the count submits them. */
			else if (ev[i].data.fd == pd->kick_fd &&
				 read(pd->kick_fd, &v, sizeof(v)) == sizeof(v))
				pd_data_unpark(pd);
		}
		return go; /* readable, or an error the next read reports */
	}
}

static void *pd_fuse_thread(void *arg)
{
	struct pd_fuse_thread *th = arg;
	struct pd *pd = th->pd;
	struct fuse_session *se = pd->se;
	struct fuse_buf fbuf = { .mem = NULL };
	int fd = pd->fuse_fd;
	bool woken = false, wait_first;

	io_set_thread_inline(pd_may_run_inline, pd);
	queue_set_unplugs_idle(true);
	pd_data_set_rxbuf(&fbuf);
	while (!fuse_session_exited(se)) {
		int res;

		pd_data_unpark(pd);
		/* Nothing more for this thread to submit: flush the plug before sleeping. When
		 * another receive thread waits in read(), the next request is its to submit, so
		 * this thread unplugs without asking the kernel: a poll() per request is a
		 * measurable part of a lone synchronous request's round trip. */
		if (queue_needs_unplug(&pd->q) && (pd_reader_waiting(pd) || !fuse_has_pending(fd))) {
			tls_fuse_idle = true; /* spares pd_may_run_inline() a second poll */
			queue_unplug_idle(&pd->q);
			tls_fuse_idle = false;
		}
		/* Our own buffers only: their capacity is known (PD_RXBUF_SIZE). */
		if (!fbuf.mem) {
			fbuf.mem = pd_data_rxbuf_get(pd);
			fbuf.size = PD_RXBUF_SIZE;
			if (!fbuf.mem) {
				log_err("malloc (receive buffer): %s", strerror(ENOMEM));
				break;
			}
		}
		/* Just done with a request while another thread sleeps for want of one: nothing
		 * was pending when it slept, and the next request wakes it, so this thread sleeps
		 * too, without a read that would mostly find EAGAIN (epoll is level-triggered: a
		 * request already there ends the wait at once). Under load no thread sleeps and
		 * each reads straight on. After a wait, a thread always reads. */
		wait_first = !woken && READ_ONCE(pd->readers_sleeping) != 0;
		woken = false;
		atomic_add_return_relaxed(pd->readers_waiting, 1);
		if (wait_first && !pd_fuse_wait(pd, th->epoll_fd)) {
			atomic_sub_return_relaxed(pd->readers_waiting, 1);
			break;
		}
		res = fuse_session_receive_buf(se, &fbuf);
		if (res == -EAGAIN) {
			bool go = pd_fuse_wait(pd, th->epoll_fd);

			atomic_sub_return_relaxed(pd->readers_waiting, 1);
			if (!go)
				break;
			woken = true;
			continue;
		}
		atomic_sub_return_relaxed(pd->readers_waiting, 1);
		if (res == -EINTR)
			continue;
		if (res <= 0) {
			if (res < 0 && res != -ENODEV)
				log_err("fuse_session_receive_buf: %s", strerror(-res));
			break;
		}
		fuse_session_process_buf(se, &fbuf);
	}
	pd_data_set_rxbuf(NULL);
	free(fbuf.mem);
	/* The kernel ended the session (unmounted from outside): tell the main thread. */
	if (!READ_ONCE(pd->stopping))
		kill(getpid(), SIGTERM);
	return NULL;
}

int pd_fuse_start(struct pd *pd)
{
	unsigned int want = pd->nr_threads;
	int fl;

	/* nr_threads counts the threads to join (pd_fuse_join()), whatever fails here. */
	pd->nr_threads = 0;
	pd->fuse_fd = fuse_session_fd(pd->se);
	fl = fcntl(pd->fuse_fd, F_GETFL);
	if (fl < 0 || fcntl(pd->fuse_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		int err = errno;

		log_err("fcntl /dev/fuse O_NONBLOCK: %s", strerror(err));
		return -err;
	}
	pd->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (pd->kick_fd < 0) {
		int err = errno;

		log_err("eventfd: %s", strerror(err));
		return -err;
	}
	if (pipe2(pd->quit_pipe, O_CLOEXEC) < 0) {
		int err = errno;

		log_err("pipe2: %s", strerror(err));
		return -err;
	}
	pd->threads = calloc(want, sizeof(*pd->threads));
	if (!pd->threads)
		return -ENOMEM;
	/* Set before the threads start, which read it (the data budget's parking rule). */
	pd->nr_threads = want;
	for (unsigned int i = 0; i < want; i++) {
		struct pd_fuse_thread *th = &pd->threads[i];
		int err;

		th->pd = pd;
		th->epoll_fd = pd_fuse_epoll_new(pd);
		if (th->epoll_fd < 0) {
			pd->nr_threads = i;
			return th->epoll_fd;
		}
		err = pthread_create(&th->tid, NULL, pd_fuse_thread, th);
		if (err) {
			log_err("pthread_create (fuse): %s", strerror(err));
			close(th->epoll_fd);
			pd->nr_threads = i;
			return -err;
		}
		/* Named here, not by the thread: named once this returns, before the mount. */
		pthread_setname_np(th->tid, "plugdisk-fuse");
	}
	return 0;
}

void pd_fuse_join(struct pd *pd)
{
	char c = 'q';

	/* The pipe stays readable: every thread sees it, whenever it next waits. */
	if (pd->quit_pipe[1] >= 0) {
		while (write(pd->quit_pipe[1], &c, 1) < 0 && errno == EINTR)
			;
	}
	for (unsigned int i = 0; i < pd->nr_threads; i++) {
		pthread_join(pd->threads[i].tid, NULL);
		close(pd->threads[i].epoll_fd);
	}
	/* The io_uring queues' threads receive requests too. */
	pd_uring_stop(pd);
	free(pd->threads);
	pd->threads = NULL;
	pd->nr_threads = 0;
	for (int i = 0; i < 2; i++) {
		if (pd->quit_pipe[i] >= 0)
			close(pd->quit_pipe[i]);
		pd->quit_pipe[i] = -1;
	}
	if (pd->kick_fd >= 0)
		close(pd->kick_fd);
	pd->kick_fd = -1;
}
