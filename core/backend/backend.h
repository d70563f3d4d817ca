/* SPDX-License-Identifier: MIT */
/* The backing store behind the controller, as an interface: an ops table that every backend
 * implements, and the common fields the daemon and the controller read. Two backends exist:
 *   - the file backend (core/backend/backend.c): a regular file (created sparse) or a block device,
 *     held exclusively; opened with backend_open();
 *   - the NBD backend (core/backend/backend_nbd.c, linked into the daemon only, since it needs
 *     libnbd): an export of an NBD server; opened with backend_nbd_open().
 * disk.image chooses: an NBD URI (backend_uri_is_nbd()) is NBD, anything else a path. */
#ifndef PLUGDISK_BACKEND_H
#define PLUGDISK_BACKEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/stage/request.h"

struct backend;
struct stats_table;

struct backend_ops {
	const char *kind;	/* "file", "nbd": the stats file's `backend` comment */
	/* Requests wait on a server (a network round trip): the FUSE side lets the most in
	 * (chain_may_hold()). */
	bool remote;
	/* An I/O stage (core/stage/request.h): run @rq, return 0/-errno or IO_ASYNC. @be is the backend. */
	int (*exec)(void *be, struct request *rq);
	/* Make every completed write durable. 0 or -errno. May block. */
	int (*sync)(struct backend *be);
	/* Release everything. Nothing may be in flight. */
	void (*close)(struct backend *be);
	/* Append `name value` lines (and `#` comments) to @buf; returns the length written
	 * (< @len, NUL-terminated). NULL: the backend has nothing to show. */
	size_t (*stats)(struct backend *be, char *buf, size_t len);
	const struct stats_table *stats_table;	/* the names stats() writes */
};

struct backend {
	const struct backend_ops *ops;	/* NULL until opened */
	/* Set at open, read-only after. */
	uint64_t size;		/* bytes */
	bool read_only;		/* writes and discards fail with EROFS */
	uint32_t block_size;	/* bytes: I/O must be aligned to this (1 = any) */
	uint32_t max_request;	/* bytes: largest request the backend takes in one command;
				 * 0 = no limit. The daemon caps queue.max_request_size by it. */
	char *path;		/* what disk.image named: a path or a URI (for logs) */
	void *priv;		/* the backend's own state (NBD) */

	/* The file backend's state. */
	int fd;
	bool is_blockdev;
	/* Fault reporting: one log line when an op starts failing, one when it recovers. */
	pthread_mutex_t fault_lock;
	int fault[BIO_OP_NR];	/* fault_lock: last error of each op, 0 when healthy */
};

/* The backing store's connection settings (NBD; the file backend has none). */
struct backend_params {
	uint32_t connections;		/* controller.connections: 0 = what the server allows,
					 * two per online CPU, at most
					 * BACKEND_DEFAULT_CONNECTIONS */
	uint32_t timeout_ms;		/* backend.timeout_ms: no reply for this long = dead */
	bool structured_replies;	/* backend.structured_replies: ask the server for them */
};

#define BACKEND_DEFAULT_CONNECTIONS	4u
#define BACKEND_MAX_CONNECTIONS		16u
#define BACKEND_DEFAULT_TIMEOUT_MS	30000u

void backend_params_default(struct backend_params *bp);

/* Errors of backend_open(), beyond -errno, that the daemon reports distinctly. */
#define BACKEND_ESIZE 1000	/* existing image of another size */
#define BACKEND_ELOCKED 1001	/* another process holds the image */

/* The file backend. Open @path read-write without following symlinks, creating a sparse file
 * of @size if it is missing (@size 0: use the existing file's or device's size). Refuses an
 * existing image of another size, a directory, a symlink, and an image another process holds
 * (exclusive flock). Returns 0 or a negative errno / -BACKEND_E*; @err gets a one-line
 * reason. */
int backend_open(struct backend *be, const char *path, uint64_t size, char *err, size_t errlen);

/* As backend_open(), read-only (disk.read_only): the image is opened O_RDONLY and must exist,
 * its lock is shared with other read-only users, and writes and discards fail with EROFS. */
int backend_open_read_only(struct backend *be, const char *path, uint64_t size, char *err,
			   size_t errlen);

/* Run @rq's I/O through @be's backend (an I/O stage, core/stage/request.h): 0/-errno or IO_ASYNC.
 * Writes and discards to a read-only backend fail with -EROFS. Any thread. */
int backend_exec(void *be, struct request *rq);

/* Make every completed write durable (fdatasync, NBD_CMD_FLUSH). Returns 0 or -errno. */
int backend_sync(struct backend *be);

/* Append the backend's stats lines to @buf (see backend_ops.stats). */
size_t backend_stats(struct backend *be, char *buf, size_t len);

/* Close @be; safe on a backend that was never opened or is already closed. */
void backend_close(struct backend *be);

/* A read-only source of zeroes that writers of zeroes (fallocate ZERO_RANGE) point their
 * iovecs at. A write request whose every iovec points into it is a request to zero its range,
 * which a backend may serve without moving data (NBD WRITE_ZEROES). */
#define BACKEND_ZERO_CHUNK (64u * 1024u)
extern const char backend_zero_chunk[BACKEND_ZERO_CHUNK];

/* Whether @rq writes only zeroes from backend_zero_chunk. */
bool backend_rq_is_zeroes(const struct request *rq);

/* ---- disk.image: a path or an NBD URI (core/backend/backend_uri.c) ---- */

/* Whether @image names an NBD export (nbd://, nbds://, nbd+unix://, nbds+unix://, and the
 * +vsock forms) rather than a path. */
bool backend_uri_is_nbd(const char *image);

/* An NBD URI taken apart, for checking it before connecting and for the stats file. */
struct nbd_uri {
	bool tls;		/* nbds... */
	bool unix_socket;	/* +unix: socket= is the path */
	bool vsock;		/* +vsock */
	char host[256];		/* TCP or vsock: the host ("" for +unix) */
	unsigned int port;	/* TCP: 10809 when not given */
	char export_name[4096];	/* the path after the first '/', %-decoded ("" = default) */
	char socket[4096];	/* +unix: the socket path */
};

/* Parse @uri. Returns 0, or -EINVAL with a one-line reason in @err. */
int nbd_uri_parse(const char *uri, struct nbd_uri *u, char *err, size_t errlen);

/* Check disk.image @image before anything opens it: an NBD URI must parse, and a string that
 * starts like a URI of another scheme ("http://", "NBD://", "nbd:/x") is refused rather than
 * taken as a path (write "./http:/x" for such a file). 0, or -EINVAL with a one-line reason
 * in @err; a path is otherwise checked when it is opened. */
int backend_image_check(const char *image, char *err, size_t errlen);

#endif
