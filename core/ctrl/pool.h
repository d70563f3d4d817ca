/* SPDX-License-Identifier: MIT */
/* A pool of threads that run requests handed to it, in the order they were queued. */
#ifndef PLUGDISK_POOL_H
#define PLUGDISK_POOL_H

#include <pthread.h>
#include <stdbool.h>

#include "core/stage/request.h"

/* Runs one request; called from a pool thread with no pool lock held. */
typedef void (*pool_run_fn)(void *arg, struct request *rq);

struct pool {
	pthread_mutex_t lock;		/* taken after q->lock; never held while a request runs */
	pthread_cond_t cond;		/* lock: work arrived, or stop */
	struct request *head, *tail;	/* lock: requests linked by work_next */
	unsigned int nr_idle;		/* lock: threads waiting on cond */
	bool stop;			/* lock */
	unsigned int nr_threads;	/* written by pool_init(), read-only after */
	pthread_t *threads;
	pool_run_fn run;
	void *arg;
};

/* Start @nr threads, named @name, that call @run(@arg, rq) for each request queued.
 * Returns 0 or -errno (and then no thread is left running). */
int pool_init(struct pool *p, unsigned int nr, const char *name, pool_run_fn run, void *arg);

/* Let the threads finish what is queued, then join them. */
void pool_destroy(struct pool *p);

/* Append @list (linked by work_next, non-empty) and wake one idle thread per request, less
 * @self: how many of them the calling pool thread takes itself when it returns to the list.
 * Any thread; takes p->lock, which comes after q->lock in the lock order. */
void pool_queue(struct pool *p, struct request *list, unsigned int self);

/* Whether the calling thread is a pool thread (of any pool). */
bool pool_in_thread(void);

#endif
