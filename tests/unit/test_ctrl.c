/* SPDX-License-Identifier: MIT */
/* Unit tests of the controller emulator (core/ctrl/ctrl.c) behind a queue: command slots, service
 * latency, rate-limit stops and both ways a stopped queue starts again, live reconfiguration,
 * and the worker pool. */
#undef NDEBUG
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "tests/unit/fakedev.h"

static struct fake F;

/* No plugging, so each bio is offered to the controller as it arrives. */
static void unplugged_params(void)
{
	fake_params(&F);
	F.qp.plug = false;
}

static struct stats_snapshot snap(void)
{
	struct stats_snapshot ss;

	fake_snapshot(&F, &ss);
	return ss;
}

/* Non-mergeable writes: bio i at i MiB. */
static void submit_writes(struct tbio *b, int n, uint32_t len)
{
	for (int i = 0; i < n; i++)
		submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)i * 1024 * KiB, len);
}

START_TEST(test_latency_per_op)
{
	struct ctrl_params p;

	ctrl_params_default(&p);
	p.latency_us = 1000;
	ck_assert_uint_eq(latency_median_ns(&p, BIO_OP_READ), 1000 * US);
	ck_assert_uint_eq(latency_median_ns(&p, BIO_OP_DISCARD), 1000 * US);
	p.read_latency_us = 100;
	p.write_latency_us = 200;
	p.flush_latency_us = 300;
	ck_assert_uint_eq(latency_median_ns(&p, BIO_OP_READ), 100 * US);
	ck_assert_uint_eq(latency_median_ns(&p, BIO_OP_WRITE), 200 * US);
	ck_assert_uint_eq(latency_median_ns(&p, BIO_OP_FLUSH), 300 * US);
	ck_assert_uint_eq(latency_median_ns(&p, BIO_OP_DISCARD), 1000 * US);
}
END_TEST

/* What lets the kernel send the most background requests (daemon/fuse/background.c): a
 * hold by hand, a service latency, a rate limit; nothing of these, no hold, however slow the
 * store. */
START_TEST(test_may_hold)
{
	struct ctrl_params cp;

	fake_setup(&F);
	ck_assert(!queue_may_hold(&F.q));
	queue_hold(&F.q, true);
	ck_assert(queue_may_hold(&F.q));
	queue_hold(&F.q, false);
	queue_plug_hold(&F.q, true);
	ck_assert(queue_may_hold(&F.q));
	queue_plug_hold(&F.q, false);
	ck_assert(!queue_may_hold(&F.q));
	F.c.exec_avg_ns = 300 * US;
	ck_assert(!queue_may_hold(&F.q));
	F.c.exec_avg_ns = 0;
	cp = F.cp;
	cp.latency_us = 100;
	queue_reconfigure(&F.q, &F.qp, &cp);
	ck_assert(queue_may_hold(&F.q));
	cp = F.cp;
	cp.iops = 1000;
	queue_reconfigure(&F.q, &F.qp, &cp);
	ck_assert(queue_may_hold(&F.q));
	queue_reconfigure(&F.q, &F.qp, &F.cp);
	ck_assert(!queue_may_hold(&F.q));
	fake_stop(&F);
}
END_TEST

START_TEST(test_slots_never_exceeded)
{
	enum { N = 300 };
	static struct tbio b[N];
	uint32_t x = 7;

	unplugged_params();
	F.cp.queue_depth = 3;
	F.cp.latency_us = 100;
	fake_start(&F);
	for (int i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		submit(&F, &b[i], (x >> 9) % 2 ? BIO_OP_READ : BIO_OP_WRITE,
		       (uint64_t)i * 1024 * KiB, 4 * KiB);
		ck_assert_uint_le(F.c.in_flight, 3);
		if ((x >> 13) % 4 == 0)
			fake_advance_to(&F, fake_now(&F) + (x >> 16) % 150 * US);
	}
	fake_run_until_idle(&F);
	ck_assert_uint_eq(F.max_in_flight, 3);
	ck_assert_uint_eq(F.c.in_flight, 0);
	assert_all_done_once(b, N);
	fake_stop(&F);
}
END_TEST

START_TEST(test_completion_exactly_at_deadline)
{
	struct tbio b;

	unplugged_params();
	F.cp.write_latency_us = 250;
	fake_start(&F);
	submit(&F, &b, BIO_OP_WRITE, 0, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 1); /* the backing I/O ran at once ... */
	ck_assert_uint_eq(F.exec[0].dispatch_ns, T0);
	ck_assert_uint_eq(F.exec[0].deadline_ns, T0 + 250 * US);
	ck_assert_int_eq(fake_advance_to(&F, T0 + 250 * US - 1), 0);
	ck_assert_int_eq(b.ncomplete, 0); /* ... the completion waits for the service time */
	ck_assert_uint_eq(snap().in_flight, 1);
	ck_assert_int_eq(fake_advance_to(&F, T0 + 250 * US), 1);
	assert_all_done_once(&b, 1);
	ck_assert_uint_eq(b.done_at, T0 + 250 * US);
	ck_assert_uint_eq(snap().s.op[BIO_OP_WRITE].ticks_ns, 250 * US);
	fake_stop(&F);
}
END_TEST

/* Every command completes no earlier than its dispatch + latency, and every bio no earlier
 * than its own submission + latency, whatever the mix of timing. */
START_TEST(test_completion_never_before_dispatch_plus_latency)
{
	enum { N = 400 };
	static struct tbio b[N];
	uint32_t x = 4242;

	unplugged_params();
	F.cp.queue_depth = 4;
	F.cp.latency_us = 500;
	F.cp.flush_latency_us = 800;
	fake_start(&F);
	for (int i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		if ((x >> 10) % 10 == 0)
			submit(&F, &b[i], BIO_OP_FLUSH, 0, 0);
		else
			submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)((x >> 12) % 64) * 4 * KiB,
			       4 * KiB);
		/* Fire timers late now and then: lateness must not shorten any service time. */
		if ((x >> 16) % 3 == 0)
			fake_advance_to(&F, fake_now(&F) + (x >> 18) % 400 * US);
	}
	fake_run_until_idle(&F);
	assert_all_done_once(b, N);
	for (unsigned int i = 0; i < F.nexec; i++) {
		uint64_t lat = (F.exec[i].op == BIO_OP_FLUSH ? 800 : 500) * US;

		/* A flush may run longer: it ends after the commands started before it. */
		if (F.exec[i].op == BIO_OP_FLUSH)
			ck_assert_uint_ge(F.exec[i].deadline_ns, F.exec[i].dispatch_ns + lat);
		else
			ck_assert_uint_eq(F.exec[i].deadline_ns, F.exec[i].dispatch_ns + lat);
		/* The device start is never after the backing I/O was issued. */
		ck_assert_uint_le(F.exec[i].dispatch_ns, F.exec[i].at);
	}
	for (int i = 0; i < N; i++) {
		uint64_t lat = (b[i].bio.op == BIO_OP_FLUSH ? 800 : 500) * US;

		ck_assert_uint_ge(b[i].done_at, b[i].deadline);
		ck_assert_uint_ge(b[i].done_at, b[i].bio.submit_ns + lat);
	}
	ck_assert_uint_le(F.max_in_flight, 4);
	fake_stop(&F);
}
END_TEST

/* The backing I/O took longer than the service latency: complete when it returns. */
START_TEST(test_slow_backend_completes_when_io_returns)
{
	struct tbio b;

	unplugged_params();
	F.cp.latency_us = 100;
	F.exec_ns = 300 * US;
	fake_start(&F);
	submit(&F, &b, BIO_OP_READ, 0, 4 * KiB);
	assert_all_done_once(&b, 1);
	ck_assert_uint_eq(b.done_at, T0 + 300 * US);
	ck_assert_uint_eq(timer_next_deadline(&F.t), UINT64_MAX);
	fake_stop(&F);
}
END_TEST

/* A timer that fires late frees its slot at the deadline in device time: the next command's
 * service starts there, so lateness is not added to it. */
START_TEST(test_late_timer_does_not_delay_next_command)
{
	struct tbio b[2];

	unplugged_params();
	F.cp.queue_depth = 1;
	F.cp.latency_us = 100;
	fake_start(&F);
	submit_writes(b, 2, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 1);
	fake_advance_to(&F, T0 + 150 * US); /* 50 us late */
	ck_assert_int_eq(b[0].ncomplete, 1);
	ck_assert_uint_eq(F.nexec, 2);
	ck_assert_uint_eq(F.exec[1].at, T0 + 150 * US);
	ck_assert_uint_eq(F.exec[1].dispatch_ns, T0 + 100 * US);
	ck_assert_uint_eq(F.exec[1].deadline_ns, T0 + 200 * US);
	fake_advance_to(&F, T0 + 200 * US);
	assert_all_done_once(b, 2);
	ck_assert_uint_eq(b[1].done_at, T0 + 200 * US);
	fake_stop(&F);
}
END_TEST

/* A flush does not wait to be dispatched, but in device time its service runs from when the
 * last earlier command is due (however late the timers that complete them). */
START_TEST(test_flush_service_starts_when_earlier_commands_end)
{
	struct tbio b[4];

	unplugged_params();
	F.cp.queue_depth = 8;
	F.cp.latency_us = 100;
	fake_start(&F);
	for (int i = 0; i < 3; i++) {
		fake_set_now(&F, T0 + (uint64_t)i * 10 * US);
		submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)i * 1024 * KiB, 4 * KiB);
	}
	submit(&F, &b[3], BIO_OP_FLUSH, 0, 0);
	ck_assert_uint_eq(F.nexec, 4);
	ck_assert_int_eq(F.exec[3].op, BIO_OP_FLUSH);
	ck_assert_uint_eq(F.exec[3].deadline_ns, T0 + 220 * US);
	fake_advance_to(&F, T0 + 130 * US); /* the writes' timers, up to 10 us late */
	fake_run_until_idle(&F);
	ck_assert_uint_eq(b[3].done_at, T0 + 220 * US);
	for (int i = 0; i < 3; i++)
		ck_assert_uint_lt(b[i].done_at, b[3].done_at);
	assert_all_done_once(b, 4);
	fake_stop(&F);
}
END_TEST

/* Slot path: a full controller stops the queue; a completion starts it. */
START_TEST(test_slot_stop_restarted_by_completion)
{
	struct tbio b[3];
	struct stats_snapshot ss;

	unplugged_params();
	F.cp.queue_depth = 2;
	F.cp.latency_us = 100;
	fake_start(&F);
	submit_writes(b, 3, 4 * KiB);
	ss = snap();
	ck_assert_int_eq(ss.stopped, 1);
	ck_assert_int_eq(ss.stop_reason, STOP_SLOTS);
	ck_assert_uint_eq(ss.s.stops[STOP_SLOTS], 1);
	ck_assert(!timer_is_armed(&F.t, &F.q.restart_tmr)); /* no timer: the completion starts it */
	fake_advance_to(&F, T0 + 100 * US);
	ss = snap();
	ck_assert_int_eq(ss.stopped, 0);
	ck_assert_uint_eq(ss.s.starts[STOP_SLOTS], 1);
	ck_assert_uint_eq(F.nexec, 3);
	ck_assert_uint_eq(F.exec[2].at, T0 + 100 * US);
	fake_stop(&F);
	assert_all_done_once(b, 3);
}
END_TEST

/* Budget path: out of IOPS budget, the queue stops and the restart timer starts it when the
 * debt clears, not before. */
START_TEST(test_budget_stop_restarted_by_timer)
{
	struct tbio b[3];
	struct stats_snapshot ss;

	unplugged_params();
	F.cp.iops = 1000;
	fake_start(&F);
	submit_writes(b, 3, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 1);
	ss = snap();
	ck_assert_int_eq(ss.stopped, 1);
	ck_assert_int_eq(ss.stop_reason, STOP_BUDGET);
	ck_assert_uint_eq(ss.s.stops[STOP_BUDGET], 1);
	ck_assert_uint_eq(ss.s.stops[STOP_SLOTS], 0);
	ck_assert(timer_is_armed(&F.t, &F.q.restart_tmr));
	ck_assert_uint_eq(timer_next_deadline(&F.t), T0 + MS);
	ck_assert_int_eq(fake_advance_to(&F, T0 + MS - 1), 0);
	ck_assert_uint_eq(F.nexec, 1);
	ck_assert_int_eq(fake_advance_to(&F, T0 + MS), 1);
	ck_assert_uint_eq(F.nexec, 2);
	ck_assert_uint_eq(F.exec[1].at, T0 + MS);
	ss = snap();
	ck_assert_uint_eq(ss.s.starts[STOP_BUDGET], 1);
	ck_assert_uint_eq(ss.s.stops[STOP_BUDGET], 2); /* the third is out of budget again */
	fake_run_until_idle(&F);
	ck_assert_uint_eq(F.exec[2].at, T0 + 2 * MS);
	ss = snap();
	ck_assert_uint_eq(ss.s.stops[STOP_BUDGET], ss.s.starts[STOP_BUDGET]);
	ck_assert_uint_eq(ss.s.stopped_ns, 2 * MS);
	assert_all_done_once(b, 3);
	fake_stop(&F);
}
END_TEST

/* A completion frees a slot, but a queue stopped for budget stays stopped until its timer. */
START_TEST(test_budget_stop_not_ended_by_completion)
{
	struct tbio b[2];
	struct stats_snapshot ss;

	unplugged_params();
	F.cp.iops = 1000;
	F.cp.latency_us = 100;
	fake_start(&F);
	submit_writes(b, 2, 4 * KiB);
	fake_advance_to(&F, T0 + 100 * US);
	ck_assert_int_eq(b[0].ncomplete, 1);
	ss = snap();
	ck_assert_int_eq(ss.stopped, 1);
	ck_assert_int_eq(ss.stop_reason, STOP_BUDGET);
	ck_assert_uint_eq(ss.s.starts[STOP_BUDGET], 0);
	ck_assert_uint_eq(F.nexec, 1);
	fake_advance_to(&F, T0 + MS);
	ck_assert_uint_eq(F.nexec, 2);
	ck_assert_uint_eq(snap().s.starts[STOP_BUDGET], 1);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

/* A new rate while stopped in debt: the restart moves to when the debt clears at that rate. */
START_TEST(test_reconfigure_in_debt_moves_restart)
{
	struct tbio b[2];

	unplugged_params();
	F.cp.bandwidth = 1000;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_WRITE, 0, 2000); /* 2 s of debt */
	submit(&F, &b[1], BIO_OP_WRITE, 1024 * KiB, 100);
	ck_assert_uint_eq(timer_next_deadline(&F.t), T0 + 2 * NSEC_PER_SEC);
	/* Slower limit at 1 s: 1000 B still owed at 500 B/s, so ready at 3 s. */
	fake_set_now(&F, T0 + NSEC_PER_SEC);
	F.cp.bandwidth = 500;
	queue_reconfigure(&F.q, &F.qp, &F.cp);
	ck_assert_uint_eq(F.nexec, 1);
	ck_assert_uint_eq(timer_next_deadline(&F.t), T0 + 3 * NSEC_PER_SEC);
	fake_advance_to(&F, T0 + 2 * NSEC_PER_SEC);
	ck_assert_uint_eq(F.nexec, 1);
	fake_advance_to(&F, T0 + 3 * NSEC_PER_SEC);
	ck_assert_uint_eq(F.nexec, 2);
	fake_stop(&F);
	assert_all_done_once(b, 2);
}
END_TEST

/* Lifting the limit starts a queue stopped for budget at once. */
START_TEST(test_budget_stop_restarted_by_reconfigure)
{
	struct tbio b[2];
	struct stats_snapshot ss;

	unplugged_params();
	F.cp.iops = 1;
	fake_start(&F);
	submit_writes(b, 2, 4 * KiB);
	ck_assert(F.q.stopped);
	fake_set_now(&F, T0 + 10 * US);
	F.cp.iops = 0;
	queue_reconfigure(&F.q, &F.qp, &F.cp);
	ss = snap();
	ck_assert_int_eq(ss.stopped, 0);
	ck_assert_uint_eq(ss.s.starts[STOP_BUDGET], 1);
	ck_assert_uint_eq(F.nexec, 2);
	ck_assert_uint_eq(F.exec[1].at, T0 + 10 * US);
	ck_assert(!timer_is_armed(&F.t, &F.q.restart_tmr));
	assert_all_done_once(b, 2);
	fake_stop(&F);
}
END_TEST

/* More slots start a queue stopped for slots at once. */
START_TEST(test_slot_stop_restarted_by_reconfigure)
{
	struct tbio b[3];

	unplugged_params();
	F.cp.queue_depth = 1;
	F.cp.latency_us = 100;
	fake_start(&F);
	submit_writes(b, 3, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 1);
	F.cp.queue_depth = 3;
	queue_reconfigure(&F.q, &F.qp, &F.cp);
	ck_assert(!F.q.stopped);
	ck_assert_uint_eq(F.nexec, 3);
	ck_assert_uint_eq(snap().s.starts[STOP_SLOTS], 1);
	fake_stop(&F);
	assert_all_done_once(b, 3);
}
END_TEST

START_TEST(test_bandwidth_spaces_dispatches)
{
	struct tbio b[5];

	unplugged_params();
	F.cp.bandwidth = 1000000; /* 1000 B per ms */
	fake_start(&F);
	submit_writes(b, 5, 1000);
	fake_run_until_idle(&F);
	for (unsigned int i = 0; i < 5; i++)
		ck_assert_uint_eq(F.exec[i].at, T0 + i * MS);
	assert_all_done_once(b, 5);
	fake_stop(&F);
}
END_TEST

/* A request bigger than the budget is not starved: it starts and leaves a debt. */
START_TEST(test_large_request_starts_into_debt)
{
	struct tbio b[2];

	unplugged_params();
	F.cp.write_bandwidth = 1000;
	F.cp.burst_ms = 100;
	fake_start(&F);
	submit_writes(b, 2, 4000);
	ck_assert_uint_eq(F.nexec, 1);
	ck_assert_uint_eq(F.exec[0].at, T0);
	fake_run_until_idle(&F);
	/* 100 B of burst saved: 3900 B of debt at 1000 B/s. */
	ck_assert_uint_eq(F.exec[1].at, T0 + 3900 * MS);
	ck_assert_int_lt(snap().bw_level[RATE_WRITE], 0);
	assert_all_done_once(b, 2);
	fake_stop(&F);
}
END_TEST

START_TEST(test_discard_not_charged_bandwidth)
{
	struct tbio b[3];

	unplugged_params();
	F.cp.bandwidth = 1000;
	fake_start(&F);
	submit(&F, &b[0], BIO_OP_DISCARD, 0, 1024 * KiB);
	submit(&F, &b[1], BIO_OP_WRITE, 2048 * KiB, 100);
	submit(&F, &b[2], BIO_OP_WRITE, 4096 * KiB, 100);
	ck_assert_uint_eq(F.nexec, 2);
	fake_run_until_idle(&F);
	ck_assert_uint_eq(F.exec[2].at, T0 + 100 * MS);
	assert_all_done_once(b, 3);
	fake_stop(&F);
}
END_TEST

/* Merged requests cost one command: with an IOPS limit, merging is what gets bytes through. */
START_TEST(test_iops_limit_counts_merged_request_once)
{
	struct tbio b[16];

	fake_params(&F); /* plugged: the 16 bios merge into one request */
	F.cp.iops = 10;
	fake_start(&F);
	for (int i = 0; i < 16; i++)
		submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)i * 4 * KiB, 4 * KiB);
	queue_unplug_idle(&F.q);
	ck_assert_uint_eq(F.nexec, 1);
	ck_assert_uint_eq(F.exec[0].len, 64 * KiB);
	ck_assert_int_eq(snap().iops_level[RATE_ALL], -1);
	assert_all_done_once(b, 16);
	fake_stop(&F);
}
END_TEST

/* ---------------------------------------------------------------- asynchronous stages */

/* A stage that returns IO_ASYNC holds the command's slot until it reports the end through
 * rq->io_done; the end's error reaches the bios, and the freed slot dispatches the next. */
START_TEST(test_async_stage_holds_slot_until_it_reports)
{
	struct tbio b[3];
	struct request *first, *second;

	unplugged_params();
	F.cp.queue_depth = 2;
	F.async = true;
	fake_start(&F);
	submit_writes(b, 3, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 2);
	ck_assert_uint_eq(F.npending, 2);
	ck_assert_uint_eq(F.completions, 0);
	ck_assert_uint_eq(F.q.nr_queued, 1); /* stopped: no free slot */
	first = F.pending[0];
	second = F.pending[1];
	fake_end_async(&F, first, 0);
	ck_assert_int_eq(b[0].ncomplete, 1);
	ck_assert_int_eq(b[1].ncomplete, 0);
	ck_assert_uint_eq(F.nexec, 3); /* the freed slot took the third */
	fake_end_async(&F, second, -EIO);
	ck_assert_int_eq(b[1].error, -EIO);
	fake_end_async(&F, F.pending[0], 0);
	ck_assert_uint_eq(F.npending, 0);
	assert_all_done_once(b, 3);
	fake_stop(&F);
}
END_TEST

/* An asynchronous end that comes before the service latency has passed completes at the
 * deadline, as a synchronous one does. */
START_TEST(test_async_end_before_deadline_waits_for_it)
{
	struct tbio b[1];

	unplugged_params();
	F.cp.latency_us = 100;
	F.async = true;
	fake_start(&F);
	submit_writes(b, 1, 4 * KiB);
	ck_assert_uint_eq(F.npending, 1);
	fake_advance_to(&F, T0 + 10 * US);
	fake_end_async(&F, F.pending[0], 0);
	ck_assert_int_eq(b[0].ncomplete, 0);
	fake_advance_to(&F, T0 + 100 * US);
	ck_assert_int_eq(b[0].ncomplete, 1);
	ck_assert_uint_eq(b[0].done_at, T0 + 100 * US);
	fake_stop(&F);
}
END_TEST

struct later {
	struct request *rq;
	int err;
};

static void *end_later(void *arg)
{
	struct later *l = arg;
	struct timespec ms = { 0, 1000000 };

	nanosleep(&ms, NULL);
	l->rq->io_done(l->rq, l->err);
	return NULL;
}

static pthread_t later_thread;

/* A stage that ends its request from another thread, a millisecond later. */
static int stage_ends_later(void *arg, struct request *rq)
{
	struct later *l = arg;

	l->rq = rq;
	ck_assert_int_eq(pthread_create(&later_thread, NULL, end_later, l), 0);
	return IO_ASYNC;
}

static int stage_sync(void *arg, struct request *rq)
{
	(void)rq;
	return *(int *)arg;
}

/* io_exec_wait() returns the stage's result whether the stage ends the request at once or
 * from another thread later. */
START_TEST(test_io_exec_wait_sync_and_async)
{
	struct request rq = { .op = BIO_OP_WRITE };
	struct later l = { .err = -EIO };
	int ret = -ENOSPC;

	ck_assert_int_eq(io_exec_wait(stage_sync, &ret, &rq), -ENOSPC);
	ck_assert_int_eq(io_exec_wait(stage_ends_later, &l, &rq), -EIO);
	ck_assert_ptr_eq(l.rq, &rq);
	ck_assert_int_eq(pthread_join(later_thread, NULL), 0);
}
END_TEST

/* ---------------------------------------------------------------- worker pool */

struct submitter {
	int first, n;
	struct tbio *b;
};

static void *submit_loop(void *arg)
{
	struct submitter *s = arg;

	for (int i = s->first; i < s->first + s->n; i++) {
		submit(&F, &s->b[i], i % 3 ? BIO_OP_WRITE : BIO_OP_READ,
		       (uint64_t)(i % 97) * 8 * KiB, 4 * KiB);
		if (i % 8 == 7)
			queue_unplug_idle(&F.q);
	}
	queue_unplug_idle(&F.q);
	return NULL;
}

/* Real threads: two submitters, two backend workers, the timer thread, real clock. Everything
 * completes exactly once and the slots hold. (Checks behaviour, not speed.) */
START_TEST(test_workers_complete_everything_once)
{
	enum { N = 2000 };
	static struct tbio b[N];
	struct submitter s[2] = {{0, N / 2, b}, {N / 2, N / 2, b}};
	pthread_t th[2];

	fake_params(&F);
	F.qp.unplug_threshold = 8;
	F.qp.unplug_delay_us = 200;
	F.cp.workers = 2;
	F.cp.queue_depth = 4;
	F.cp.latency_us = 20;
	fake_start_threaded(&F);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, submit_loop, &s[i]), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	fake_stop_threaded(&F);
	ck_assert_uint_eq(F.completions, N);
	assert_all_done_once(b, N);
	ck_assert_uint_le(F.max_in_flight, 4);
}
END_TEST

static bool always_inline(void *arg)
{
	(void)arg;
	return true;
}

/* A thread whose inline hook allows it runs the requests it dispatches. Quick ones (backend
 * time @exec_ns under the hand-off cost) all run in that thread; after a slow one, once the
 * running average is slow too, the rest go to the workers. Returns how many of @n separate
 * requests the dispatching thread ran. */
static unsigned int run_dispatch_inline(uint64_t exec_ns, unsigned int n)
{
	static struct tbio b[16];
	unsigned int mine = 0;

	ck_assert_uint_le(n, 16);
	fake_params(&F);
	F.cp.workers = 2;
	F.exec_ns = exec_ns;
	fake_start(&F);
	io_set_thread_inline(always_inline, NULL);
	for (unsigned int i = 0; i < n; i++)
		submit(&F, &b[i], BIO_OP_WRITE, (uint64_t)i * 64 * KiB, 4 * KiB);
	ck_assert_uint_eq(F.nexec, 0); /* plugged */
	queue_unplug_idle(&F.q);
	queue_drain(&F.q);
	io_set_thread_inline(NULL, NULL);
	pthread_mutex_lock(&F.log_lock);
	ck_assert_uint_eq(F.nexec, n);
	ck_assert_uint_eq(F.completions, n);
	for (unsigned int i = 0; i < n; i++)
		mine += pthread_equal(F.exec[i].thread, pthread_self()) != 0;
	ck_assert_msg(pthread_equal(F.exec[0].thread, pthread_self()),
		      "the first request did not run in the dispatching thread");
	pthread_mutex_unlock(&F.log_lock);
	assert_all_done_once(b, n);
	fake_stop(&F);
	return mine;
}

START_TEST(test_quick_requests_run_in_dispatching_thread)
{
	ck_assert_uint_eq(run_dispatch_inline(2 * US, 8), 8);
}
END_TEST

START_TEST(test_slow_request_hands_rest_to_workers)
{
	ck_assert_uint_eq(run_dispatch_inline(1 * MS, 8), 1);
}
END_TEST

/* 100 us each, from an average of 0 that moves by 1/8 of each sample: 12.5, 23.4, then
 * 33.0 us, over the 30 us bound at the third. A slow sample alone (a preempted thread)
 * keeps the list in this thread. */
START_TEST(test_slow_average_needed_to_hand_off)
{
	ck_assert_uint_eq(run_dispatch_inline(100 * US, 8), 3);
}
END_TEST

static Suite *ctrl_suite(void)
{
	Suite *s = suite_create("ctrl");
	TCase *tc;

	tc = tcase_create("slots_latency");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_latency_per_op);
	tcase_add_test(tc, test_may_hold);
	tcase_add_test(tc, test_slots_never_exceeded);
	tcase_add_test(tc, test_completion_exactly_at_deadline);
	tcase_add_test(tc, test_completion_never_before_dispatch_plus_latency);
	tcase_add_test(tc, test_slow_backend_completes_when_io_returns);
	tcase_add_test(tc, test_late_timer_does_not_delay_next_command);
	tcase_add_test(tc, test_flush_service_starts_when_earlier_commands_end);
	suite_add_tcase(s, tc);

	tc = tcase_create("stop_start");
	tcase_add_test(tc, test_slot_stop_restarted_by_completion);
	tcase_add_test(tc, test_budget_stop_restarted_by_timer);
	tcase_add_test(tc, test_budget_stop_not_ended_by_completion);
	tcase_add_test(tc, test_reconfigure_in_debt_moves_restart);
	tcase_add_test(tc, test_budget_stop_restarted_by_reconfigure);
	tcase_add_test(tc, test_slot_stop_restarted_by_reconfigure);
	suite_add_tcase(s, tc);

	tc = tcase_create("rate");
	tcase_add_test(tc, test_bandwidth_spaces_dispatches);
	tcase_add_test(tc, test_large_request_starts_into_debt);
	tcase_add_test(tc, test_discard_not_charged_bandwidth);
	tcase_add_test(tc, test_iops_limit_counts_merged_request_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("async");
	tcase_add_test(tc, test_async_stage_holds_slot_until_it_reports);
	tcase_add_test(tc, test_async_end_before_deadline_waits_for_it);
	tcase_add_test(tc, test_io_exec_wait_sync_and_async);
	suite_add_tcase(s, tc);

	tc = tcase_create("workers");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_workers_complete_everything_once);
	tcase_add_test(tc, test_quick_requests_run_in_dispatching_thread);
	tcase_add_test(tc, test_slow_request_hands_rest_to_workers);
	tcase_add_test(tc, test_slow_average_needed_to_hand_off);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(ctrl_suite());
}
