// SPDX-License-Identifier: MIT
/* The request's op names, waiting for one request's I/O through any stage, and the per-thread
 * inline hint (core/stage/request.h). */
#include <pthread.h>
#include <stdbool.h>

#include "core/stage/request.h"

const char *const bio_op_name[BIO_OP_NR] = { "read", "write", "flush", "discard" };

/* Per thread: may this thread run I/O it dispatches? */
static __thread io_inline_fn tls_inline_fn;
static __thread void *tls_inline_arg;

void io_set_thread_inline(io_inline_fn fn, void *arg)
{
	tls_inline_fn = fn;
	tls_inline_arg = arg;
}

io_inline_fn io_thread_inline(void **arg)
{
	*arg = tls_inline_arg;
	return tls_inline_fn;
}

struct io_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;	/* lock */
	int error;	/* lock */
};

static void io_wait_done(struct request *rq, int error)
{
	struct io_waiter *w = rq->io_done_arg;

	pthread_mutex_lock(&w->lock);
	w->error = error;
	w->done = true;
	/* Signalled under the lock: the waiter's stack frame holds @w and may go once it sees
	 * done. */
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int io_exec_wait(io_exec_fn fn, void *arg, struct request *rq)
{
	struct io_waiter w = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER };
	int ret;

	rq->io_done = io_wait_done;
	rq->io_done_arg = &w;
	ret = fn(arg, rq);
	if (ret != IO_ASYNC)
		return ret;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	ret = w.error;
	pthread_mutex_unlock(&w.lock);
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	return ret;
}
