/* SPDX-License-Identifier: MIT */
/* The reference model's actors: the submitter threads that run its requests, one step at a
 * time, and the driver's wait until each has finished or sleeps behind a stall. */
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/cacheio.h"
#include "tests/unit/model/model.h"

/* ---- actors: the submitter threads ------------------------------------------------------- */

/* One op through the top of the chain (the write cache), as the controller hands it down. */
/* The top stage's exec, waited for: with the faults on top, a stall there completes the
 * request later, from another thread. */
static int top_exec_wait(void *arg, struct request *rq)
{
	const struct stage *top = chain_top(arg);

	return io_exec_wait(top->ops->exec, top->self, rq);
}

int chain_io(struct run *r, enum bio_op op, uint64_t off, uint64_t len, void *buf)
{
	return stage_io(top_exec_wait, &r->ch, op, off, len, buf);
}

void job_run(struct run *r, struct job *j)
{
	const struct step *st = j->st;
	uint64_t off = (uint64_t)st->blk * BLK, len = (uint64_t)st->nblk * BLK;

	switch (st->k) {
	case K_WRITE:
	case K_READ:
		j->ret = chain_io(r, st->k == K_WRITE ? BIO_OP_WRITE : BIO_OP_READ, off, len,
				  j->buf);
		break;
	case K_ZERO:
		/* a write only reads its buffer: the const zeroes are safe to pass */
		j->ret = chain_io(r, BIO_OP_WRITE, off, len, (void *)backend_zero_chunk);
		break;
	case K_FLUSH:
		j->ret = chain_io(r, BIO_OP_FLUSH, 0, 0, NULL);
		break;
	case K_DISCARD:
		j->ret = chain_io(r, BIO_OP_DISCARD, off, len, NULL);
		break;
	case K_TICK:
		for (int64_t i = 0; i < st->b; i++)
			if (cache_tick(RCACHE(r)))
				break;
		j->ret = 0;
		break;
	case K_CUT:
		j->ret = chain_powercut(&r->ch, j->mode, (uint64_t)st->b, "model");
		break;
	case K_ON:
		j->ret = chain_poweron(&r->ch);
		break;
	default:
		j->ret = -EINVAL;
		break;
	}
}

void *actor_main(void *arg)
{
	struct actor *a = arg;
	struct run *r = a->r;

	pthread_mutex_lock(&r->alock);
	a->tid = (pid_t)syscall(SYS_gettid);
	pthread_cond_broadcast(&r->fin);
	for (;;) {
		while (a->state != A_GO && !r->quit)
			pthread_cond_wait(&a->go, &r->alock);
		if (r->quit)
			break;
		a->state = A_RUN;
		pthread_mutex_unlock(&r->alock);
		job_run(r, &a->job);
		pthread_mutex_lock(&r->alock);
		a->state = A_FIN;
		r->progress++;
		pthread_cond_broadcast(&r->fin);
	}
	pthread_mutex_unlock(&r->alock);
	return NULL;
}

/* Is thread @tid asleep (waiting on a lock or a condition), not running or runnable? */
static bool no_proc;	/* /proc cannot tell: a thread that takes 20 ms is taken as asleep */

static bool thread_sleeps(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f) {
		WRITE_ONCE(no_proc, true);
		return true;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D');
}

void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

/* Wait until every busy actor has finished (its result taken into the model) or sleeps:
 * parked behind a stall, or behind a request that is. */
void settle(struct run *r)
{
	unsigned int quiet = 0;

	for (;;) {
		struct job done[NR_ACTORS];
		unsigned int ndone = 0, nbusy = 0, nrun = 0, progress;
		pid_t tids[NR_ACTORS];

		pthread_mutex_lock(&r->alock);
		for (int i = 0; i < NR_ACTORS; i++) {
			struct actor *a = &r->act[i];

			if (a->state == A_FIN) {
				done[ndone++] = a->job;
				a->state = A_IDLE;
			} else if (a->state == A_RUN) {
				tids[nrun++] = a->tid;
			} else if (a->state == A_GO) {
				nbusy++;
			}
		}
		progress = r->progress;
		pthread_mutex_unlock(&r->alock);
		/* The poweron that powered on comes before those that then found the power on:
		 * the order in which actors finish does not tell. */
		for (unsigned int i = 1; i < ndone; i++)
			if (done[i].st->k == K_ON && !done[i].ret) {
				struct job t = done[i];

				memmove(&done[1], &done[0], i * sizeof(done[0]));
				done[0] = t;
			}
		for (unsigned int i = 0; i < ndone; i++) {
			job_done(r, &done[i]);
			free(done[i].buf);
		}
		if (ndone) {
			quiet = 0;
			continue;
		}
		if (!nbusy && !nrun)
			return;
		/* Wait a little for one to finish; then see whether all of them sleep. */
		pthread_mutex_lock(&r->alock);
		if (r->progress == progress) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&r->fin, &r->alock, &ts);
		}
		if (r->progress != progress) {
			pthread_mutex_unlock(&r->alock);
			quiet = 0;
			continue;
		}
		pthread_mutex_unlock(&r->alock);
		if (nbusy) {
			quiet = 0;
			continue;
		}
		/* Asleep twice over, with no finish between: a thread woken between our looks
		 * at two threads shows running in the second look. */
		bool asleep = true;

		for (unsigned int i = 0; i < nrun && asleep; i++)
			asleep = thread_sleeps(tids[i]);
		quiet = asleep ? quiet + 1 : 0;
		if (quiet >= (READ_ONCE(no_proc) ? 200u : 2u))
			return;
		sched_yield();
	}
}

struct actor *idle_actor(struct run *r)
{
	struct actor *found = NULL;

	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS && !found; i++)
		if (r->act[i].state == A_IDLE)
			found = &r->act[i];
	pthread_mutex_unlock(&r->alock);
	return found;
}

/* Whether an actor is parked on a job matching @pred. */
bool any_parked(struct run *r, bool (*pred)(const struct run *r, const struct job *j))
{
	bool found = false;

	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS && !found; i++)
		found = r->act[i].state == A_RUN && pred(r, &r->act[i].job);
	pthread_mutex_unlock(&r->alock);
	return found;
}

bool job_any(const struct run *r, const struct job *j)
{
	(void)r, (void)j;
	return true;
}

bool job_crossed_read(const struct run *r, const struct job *j)
{
	return crossed(r, j) && j->st->k == K_READ;
}

bool job_crossed_flush(const struct run *r, const struct job *j)
{
	return crossed(r, j) && j->st->k == K_FLUSH;
}

/* May poweron job @j power the disk on: was the power off at its issue? (With the power on
 * a poweron answers at once, so no cut can come while it waits.) */
bool job_may_power_on(const struct run *r, const struct job *j)
{
	(void)r;
	return j->st->k == K_ON && j->issued_off;
}

/* Is a poweron that may power the disk on still running, or finished and not yet taken
 * into the model? */
bool poweron_pending(struct run *r)
{
	bool found = false;

	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS && !found; i++)
		found = (r->act[i].state == A_RUN || r->act[i].state == A_FIN) &&
			job_may_power_on(r, &r->act[i].job);
	pthread_mutex_unlock(&r->alock);
	return found;
}
