/* SPDX-License-Identifier: MIT */
/* The I/O stage contract: how the controller hands a request to what executes it (a fault
 * layer, a write cache, a file or NBD backend), synchronously or asynchronously.
 *
 * A stage is a function and its argument. It runs @rq's I/O and returns 0 or -errno when the
 * I/O is done, or IO_ASYNC when it has started the I/O and will report the end later by
 * calling rq->io_done(rq, error) exactly once, from any thread, with no lock of the caller's
 * held. The caller sets rq->io_done (and rq->io_done_arg, for its own use) before calling the
 * stage; a stage that passes @rq down to a lower stage may set its own io_done first and
 * chain to the caller's from it. A stage never keeps @rq after it has reported its end. */
#ifndef PLUGDISK_IO_H
#define PLUGDISK_IO_H

#include "core/queue/bio.h"

/* Returned by an io_exec_fn that will end the request through rq->io_done. */
#define IO_ASYNC 1

/* Run @rq's I/O: 0 or -errno when done, or IO_ASYNC. */
typedef int (*io_exec_fn)(void *arg, struct request *rq);

/* Run @rq through @fn and wait for its end, whether @fn ends it synchronously or not.
 * Returns 0 or -errno. Sets rq->io_done and rq->io_done_arg. Any thread that may block. */
int io_exec_wait(io_exec_fn fn, void *arg, struct request *rq);

#endif
