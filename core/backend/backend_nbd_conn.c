// SPDX-License-Identifier: MIT
/* The NBD backend's connections: one libnbd handle each, its event-loop thread, and dropping
 * and remaking it.
 *
 * One libnbd handle per connection, each with its own event-loop thread that polls the
 * handle's socket and an eventfd, and drives libnbd with nbd_aio_notify_read/write. More than
 * one connection only where the server advertises multi-conn (core/backend/backend_nbd.c).
 *
 * Faults. A connection that dies (the server closed it, or its oldest command has had no
 * reply for backend.timeout_ms) is dropped: the handle is closed first, so that libnbd
 * touches no buffer any more, and then every command still in flight on it ends with EIO.
 * While no connection is up, new requests fail with EIO at once. The loop thread reconnects
 * with a backoff from 100 ms to 5 s, and checks that the export kept its size. One log line
 * when the backend loses a connection, one when every connection is back.
 *
 * Locking: core/backend/backend_nbd_int.h. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <libnbd.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/backend/backend_nbd_int.h"
#include "core/util/barrier.h"
#include "core/util/clock.h"
#include "core/util/log.h"

#define BACKOFF_MIN_NS (100 * NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (5 * NSEC_PER_SEC)
/* Asked of the socket: two commands of 1 MiB and their headers; the kernel caps it. */
#define NBD_SNDBUF_BYTES (2 * 1024 * 1024 + 4096)

/* The connection whose loop thread this is, if any. */
static __thread struct nbd_conn *tls_loop;

void nb_conn_wake(struct nbd_conn *c)
{
	uint64_t one = 1;

	if (tls_loop == c)
		return;
	if (write(c->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: the loop thread will wake anyway */
	}
}

static void nb_note_down(struct nbd_be *nb, struct nbd_conn *c, const char *why)
{
	pthread_mutex_lock(&nb->log_lock);
	nb->nr_down++;
	if (!nb->outage_logged) {
		nb->outage_logged = true;
		log_err("nbd %s: connection %u lost: %s; I/O fails with EIO until it is back "
			"(reconnecting)", nb->uri, c->idx, why);
	}
	pthread_mutex_unlock(&nb->log_lock);
}

/* A reconnect failed: log why, once per reason and outage. */
static void nb_note_retry(struct nbd_be *nb, const char *why)
{
	pthread_mutex_lock(&nb->log_lock);
	if (strcmp(nb->retry_why, why)) {
		snprintf(nb->retry_why, sizeof(nb->retry_why), "%s", why);
		log_warn("nbd %s: reconnecting: %s (retrying with backoff)", nb->uri, why);
	}
	pthread_mutex_unlock(&nb->log_lock);
}

static void nb_note_up(struct nbd_be *nb)
{
	pthread_mutex_lock(&nb->log_lock);
	nb->nr_down--;
	if (!nb->nr_down && nb->outage_logged) {
		nb->outage_logged = false;
		nb->retry_why[0] = '\0';
		log_info("nbd %s: connected again, working again", nb->uri);
	}
	pthread_mutex_unlock(&nb->log_lock);
}

/* Drop @c's connection: close the handle, then end what was in flight with EIO. Loop thread
 * (or open/close with no loop thread running). */
void nb_conn_drop(struct nbd_conn *c, const char *why)
{
	struct nbd_handle *h;
	struct nbd_cmd *list;

	pthread_mutex_lock(&c->lock);
	h = c->h;
	c->h = NULL;
	smp_store_release(c->state, CONN_DOWN);
	list = c->head;
	c->head = c->tail = NULL;
	c->defer_head = c->defer_tail = NULL; /* deferred commands are on the list too */
	for (struct nbd_cmd *cmd = list; cmd; cmd = cmd->next)
		cmd->linked = false;
	WRITE_ONCE(c->in_flight, 0);
	pthread_mutex_unlock(&c->lock);
	if (why)
		nb_note_down(c->nb, c, why);
	/* Acknowledged writes that no completed flush covers: the server may have lost them
	 * with the connection (a restart loses its cache). */
	if (why && c->nb->can_flush &&
	    smp_load_mb(c->last_write) > smp_load_mb(c->nb->flushed)) {
		smp_store_mb(c->nb->lost_writes, 1);
		log_warn("nbd %s: connection %u dropped with acknowledged writes not yet flushed; "
			 "the next flush fails with EIO", c->nb->uri, c->idx);
	}
	/* After nbd_close() libnbd writes into no buffer of ours. */
	if (h)
		nbd_close(h);
	while (list) {
		struct nbd_cmd *cmd = list;

		list = cmd->next;
		nb_cmd_finish(cmd, -EIO);
		nb_cmd_put(cmd);
	}
	nb_conn_process_done(c); /* whatever libnbd reported before it closed */
}

/* Poll @h (and the wake fd) for up to @timeout_ms and notify libnbd; on the connection's
 * own handle, mark it busy first (the caller ends that). Returns what poll returned. */
static int conn_poll_once(struct nbd_conn *c, struct nbd_handle *h, int timeout_ms)
{
	struct pollfd pfd[2];
	unsigned int dir = nbd_aio_get_direction(h);
	int n;

	pfd[0].fd = nbd_aio_get_fd(h);
	pfd[0].events = (short)(((dir & LIBNBD_AIO_DIRECTION_READ) ? POLLIN : 0) |
				((dir & LIBNBD_AIO_DIRECTION_WRITE) ? POLLOUT : 0));
	pfd[0].revents = 0;
	pfd[1].fd = c->wake_fd;
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	n = poll(pfd, pfd[0].fd >= 0 ? 2 : 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (pfd[1].revents & POLLIN) {
		uint64_t v;

		if (read(c->wake_fd, &v, sizeof(v)) < 0) {
			/* EAGAIN: another read took it */
		}
	}
	if (pfd[0].fd < 0 || !(pfd[0].revents & (POLLIN | POLLHUP | POLLERR | POLLOUT)))
		return n;
	/* While libnbd reads, and then while the replies are ended (nb_conn_process_done()),
	 * submitters leave their commands to this thread rather than sleep on the handle's
	 * lock; it starts them together, so they reach the server in a burst. A connection
	 * being made has no submitters. */
	if (h == c->h)
		nb_conn_busy(c);
	if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
		if (dir & LIBNBD_AIO_DIRECTION_READ)
			nbd_aio_notify_read(h);
		else
			nbd_aio_notify_write(h);
	} else {
		nbd_aio_notify_write(h);
	}
	return n;
}

/* A socket send buffer that holds a large write whole (the kernel caps it at wmem_max):
 * libnbd then sends a command in one call from the thread that starts it, instead of the
 * loop thread finishing it through rounds of POLLOUT as the server drains a small buffer. */
static void conn_size_sndbuf(struct nbd_handle *h)
{
	int fd = nbd_aio_get_fd(h);
	int want = NBD_SNDBUF_BYTES;

	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want)) < 0) {
		/* not a socket we may size: keep the default */
	}
}

/* libnbd's last error without the name of the libnbd call it starts with
 * ("nbd_aio_connect_uri: connect: ..."): the user gave a URI, not a call. */
static const char *nb_error_text(void)
{
	const char *e = nbd_get_error(), *p;

	if (!e)
		return "connection failed";
	p = e;
	if (!strncmp(p, "nbd_", 4)) {
		p += strspn(p, "abcdefghijklmnopqrstuvwxyz_");
		if (!strncmp(p, ": ", 2))
			return p + 2;
	}
	return e;
}

/* Connect @c (it must be down), waiting at most the timeout. On success the connection is up.
 * Checks the export against what the first connection found (size, read-only). @first: this
 * is the first connection, which learns them. 0 or -errno, @err set. */
/* Whether the export now offers less than the backend was set up with at the first
 * connection, in what the commands rely on: the flush (durability), trim and write-zeroes
 * (commands sent), multi-conn (a flush on one connection covering the others), the block
 * sizes (alignment and command size). @err says what changed. */
static bool conn_export_changed(struct nbd_be *nb, struct nbd_handle *h, char *err,
				size_t errlen)
{
	int64_t bmin = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
	int64_t bmax = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);
	uint32_t min = bmin > 0 ? (uint32_t)bmin : 1;
	bool flush = nbd_can_flush(h) == 1;

	if (flush != nb->can_flush)
		snprintf(err, errlen, "the export changed: flush %s, was %s",
			 flush ? "offered" : "not offered", nb->can_flush ? "offered" : "not offered");
	else if (nb->can_trim && nbd_can_trim(h) != 1)
		snprintf(err, errlen, "the export changed: trim no longer offered");
	else if (nb->can_zero && nbd_can_zero(h) != 1)
		snprintf(err, errlen, "the export changed: write zeroes no longer offered");
	else if (nb->nconns > 1 && nbd_can_multi_conn(h) != 1)
		snprintf(err, errlen, "the export changed: multi-conn no longer offered, and %u "
			 "connections rely on it", nb->nconns);
	else if (min > nb->block_min || (bmax > 0 && (uint64_t)bmax < nb->max_cmd))
		snprintf(err, errlen, "the export changed: block sizes minimum %u maximum %" PRId64
			 ", were %u and %u", min, bmax > 0 ? bmax : 0, nb->block_min,
			 nb->block_max);
	else
		return false;
	return true;
}

int nb_conn_connect(struct nbd_conn *c, bool first, char *err, size_t errlen)
{
	struct nbd_be *nb = c->nb;
	struct nbd_handle *h;
	uint64_t deadline;

	assert(nb); /* set for every connection before any is made */
	h = nbd_create();
	deadline = clock_now_ns() + (uint64_t)nb->timeout_ms * NSEC_PER_MSEC;
	int64_t size;
	int ro;

	if (!h) {
		snprintf(err, errlen, "nbd_create: %s", nbd_get_error());
		return -ENOMEM;
	}
	nbd_set_handle_name(h, "plugdisk");
	/* The URI comes from the configuration, which the daemon's owner controls: it may name
	 * local files (tls-psk-file=, tls-certificates=). */
	nbd_set_uri_allow_local_file(h, true);
	/* A read's reply is then a header and the data: two receives in the loop thread, where
	 * a structured one (a chunk header, the offset, the data) takes four. plugdisk asks for
	 * nothing that needs them (no block status); a server answers a failed read with its
	 * error before any data either way. With backend.structured_replies a server may send
	 * a hole as a chunk header instead of its zeroes, which saves a slow link's bandwidth:
	 * over a local socket, simple replies gave 1.15x the random 4 KiB reads. */
	nbd_set_request_structured_replies(h, nb->structured);
	smp_store_release(c->state, CONN_CONNECTING);
	if (nbd_aio_connect_uri(h, nb->uri) < 0)
		goto fail;
	while (!nbd_aio_is_ready(h)) {
		uint64_t now = clock_now_ns();

		if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h))
			goto fail;
		if (smp_load_acquire(c->stop)) {
			snprintf(err, errlen, "stopping");
			goto out_close;
		}
		if (now >= deadline) {
			snprintf(err, errlen, "no answer within %u ms (backend.timeout_ms)",
				 nb->timeout_ms);
			goto out_close;
		}
		conn_poll_once(c, h, (int)((deadline - now) / NSEC_PER_MSEC) + 1);
	}
	size = nbd_get_size(h);
	ro = nbd_is_read_only(h);
	if (size < 0 || ro < 0)
		goto fail;
	if (first) {
		char *name = nbd_get_export_name(h);
		const char *proto = nbd_get_protocol(h);
		int64_t bmin = nbd_get_block_size(h, LIBNBD_SIZE_MINIMUM);
		int64_t bpref = nbd_get_block_size(h, LIBNBD_SIZE_PREFERRED);
		int64_t bmax = nbd_get_block_size(h, LIBNBD_SIZE_MAXIMUM);

		snprintf(nb->export_name, sizeof(nb->export_name), "%s", name ? name : "");
		free(name);
		snprintf(nb->protocol, sizeof(nb->protocol), "%s", proto ? proto : "");
		nb->be->size = (uint64_t)size;
		nb->read_only = ro == 1;
		nb->can_flush = nbd_can_flush(h) == 1;
		nb->can_trim = nbd_can_trim(h) == 1;
		nb->can_zero = nbd_can_zero(h) == 1;
		nb->can_fua = nbd_can_fua(h) == 1;
		nb->can_multi_conn = nbd_can_multi_conn(h) == 1;
		nb->tls = nbd_get_tls_negotiated(h) == 1;
		nb->structured_negotiated = nbd_get_structured_replies_negotiated(h) == 1;
		nb->block_min = bmin > 0 ? (uint32_t)bmin : 1;
		nb->block_pref = bpref > 0 ? (uint32_t)bpref : 4096;
		nb->block_max = bmax > 0 ? (uint32_t)bmax : 0;
	} else if ((uint64_t)size != nb->be->size || (ro == 1) != nb->read_only) {
		snprintf(err, errlen, "the export changed: %" PRId64 " bytes%s, was %" PRIu64
			 " bytes%s", size, ro == 1 ? " read-only" : "", nb->be->size,
			 nb->read_only ? " read-only" : "");
		goto out_close;
	} else if (conn_export_changed(nb, h, err, errlen)) {
		goto out_close;
	}
	conn_size_sndbuf(h);
	pthread_mutex_lock(&c->lock);
	c->h = h;
	smp_store_release(c->state, CONN_UP);
	pthread_mutex_unlock(&c->lock);
	return 0;

fail:
	snprintf(err, errlen, "%s", nb_error_text());
out_close:
	nbd_close(h);
	smp_store_release(c->state, CONN_DOWN);
	return -EIO;
}

static bool always(void *arg)
{
	(void)arg;
	return true;
}

void *nb_conn_loop(void *arg)
{
	struct nbd_conn *c = arg;
	struct nbd_be *nb = c->nb;
	uint64_t timeout_ns = (uint64_t)nb->timeout_ms * NSEC_PER_MSEC;
	uint64_t backoff = BACKOFF_MIN_NS, retry_at = 0;
	/* The oldest command in flight when the last replies were ended: any started since is
	 * newer, and one ended since only makes the wait below end early. */
	uint64_t oldest = 0;
	char err[256];

	pthread_setname_np(pthread_self(), "plugdisk-nbd");
	tls_loop = c;
	/* Ending a request dispatches the next ones; starting an NBD command never blocks, so
	 * this thread starts them itself instead of handing them to a worker. */
	io_set_thread_inline(always, NULL);
	while (!smp_load_acquire(c->stop)) {
		struct nbd_handle *h = c->h; /* only this thread changes it */
		uint64_t now = clock_now_ns();
		/* With nothing in flight, wake after timeout_ms all the same: a command started
		 * meanwhile is then at most that old, so its timeout is never missed, and the
		 * submitter need not wake this thread for it. */
		int wait_ms = (int)nb->timeout_ms;

		if (!h) {
			if (now < retry_at) {
				struct pollfd p = { .fd = c->wake_fd, .events = POLLIN };
				uint64_t v;

				if (poll(&p, 1, (int)((retry_at - now) / NSEC_PER_MSEC) + 1) > 0 &&
				    read(c->wake_fd, &v, sizeof(v)) < 0) {
					/* taken already */
				}
				continue;
			}
			if (nb_conn_connect(c, false, err, sizeof(err)) < 0) {
				if (smp_load_acquire(c->stop))
					break;
				nb_note_retry(nb, err);
				retry_at = clock_now_ns() + backoff;
				backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
				continue;
			}
			backoff = BACKOFF_MIN_NS;
			atomic_add_return_relaxed(c->reconnects, 1);
			nb_note_up(nb);
			continue;
		}
		if (oldest) {
			uint64_t due = oldest + timeout_ns;

			wait_ms = due > now ? (int)((due - now) / NSEC_PER_MSEC) + 1 : 0;
		}
		conn_poll_once(c, h, wait_ms);
		oldest = nb_conn_process_done(c);
		if (nbd_aio_is_dead(h) || nbd_aio_is_closed(h)) {
			const char *e = nbd_get_error();

			snprintf(err, sizeof(err), "%s", e ? e : "the server closed the connection");
			nb_conn_drop(c, err);
			retry_at = clock_now_ns() + backoff;
			oldest = 0;
			continue;
		}
		if (oldest && clock_now_ns() - oldest > timeout_ns) {
			atomic_add_return_relaxed(c->timeouts, 1);
			snprintf(err, sizeof(err), "no reply within %u ms (backend.timeout_ms)",
				 nb->timeout_ms);
			nb_conn_drop(c, err);
			retry_at = clock_now_ns() + backoff;
			oldest = 0;
		}
	}
	return NULL;
}
