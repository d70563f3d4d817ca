/* SPDX-License-Identifier: MIT */
/* Unit tests of the backend worker pool (core/ctrl/pool.c): every queued request runs exactly once,
 * in a pool thread, and destroying the pool runs what is still queued first. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctrl/pool.h"
#include "tests/unit/suite.h"

enum { N = 5000 };

struct counts {
	pthread_mutex_t lock;
	unsigned int runs[N];	/* lock */
	unsigned int outside;	/* lock: runs seen outside a pool thread */
	unsigned int total;	/* lock */
};

static struct request rqs[N];
static struct counts C;

static void count_run(void *arg, struct request *rq)
{
	struct counts *c = arg;
	bool in_pool = pool_in_thread();

	pthread_mutex_lock(&c->lock);
	c->runs[rq - rqs]++;
	c->outside += !in_pool;
	c->total++;
	pthread_mutex_unlock(&c->lock);
}

/* Link rqs[first .. first + n) by work_next. */
static struct request *chain(unsigned int first, unsigned int n)
{
	for (unsigned int i = first; i < first + n; i++)
		rqs[i].work_next = i + 1 < first + n ? &rqs[i + 1] : NULL;
	return &rqs[first];
}

static void counts_reset(void)
{
	memset(&C, 0, sizeof(C));
	memset(rqs, 0, sizeof(rqs));
	pthread_mutex_init(&C.lock, NULL);
}

static void assert_each_ran_once(void)
{
	pthread_mutex_lock(&C.lock);
	ck_assert_uint_eq(C.total, N);
	ck_assert_uint_eq(C.outside, 0);
	for (unsigned int i = 0; i < N; i++)
		ck_assert_msg(C.runs[i] == 1, "request %u ran %u times", i, C.runs[i]);
	pthread_mutex_unlock(&C.lock);
}

START_TEST(test_every_request_runs_once_in_a_pool_thread)
{
	struct pool p;

	counts_reset();
	ck_assert_int_eq(pool_init(&p, 3, "test-pool", count_run, &C), 0);
	ck_assert_uint_eq(p.nr_threads, 3);
	ck_assert(!pool_in_thread());
	for (unsigned int i = 0; i < N; i += 50)
		pool_queue(&p, chain(i, 50), 0);
	pool_destroy(&p);
	assert_each_ran_once();
}
END_TEST

/* Everything queued before pool_destroy() runs before the threads exit. */
START_TEST(test_destroy_runs_what_is_queued)
{
	struct pool p;

	counts_reset();
	ck_assert_int_eq(pool_init(&p, 1, "test-pool", count_run, &C), 0);
	pool_queue(&p, chain(0, N), 0);
	pool_destroy(&p);
	assert_each_ran_once();
}
END_TEST

START_TEST(test_no_threads_starts_nothing)
{
	struct pool p;

	ck_assert_int_eq(pool_init(&p, 0, "test-pool", count_run, &C), 0);
	ck_assert_uint_eq(p.nr_threads, 0);
	pool_destroy(&p);
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("pool");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_every_request_runs_once_in_a_pool_thread);
	tcase_add_test(tc, test_destroy_runs_what_is_queued);
	tcase_add_test(tc, test_no_threads_starts_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(pool_suite());
}
