// SPDX-License-Identifier: MIT
/* The chain's contract checked as the code runs (core/stage/check.c, core/util/lock.h): in the
 * checking builds (make check SANITIZE=1) a stage that breaks a promise, and a caller that
 * does not hold a lock it must, abort; elsewhere the checks compile to nothing, and these
 * cases check only that a stage keeping its promises passes. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "core/stage/chain.h"
#include "core/util/lock.h"
#include "core/util/timer.h"
#include "tests/unit/suite.h"

#ifdef PLUGDISK_CHECKS
#define BROKEN SIGABRT	/* a broken promise aborts */
#else
#define BROKEN 0	/* not checked: the case passes */
#endif

static int (*bottom_mode)(struct request *rq);

static int bottom_exec(void *self, struct request *rq)
{
	(void)self;
	return bottom_mode(rq);
}

static int good(struct request *rq)
{
	(void)rq;
	return 0;
}

static int result_and_done(struct request *rq)
{
	rq->io_done(rq, 0);
	return 0;
}

/* Run one request of @op on [@off, @off + @len) through the faults over a bottom stage
 * that behaves as @mode. */
static int run(int (*mode)(struct request *rq), enum bio_op op, uint64_t off, uint64_t len)
{
	static const struct stage_ops ops = { .name = "bottom", .exec = bottom_exec };
	const struct stage bottom = { .ops = &ops };
	struct timer t;
	struct chain ch;
	struct request rq = { .op = op, .offset = off, .len = len };
	char err[256];
	int ret;

	bottom_mode = mode;
	ck_assert_int_eq(timer_init(&t, false), 0);
	const struct chain_params p = { .timer = &t, .disk_size = 1 << 20 };

	ck_assert_int_eq(chain_build(&ch, &bottom, &p, err, sizeof(err)), 0);
	ret = io_exec_wait(chain_top(&ch)->ops->exec, chain_top(&ch)->self, &rq);
	chain_destroy(&ch);
	timer_destroy(&t);
	return ret;
}

START_TEST(test_stage_keeping_the_contract_passes)
{
	ck_assert_int_eq(run(good, BIO_OP_READ, 0, 4096), 0);
	ck_assert_int_eq(run(good, BIO_OP_FLUSH, 0, 0), 0);
}
END_TEST

START_TEST(test_result_and_io_done_aborts)
{
	run(result_and_done, BIO_OP_READ, 0, 4096);
}
END_TEST

START_TEST(test_range_past_the_disk_aborts)
{
	/* The last byte of the disk is inside; one past it is not. */
	ck_assert_int_eq(run(good, BIO_OP_READ, (1 << 20) - 512, 512), 0);
	run(good, BIO_OP_READ, (1 << 20) - 512, 1024);
}
END_TEST

START_TEST(test_exec_under_a_lock_aborts)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	lock_take(&m);
	run(good, BIO_OP_READ, 0, 4096);
	lock_drop(&m);
}
END_TEST

START_TEST(test_lock_not_held_aborts)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	lock_take(&m);
	lock_assert_held(&m);
	lock_drop(&m);
	lock_assert_held(&m);
}
END_TEST

static Suite *stage_suite(void)
{
	Suite *s = suite_create("stage");
	TCase *tc = tcase_create("contract");

	tcase_add_test(tc, test_stage_keeping_the_contract_passes);
	tcase_add_test_raise_signal(tc, test_result_and_io_done_aborts, BROKEN);
	tcase_add_test_raise_signal(tc, test_range_past_the_disk_aborts, BROKEN);
	tcase_add_test_raise_signal(tc, test_exec_under_a_lock_aborts, BROKEN);
	tcase_add_test_raise_signal(tc, test_lock_not_held_aborts, BROKEN);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(stage_suite());
}
