/* SPDX-License-Identifier: MIT */
/* What the NBD backend's files share and nobody else sees: a connection, a command, the
 * backend's state, and the calls between the connections (core/backend/backend_nbd_conn.c), the
 * commands (core/backend/backend_nbd_cmd.c) and open/close/stats (core/backend/backend_nbd.c). Include only
 * from core/backend/backend_nbd*.c: like them, it is linked into the daemon only.
 *
 * Locking. conn->lock guards the handle pointer, the state, the in-flight list and the
 * deferred list; submitters call nbd_aio_* with it held, so the loop thread can take the
 * handle away and close it. While the loop thread is in libnbd reading replies, and ending
 * them (conn->busy), a submitter does not wait for libnbd's handle lock: it leaves its
 * command on the deferred list, which the loop thread starts when it is done. Only the loop
 * thread replaces conn->h. conn->done_lock guards the done list and is taken inside libnbd's
 * handle lock by the callback. Order: conn->lock, then libnbd's handle lock, then
 * conn->done_lock. nb->log_lock is taken alone. No lock is held while a
 * request's io_done runs. */
#ifndef PLUGDISK_BACKEND_NBD_INT_H
#define PLUGDISK_BACKEND_NBD_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/backend/backend.h"
#include "core/backend/backend_nbd.h"
#include "core/stage/request.h"
#include "core/util/stats_table.h"

struct nbd_handle;

enum conn_state { CONN_DOWN, CONN_CONNECTING, CONN_UP };

struct nbd_conn;
struct nbd_be;

/* One request on the wire: one or more NBD commands. */
struct nbd_io {
	struct request *rq;
	char *buf;		/* the data: the request's one buffer, or @bounce */
	char *bounce;		/* a request of several buffers: one copy of them */
	bool zero;		/* a write of zeroes sent as WRITE_ZEROES */
	unsigned int parts;	/* atomic: commands not ended, +1 while still being started */
	int error;		/* atomic: first error, as -errno */
};

struct nbd_cmd {
	struct nbd_io *io;
	struct nbd_conn *conn;
	uint64_t start_ns;
	uint64_t off, len;		/* what it reads or writes, at @buf: set before it is */
	char *buf;			/* linked, then read-only */
	struct nbd_cmd *defer_next;	/* conn->lock: the deferred list */
	struct nbd_cmd *prev, *next;	/* conn->lock: the in-flight list, oldest first */
	bool linked;			/* conn->lock: on the in-flight list */
	int finished;			/* atomic: ended (exchange) */
	int error;			/* the completion callback's errno (done_lock), or a
					 * deferred start's -errno (loop thread, conn->lock) */
	struct nbd_cmd *done_next;	/* conn->done_lock */
	unsigned int refs;		/* atomic */
	uint64_t covers;		/* a flush: writes numbered up to this (nb->wseq) were
					 * acknowledged before it started; set before linked */
};

struct nbd_conn {
	struct nbd_be *nb;
	unsigned int idx;
	pthread_t thread;
	bool thread_started;
	int wake_fd;			/* eventfd: new data to send, a callback elsewhere, stop */
	pthread_mutex_t lock;
	struct nbd_handle *h;		/* lock; replaced only by the loop thread */
	int state;			/* lock to change, with release; acquire to read without
					 * it (enum conn_state) */
	struct nbd_cmd *head, *tail;	/* lock: in flight, oldest first */
	bool busy;			/* the loop thread is in libnbd (reading replies, or
					 * sending) and then ends replies: set without the
					 * lock (atomic), cleared under it */
	struct nbd_cmd *defer_head, *defer_tail; /* lock: linked, not started (busy) */
	unsigned int in_flight;		/* lock to change; atomic to read */
	pthread_mutex_t done_lock;
	struct nbd_cmd *done_head, *done_tail;	/* done_lock */
	uint64_t reconnects;		/* atomic */
	uint64_t timeouts;		/* atomic: dropped for no reply within timeout_ms */
	uint64_t last_write;		/* atomic: the number (nb->wseq) of the last write or
					 * trim the server acknowledged on this connection */
	uint64_t deferred;		/* lock to change; atomic to read: commands the loop
					 * thread started for a submitter (busy) */
	int stop;			/* atomic */
};

struct nbd_be {
	struct backend *be;
	char *uri;
	struct nbd_uri u;
	uint32_t timeout_ms;
	bool structured;		/* backend.structured_replies: asked for */
	unsigned int nconns;
	struct nbd_conn *conns;
	/* What the server said at the first connection; read-only after open. */
	char export_name[256];
	char protocol[32];
	bool can_flush, can_trim, can_zero, can_fua, can_multi_conn, read_only, tls;
	bool structured_negotiated;
	uint32_t block_min, block_pref, block_max;
	uint32_t max_cmd;		/* bytes per command */
	/* Outage reporting across connections. */
	pthread_mutex_t log_lock;
	unsigned int nr_down;		/* log_lock: connections not up */
	bool outage_logged;		/* log_lock */
	char retry_why[256];		/* log_lock: the last reconnect failure logged */
	uint64_t failed_fast;		/* atomic: requests failed while no connection was up */
	/* Writes acknowledged on a connection that dropped before a flush covered them may be
	 * gone (a server that restarted lost its cache); the next flush must not report them
	 * durable. Writes and trims are numbered as the server acknowledges them; a completed
	 * flush covers those numbered before it started (on every connection: more than one
	 * only with multi-conn). */
	uint64_t wseq;			/* atomic: writes and trims acknowledged */
	uint64_t flushed;		/* atomic: the largest number a completed flush covers */
	int lost_writes;		/* atomic: a drop lost unflushed writes; the next flush
					 * fails with EIO */
};

/* --- connections (core/backend/backend_nbd_conn.c) */

/* Wake @c's loop thread (not from the loop thread itself). Any thread, any lock. */
void nb_conn_wake(struct nbd_conn *c);

/* Connect @c (it must be down), waiting at most the timeout. On success the connection is up.
 * Checks the export against what the first connection found (size, read-only). @first: this
 * is the first connection, which learns them. 0 or -errno, @err set. */
int nb_conn_connect(struct nbd_conn *c, bool first, char *err, size_t errlen);

/* Drop @c's connection: close the handle, then end what was in flight with EIO; @why (NULL:
 * a planned close) is logged once per outage. Loop thread (or open/close with no loop thread
 * running), no lock held. */
void nb_conn_drop(struct nbd_conn *c, const char *why);

/* @c's loop thread (pthread_create's start routine): polls, ends replies, drops dead or timed
 * out connections and reconnects, until c->stop. */
void *nb_conn_loop(void *arg);

/* --- commands (core/backend/backend_nbd_cmd.c) */

/* Drop a reference to @cmd; the last one frees it. */
void nb_cmd_put(struct nbd_cmd *cmd);

/* End @cmd once, with @err (-errno or 0). No lock held: may end its request. */
void nb_cmd_finish(struct nbd_cmd *cmd, int err);

/* The loop thread goes into libnbd to read replies, and will end them: submitters defer to
 * it. No lock held. */
void nb_conn_busy(struct nbd_conn *c);

/* End every command on @c's done list, then start the commands deferred meanwhile (ending
 * any that could not start) and clear busy. Returns the start time of the oldest command in
 * flight, 0 if none. Loop thread, no lock held. */
uint64_t nb_conn_process_done(struct nbd_conn *c);

/* The backend ops' exec (an I/O stage, core/stage/request.h; @arg is the struct backend) and sync (a
 * flush outside the queue, at stop). */
int nb_exec(void *arg, struct request *rq);
int nb_sync(struct backend *be);

/* The backend ops' stats: its section of the stats file (core/backend/backend_nbd_stats.c). */
size_t nb_stats(struct backend *be, char *buf, size_t len);

#endif
