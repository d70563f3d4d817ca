// SPDX-License-Identifier: MIT
/* The NBD backend, through libnbd's asynchronous API: opening it (the first connection learns
 * the export) and closing it; its stats are core/backend/backend_nbd_stats.c. The connections and their loop threads are
 * core/backend/backend_nbd_conn.c, the commands core/backend/backend_nbd_cmd.c; what they share, with the
 * lock order, core/backend/backend_nbd_int.h.
 *
 * Connections. More than one connection only where the server advertises multi-conn (then a
 * flush on any connection covers the writes completed on all of them); controller.connections
 * sets how many, by default two per online CPU up to 4 (nb_default_connections()). */
#include <errno.h>
#include <inttypes.h>
#include <libnbd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/backend/backend_nbd_int.h"
#include "core/util/barrier.h"
#include "core/util/log.h"
#include "core/util/text.h"

/* Without a maximum from the server, the protocol says a client should not send more. */
#define NBD_DEFAULT_MAX (32u * 1024 * 1024)

/* Connections when controller.connections is 0: two per online CPU, at most
 * BACKEND_DEFAULT_CONNECTIONS. Each connection has a loop thread that reads its replies and
 * ends their requests, which includes the FUSE reply, and starts the commands that came
 * meanwhile in a burst; the server serves each connection with threads of its own. (Measured
 * on 2 CPUs against nbdkit file on a Unix socket, 4 KiB at QD32 through a loop device on FUSE
 * over io_uring, 8 rounds side by side: against two connections, three and four did 1.18x
 * and 1.11x the random writes, 1.05x and 0.99x the random reads; in 6 more rounds four did
 * 1.12x the writes and 1.21x the reads of two. Two did 1.2-1.35x the I/O of one.) */
static unsigned int nb_default_connections(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		cpus = 1; /* unknown: as one */
	return cpus * 2 >= BACKEND_DEFAULT_CONNECTIONS ? BACKEND_DEFAULT_CONNECTIONS
						      : (unsigned int)cpus * 2;
}

static void nb_free(struct nbd_be *nb)
{
	for (unsigned int i = 0; i < nb->nconns; i++) {
		struct nbd_conn *c = &nb->conns[i];

		if (c->thread_started) {
			smp_store_release(c->stop, 1); /* pairs with the loop's acquire */
			nb_conn_wake(c);
			pthread_join(c->thread, NULL);
		}
		if (c->h) {
			nbd_aio_disconnect(c->h, 0); /* polite: NBD_CMD_DISC, best effort */
			nb_conn_drop(c, NULL);
		}
		if (c->wake_fd >= 0)
			close(c->wake_fd);
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->done_lock);
	}
	pthread_mutex_destroy(&nb->log_lock);
	free(nb->conns);
	free(nb->uri);
	free(nb);
}

static void nbd_be_close(struct backend *be)
{
	if (be->priv)
		nb_free(be->priv);
	be->priv = NULL;
}

static const struct backend_ops nbd_ops = {
	.kind = "nbd",
	.remote = true,
	.exec = nb_exec,
	.sync = nb_sync,
	.close = nbd_be_close,
	.stats = nb_stats,
	.stats_table = &backend_nbd_stats_table,
};

int backend_nbd_open(struct backend *be, const char *uri, const struct backend_params *p,
		     uint64_t size, char *err, size_t errlen)
{
	struct nbd_be *nb;
	struct nbd_handle *probe;
	unsigned int want;
	char why[256];
	int ret;

	memset(be, 0, sizeof(*be));
	be->fd = -1;
	nb = calloc(1, sizeof(*nb));
	if (!nb) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	pthread_mutex_init(&nb->log_lock, NULL);
	nb->be = be;
	nb->timeout_ms = p->timeout_ms;
	nb->structured = p->structured_replies;
	nb->uri = strdup(uri);
	if (!nb->uri || nbd_uri_parse(uri, &nb->u, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", uri, nb->uri ? why : "out of memory");
		ret = -EINVAL;
		goto fail_nb;
	}
	probe = nbd_create();
	if (!probe) {
		snprintf(err, errlen, "nbd_create: %s", nbd_get_error());
		ret = -ENOMEM;
		goto fail_nb;
	}
	ret = nbd_supports_uri(probe) == 1 && (!nb->u.tls || nbd_supports_tls(probe) == 1);
	nbd_close(probe);
	if (!ret) {
		snprintf(err, errlen, "%s: this libnbd was built without %s support", uri,
			 nb->u.tls ? "TLS" : "URI");
		ret = -ENOTSUP;
		goto fail_nb;
	}
	want = p->connections ? p->connections : nb_default_connections();
	if (!want)
		want = 1; /* the first connection is always made */
	nb->conns = calloc(want, sizeof(*nb->conns));
	if (!nb->conns) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto fail_nb;
	}
	for (unsigned int i = 0; i < want; i++) {
		struct nbd_conn *c = &nb->conns[i];

		c->nb = nb;
		c->idx = i;
		pthread_mutex_init(&c->lock, NULL);
		pthread_mutex_init(&c->done_lock, NULL);
		c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		nb->nconns++;
		if (c->wake_fd < 0) {
			ret = -errno;
			snprintf(err, errlen, "eventfd: %s", strerror(-ret));
			goto fail_nb;
		}
	}
	ret = nb_conn_connect(&nb->conns[0], true, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: cannot connect: %s", uri, why);
		goto fail_nb;
	}
	/* More than one connection only where a flush on one covers the others. */
	if (!nb->can_multi_conn) {
		if (p->connections > 1)
			log_warn("nbd %s: the server does not advertise multi-conn: using one "
				 "connection, not %u (controller.connections)", uri, p->connections);
		want = 1;
	}
	for (unsigned int i = 1; i < want; i++) {
		ret = nb_conn_connect(&nb->conns[i], false, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: connection %u: %s", uri, i, why);
			goto fail_nb;
		}
	}
	/* Connections beyond @want were never connected: forget them. */
	for (unsigned int i = want; i < nb->nconns; i++) {
		close(nb->conns[i].wake_fd);
		pthread_mutex_destroy(&nb->conns[i].lock);
		pthread_mutex_destroy(&nb->conns[i].done_lock);
	}
	nb->nconns = want;
	if (!be->size || be->size % 512) {
		snprintf(err, errlen, "%s: export size %" PRIu64 " is not a positive multiple of 512",
			 uri, be->size);
		ret = -EINVAL;
		goto fail_nb;
	}
	if (size && size != be->size) {
		snprintf(err, errlen, "%s: export has %" PRIu64 " bytes but disk.size is %" PRIu64
			 " bytes", uri, be->size, size);
		ret = -BACKEND_ESIZE;
		goto fail_nb;
	}
	if (nb->block_min > 4096) {
		snprintf(err, errlen, "%s: the server's minimum block size is %u bytes; plugdisk "
			 "takes at most 4096", uri, nb->block_min);
		ret = -EINVAL;
		goto fail_nb;
	}
	nb->max_cmd = nb->block_max ? nb->block_max : NBD_DEFAULT_MAX;
	if (nb->max_cmd > NBD_DEFAULT_MAX)
		nb->max_cmd = NBD_DEFAULT_MAX;
	nb->max_cmd -= nb->max_cmd % (nb->block_min > 512 ? nb->block_min : 512);
	be->read_only = nb->read_only;
	be->block_size = nb->block_min;
	be->max_request = nb->max_cmd;
	be->path = strdup(uri);
	be->priv = nb;
	be->ops = &nbd_ops;
	for (unsigned int i = 0; i < nb->nconns; i++) {
		struct nbd_conn *c = &nb->conns[i];

		ret = pthread_create(&c->thread, NULL, nb_conn_loop, c);
		if (ret) {
			snprintf(err, errlen, "pthread_create: %s", strerror(ret));
			ret = -ret;
			goto fail_nb;
		}
		c->thread_started = true;
	}
	return 0;

fail_nb:
	be->ops = NULL;
	be->priv = NULL;
	free(be->path);
	be->path = NULL;
	nb_free(nb);
	return ret;
}
