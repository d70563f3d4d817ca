// SPDX-License-Identifier: MIT
/* The backend worker pool: threads that take requests off one list and run them.
 *
 * The threads wait on one condition variable. Work is queued in batches (a dispatch hands over
 * every request it admitted), and the queuer wakes no more threads than there are idle ones
 * or requests beyond the ones the calling worker will take itself: a busy thread goes back to
 * the list when it finishes, so waking more only costs futex calls and lock contention. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"
#include "core/ctrl/pool.h"

static __thread bool tls_pool_thread;

bool pool_in_thread(void)
{
	return tls_pool_thread;
}

static void *pool_thread(void *arg)
{
	struct pool *p = arg;

	tls_pool_thread = true;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct request *rq;

		while (!p->head && !p->stop) {
			p->nr_idle++;
			pthread_cond_wait(&p->cond, &p->lock);
			p->nr_idle--;
		}
		if (!p->head)
			break;
		rq = p->head;
		p->head = rq->work_next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		p->run(p->arg, rq);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int pool_init(struct pool *p, unsigned int nr, const char *name, pool_run_fn run, void *arg)
{
	memset(p, 0, sizeof(*p));
	p->run = run;
	p->arg = arg;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (!nr)
		return 0;
	p->threads = calloc(nr, sizeof(*p->threads));
	if (!p->threads) {
		pool_destroy(p);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < nr; i++) {
		int err = pthread_create(&p->threads[i], NULL, pool_thread, p);

		if (err) {
			log_err("pthread_create (%s): %s", name, strerror(err));
			pool_destroy(p);
			return -err;
		}
		pthread_setname_np(p->threads[i], name);
		p->nr_threads++;
	}
	return 0;
}

void pool_destroy(struct pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_mutex_unlock(&p->lock);
	pthread_cond_broadcast(&p->cond);
	for (unsigned int i = 0; i < p->nr_threads; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	p->threads = NULL;
	p->nr_threads = 0;
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
}

void pool_queue(struct pool *p, struct request *list, unsigned int self)
{
	struct request *tail = list;
	unsigned int n = 1, wake;

	while (tail->work_next) {
		tail = tail->work_next;
		n++;
	}
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->work_next = list;
	else
		p->head = list;
	p->tail = tail;
	wake = n > self ? n - self : 0;
	if (wake > p->nr_idle)
		wake = p->nr_idle;
	pthread_mutex_unlock(&p->lock);
	while (wake--)
		pthread_cond_signal(&p->cond);
}
