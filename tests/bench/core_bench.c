/* SPDX-License-Identifier: MIT */
/* Microbenchmark of core/ without FUSE: ns per bio to submit, merge, dispatch and complete,
 * against a controller whose backing I/O is a no-op, and the cost of merge lookups in a deep
 * queue. Prints Markdown tables.
 * Usage: core_bench [--quick] [--deep] (--deep: only the deep-queue table) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ctrl/ctrl.h"
#include "core/util/prng.h"
#include "core/queue/queue.h"
#include "core/util/timer.h"

/* Bios per batch: the default unplug threshold, a typical burst from one submitter. */
#define BATCH 32
#define BIO_LEN 4096u

static uint64_t fake_now = 1000000000ull;

/* The queue's clock: frozen while a phase runs, so that a command's service time (1 us)
 * never passes on its own and each phase can be timed alone. */
static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The fake controller's backing I/O: nothing to do. */
static int fake_exec(void *arg, struct request *rq)
{
	(void)rq;
	(*(uint64_t *)arg)++;
	return 0;
}

static uint64_t bios_ended;

static void bench_end_io(struct bio *bio, int error)
{
	(void)bio;
	if (error) {
		fprintf(stderr, "core_bench: bio failed: %d\n", error);
		exit(1);
	}
	bios_ended++;
}

struct bench {
	struct timer t;
	struct ctrl c;
	struct queue q;
	uint64_t executed;
	struct bio bio[BATCH];
	struct iovec iov[BATCH];
};

static char buf[BIO_LEN];

/* Set up a queue that stays plugged until told (no threshold, delay or size unplug inside a
 * batch) over a controller with no workers (I/O runs in the dispatching thread) and a 1 us
 * service time, so that completions wait on the unthreaded timer until the bench runs it. */
static void bench_init(struct bench *b, bool plug, uint64_t latency_us)
{
	struct queue_params qp;
	struct ctrl_params cp;

	memset(b, 0, sizeof(*b));
	queue_params_default(&qp);
	ctrl_params_default(&cp);
	qp.plug = plug;
	qp.unplug_threshold = 1u << 30;
	qp.unplug_delay_us = 1000000;
	qp.nr_requests = 4 * BATCH;
	cp.queue_depth = 4 * BATCH;
	cp.workers = 0;
	cp.latency_us = latency_us;
	if (timer_init(&b->t, false) ||
	    ctrl_init(&b->c, &cp, &b->t, fake_exec, &b->executed, (int64_t)fake_now) ||
	    queue_init(&b->q, &qp, &b->c, &b->t, fake_clock, NULL)) {
		fprintf(stderr, "core_bench: cannot set up the queue\n");
		exit(1);
	}
	for (int i = 0; i < BATCH; i++) {
		b->iov[i].iov_base = buf;
		b->iov[i].iov_len = BIO_LEN;
	}
}

static void bench_destroy(struct bench *b)
{
	queue_drain(&b->q);
	queue_destroy(&b->q);
	ctrl_destroy(&b->c);
	timer_destroy(&b->t);
}

enum layout { SPREAD, ASCENDING, DESCENDING };

static void submit_batch(struct bench *b, enum layout lay, uint64_t base)
{
	for (int i = 0; i < BATCH; i++) {
		struct bio *bio = &b->bio[i];
		uint64_t k = lay == DESCENDING ? (uint64_t)(BATCH - 1 - i) : (uint64_t)i;

		memset(bio, 0, sizeof(*bio));
		bio->op = BIO_OP_WRITE;
		/* SPREAD leaves a hole after every bio, so nothing merges. */
		bio->offset = base + k * BIO_LEN * (lay == SPREAD ? 2 : 1);
		bio->len = BIO_LEN;
		bio->iovcnt = 1;
		bio->iov = &b->iov[i];
		bio->end_io = bench_end_io;
		queue_submit(&b->q, bio);
	}
}

struct result {
	uint64_t submit_ns, dispatch_ns, complete_ns, bios, requests;
};

/* One batch: submit BATCH bios into the plugged queue, unplug (dispatch to the fake
 * controller), then let the service time pass and run the completions. */
static void run_batch(struct bench *b, enum layout lay, uint64_t base, struct result *r)
{
	uint64_t t0, t1, t2, t3, ex0 = b->executed, end0 = bios_ended;

	t0 = wall_ns();
	submit_batch(b, lay, base);
	t1 = wall_ns();
	queue_unplug_idle(&b->q);
	t2 = wall_ns();
	fake_now += 1000000; /* past every deadline */
	timer_run_due(&b->t, fake_now);
	t3 = wall_ns();
	if (bios_ended - end0 != BATCH) {
		fprintf(stderr, "core_bench: %llu of %d bios completed\n",
			(unsigned long long)(bios_ended - end0), BATCH);
		exit(1);
	}
	r->submit_ns += t1 - t0;
	r->dispatch_ns += t2 - t1;
	r->complete_ns += t3 - t2;
	r->bios += BATCH;
	r->requests += b->executed - ex0;
}

/* The deep queue: nr_requests 4096 and a tight IOPS limit, so that requests pile up in a
 * stopped queue while @depth small random writes stay outstanding (each completion submits
 * the next). Random 4 KiB writes over 1 TiB almost never merge, so every submit is a merge
 * lookup that finds nothing: the case where a scan of the queue costs the most. */
struct deep {
	struct bench *b;
	struct bio *bio;
	struct iovec iov;
	unsigned int *free_idx, nr_free;
};

static struct deep *deep_now;

static void deep_end_io(struct bio *bio, int error)
{
	struct deep *d = deep_now;

	if (error) {
		fprintf(stderr, "core_bench: deep-queue bio failed: %d\n", error);
		exit(1);
	}
	d->free_idx[d->nr_free++] = (unsigned int)(bio - d->bio);
}

/* Move the fake clock to the next armed timer of @b and run what is due then; false if no
 * timer is armed. */
static bool run_next_timer(struct bench *b)
{
	uint64_t next = timer_next_deadline(&b->t);

	if (next == UINT64_MAX)
		return false;
	if (next > fake_now)
		fake_now = next;
	timer_run_due(&b->t, fake_now);
	return true;
}

/* Returns ns per submit over @total submits at @depth outstanding; *@queued gets the mean
 * number of requests queued at a submit. */
static double run_deep(unsigned int depth, long total, double *queued)
{
	struct deep d = { 0 };
	struct queue_params qp;
	struct ctrl_params cp;
	uint64_t rng[4], ns = 0, qsum = 0;
	long done = 0;

	d.b = calloc(1, sizeof(*d.b));
	d.bio = calloc(depth, sizeof(*d.bio));
	d.free_idx = calloc(depth, sizeof(*d.free_idx));
	if (!d.b || !d.bio || !d.free_idx)
		exit(1);
	deep_now = &d;
	prng_seed(rng, 88172645463325252ull);
	queue_params_default(&qp);
	ctrl_params_default(&cp);
	qp.plug = false;
	qp.nr_requests = 4096;
	cp.queue_depth = 32;
	cp.workers = 0;
	cp.iops = 1000; /* one command per ms of fake time */
	cp.burst_ms = 0;
	if (timer_init(&d.b->t, false) ||
	    ctrl_init(&d.b->c, &cp, &d.b->t, fake_exec, &d.b->executed, (int64_t)fake_now) ||
	    queue_init(&d.b->q, &qp, &d.b->c, &d.b->t, fake_clock, NULL)) {
		fprintf(stderr, "core_bench: cannot set up the deep queue\n");
		exit(1);
	}
	d.iov.iov_base = buf;
	d.iov.iov_len = BIO_LEN;
	for (unsigned int i = 0; i < depth; i++)
		d.free_idx[d.nr_free++] = i;
	while (done < total) {
		uint64_t t0;

		while (d.nr_free && done < total) {
			struct bio *bio = &d.bio[d.free_idx[--d.nr_free]];

			memset(bio, 0, sizeof(*bio));
			bio->op = BIO_OP_WRITE;
			bio->offset = (prng_next(rng) % (1ull << 28)) * BIO_LEN; /* 1 TiB */
			bio->len = BIO_LEN;
			bio->iovcnt = 1;
			bio->iov = &d.iov;
			bio->end_io = deep_end_io;
			qsum += d.b->q.nr_queued; /* single-threaded: no lock needed */
			t0 = wall_ns();
			queue_submit(&d.b->q, bio);
			ns += wall_ns() - t0;
			done++;
		}
		if (!run_next_timer(d.b)) {
			fprintf(stderr, "core_bench: deep queue stuck\n");
			exit(1);
		}
	}
	while (!queue_is_idle(&d.b->q) && run_next_timer(d.b))
		; /* the unthreaded timer drains it */
	bench_destroy(d.b);
	free(d.b);
	free(d.bio);
	free(d.free_idx);
	*queued = (double)qsum / (double)total;
	return (double)ns / (double)total;
}

static void deep_table(long total)
{
	static const unsigned int depths[] = { 128, 4096 };

	printf("Deep queue: nr_requests 4096, IOPS limit 1000 (fake clock), random 4 KiB writes "
	       "over 1 TiB, %ld submits per row.\n\n", total);
	printf("| outstanding writes | mean requests queued at submit | ns per submit |\n"
	       "|---|---|---|\n");
	for (unsigned int i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		double queued, ns = run_deep(depths[i], total, &queued);

		printf("| %u | %.0f | %.0f |\n", depths[i], queued, ns);
	}
	printf("\n");
}

static double per(uint64_t ns, uint64_t n)
{
	return n ? (double)ns / (double)n : 0.0;
}

static void row(const char *what, double ns)
{
	printf("| %s | %.0f | %s |\n", what, ns, ns < 1000.0 ? "yes" : "**no**");
}

int main(int argc, char *argv[])
{
	long batches = 20000;
	struct result spread = { 0 }, asc = { 0 }, desc = { 0 }, inl = { 0 };
	struct bench *b = malloc(sizeof(*b));

	bool deep_only = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			batches = 2000;
		} else if (strcmp(argv[i], "--deep") == 0) {
			deep_only = true;
		} else {
			fprintf(stderr, "usage: %s [--quick] [--deep]\n", argv[0]);
			return 2;
		}
	}
	if (!b)
		return 1;
	deep_table(batches * 10);
	if (deep_only) {
		free(b);
		return 0;
	}

	bench_init(b, true, 1);
	for (long n = 0; n < batches / 10; n++) /* warm up caches and the allocator */
		run_batch(b, SPREAD, 0, &spread);
	memset(&spread, 0, sizeof(spread));
	for (long n = 0; n < batches; n++) {
		uint64_t base = (uint64_t)(n % 1024) * BATCH * BIO_LEN * 2;

		run_batch(b, SPREAD, base, &spread);
		run_batch(b, ASCENDING, base, &asc);
		run_batch(b, DESCENDING, base, &desc);
	}
	bench_destroy(b);

	/* The whole path in one call: no plug, no service time, so each queue_submit()
	 * dispatches, runs the fake I/O and completes before it returns. */
	bench_init(b, false, 0);
	for (long n = 0; n < batches; n++) {
		uint64_t t0 = wall_ns(), end0 = bios_ended;

		submit_batch(b, SPREAD, (uint64_t)(n % 1024) * BATCH * BIO_LEN * 2);
		inl.submit_ns += wall_ns() - t0;
		inl.bios += BATCH;
		if (bios_ended - end0 != BATCH) {
			fprintf(stderr, "core_bench: inline path left bios incomplete\n");
			return 1;
		}
	}
	bench_destroy(b);
	free(b);

	printf("%ld batches of %d bios of %u bytes, one thread, fake controller (no-op I/O).\n\n",
	       batches, BATCH, BIO_LEN);
	printf("| step | ns per bio | under 1 µs |\n|---|---|---|\n");
	row("submit, new request (plugged queue)", per(spread.submit_ns, spread.bios));
	row("submit, back merge", per(asc.submit_ns, asc.bios));
	row("submit, front merge", per(desc.submit_ns, desc.bios));
	row("dispatch (unplug, admit, fake I/O, arm service timer)",
	    per(spread.dispatch_ns, spread.bios));
	row("complete (timer, slot release, accounting, end_io)",
	    per(spread.complete_ns, spread.bios));
	row("dispatch + complete of merged requests, per bio",
	    per(asc.dispatch_ns + asc.complete_ns, asc.bios));
	row("whole path, plug off, no service time (submit to end_io)",
	    per(inl.submit_ns, inl.bios));
	printf("\nRequests per batch: %.1f unmerged, %.1f back-merged, %.1f front-merged.\n",
	       (double)spread.requests / (double)batches, (double)asc.requests / (double)batches,
	       (double)desc.requests / (double)batches);
	return 0;
}
