/* SPDX-License-Identifier: MIT */
/* The reference model's driver: one sequence run step by step through the chain, a queue and
 * a controller, each result checked as it comes, and the whole disk read at the end. */
#include <unistd.h>

#include "tests/unit/model/model.h"

const char *model_order;

/* The fake clock. */
static uint64_t clk(void *arg)
{
	struct run *r = arg;

	return smp_load_mb(r->now_ns);
}

/* ---- running a sequence ------------------------------------------------------------------ */

static bool step_needs_actor(enum kind k)
{
	return k <= K_ON;
}

/* Count a fault of @kind (bits as r->fault_kind) in force (@d = 1) or gone (@d = -1). */
static void fault_count(struct run *r, int kind, int d)
{
	if (kind & 1) {
		r->nerr_live += (unsigned int)d;
		if (d > 0)
			r->errgen++;
	}
	if (kind & 2)
		r->nstall_live += (unsigned int)d;
	if (kind & FK_FLUSH_ERR) {
		r->nflush_err += (unsigned int)d;
		if (d < 0)
			r->flush_err_gone++;
	}
	if ((kind & 5) == 5) {
		r->nwerr_live += (unsigned int)d;
		r->werr_seen |= d > 0;
	}
}

static void fault_gone(struct run *r, int fstep)
{
	fault_count(r, r->fault_kind[fstep], -1);
	r->fault_kind[fstep] = 0;
	r->fault_id[fstep] = 0;
}

static void run_inline(struct run *r, const struct step *st, int stepno)
{
	char text[256], err[256];
	int ret;

	switch (st->k) {
	case K_ARM: {
		struct cache_arm a = { .kind = (enum cache_arm_kind)st->a };

		if (st->a == CACHE_ARM_FLUSH || st->a == CACHE_ARM_WRITE || st->a == CACHE_ARM_RANDOM)
			a.n = (uint64_t)st->b;
		if (st->a == CACHE_ARM_WRITE)
			a.after_flush = (uint64_t)st->b % 2;
		if (st->a == CACHE_ARM_RANDOM)
			a.seed = (uint64_t)stepno * 977 + 1;
		if (st->a == CACHE_ARM_TIME)
			a.at_ns = clk(r) + (uint64_t)st->b * NSEC_PER_MSEC;
		a.has_mode = st->c != 0;
		a.mode = st->c ? (uint32_t)(st->c - 1) : 0;
		ret = cache_arm(RCACHE(r), &a);
		if (ret)
			diverge(r, "arm", "cache_arm: %d", ret);
		r->armed = st->a != CACHE_ARM_NONE;
		r->arm_mode = st->c ? (int)(st->c - 1) : -1;
		break;
	}
	case K_FADD:
		if (st->a == 3) {
			/* A hold in the image: no fault, but a disk busy with what it keeps. */
			if (mem_gate_add(&r->mem, stepno + 1, (unsigned int)st->b, st->blk, st->nblk,
					 st->c ? (uint32_t)st->c : 3))
				break;
			r->fault_id[stepno] = stepno + 1;
			r->fault_kind[stepno] = FK_GATE | 2 |
						((st->b & (1 << BIO_OP_WRITE)) ? 4 : 0);
			fault_count(r, r->fault_kind[stepno], 1);
			break;
		}
		fault_text(st, stepno, text, sizeof(text));
		ret = fault_add(RFAULTS(r), text, FAULT_FROM_CONTROL, err, sizeof(err));
		if (ret == -ENOSPC)
			break;
		if (ret < 0) {
			diverge(r, "fault-add", "fault_add \"%s\": %s", text, err);
			break;
		}
		r->fault_id[stepno] = ret;
		r->fault_kind[stepno] = (st->a == 2 ? 3 : st->a ? 2 : 1) |
					((st->b & (1 << BIO_OP_WRITE)) ? 4 : 0);
		if (!st->a && st->c == 1 && !st->nblk && (st->b & (1 << BIO_OP_FLUSH)))
			r->fault_kind[stepno] |= FK_FLUSH_ERR;
		fault_count(r, r->fault_kind[stepno], 1);
		break;
	case K_FDEL:
		if (st->a < 0 || !r->fault_id[st->a])
			break;
		if (r->fault_kind[st->a] & FK_GATE)
			mem_gate_del(&r->mem, r->fault_id[st->a]);
		else if (fault_del(RFAULTS(r), (unsigned int)r->fault_id[st->a]))
			diverge(r, "fault-del", "fault_del %d failed", r->fault_id[st->a]);
		fault_gone(r, (int)st->a);
		break;
	case K_RELEASE:
		if (st->a >= 0 && !r->fault_id[st->a])
			break;
		if (st->a < 0 || (r->fault_kind[st->a] & FK_GATE))
			mem_gate_release(&r->mem, st->a < 0 ? 0 : r->fault_id[st->a]);
		if (st->a < 0 || !(r->fault_kind[st->a] & FK_GATE))
			fault_release(RFAULTS(r), st->a < 0 ? 0 : (unsigned int)r->fault_id[st->a]);
		break;
	case K_RELOAD: {
		char specs[2][256], *v[2] = { specs[0], specs[1] };
		int kind[2] = { 0, 0 };

		for (int i = 0; i < st->a; i++)
			kind[i] = reload_spec(r, st, i, specs[i], sizeof(specs[i]));
		struct chain_params p = { .faults = v, .nfaults = (size_t)st->a };

		ret = chain_reconfigure(&r->ch, &p, err, sizeof(err));
		if (ret) {
			diverge(r, "fault-reload", "chain_reconfigure: %s", err);
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (r->cfg_kind[i])
				fault_count(r, r->cfg_kind[i], -1);
			if (kind[i])
				fault_count(r, kind[i], 1);
			r->cfg_kind[i] = kind[i];
		}
		break;
	}
	case K_RECONF: {
		struct cache_params p = RCACHE(r)->p;
		struct chain_params cp = { .cache = &p, .keep_faults = true };

		p.flush = (uint32_t)st->a;
		p.atomic_write = (uint32_t)st->b;
		p.powercut = (uint32_t)(st->c & 0xff);
		p.destage_delay_ms = (uint32_t)((st->c >> 8) & 0xff);
		p.destage_rate = (st->c >> 16) & 1 ? 1024 * 1024 : 0;
		if (chain_reconfigure(&r->ch, &cp, err, sizeof(err)))
			diverge(r, "reload", "chain_reconfigure: %s", err);
		r->flush_mode = p.flush;
		r->atomic = p.atomic_write;
		for (uint32_t i = 1; i < r->nv; i++) /* in flight: cached under either unit */
			if (r->v[i].done == NEVER && r->v[i].unit > r->atomic)
				r->v[i].unit = r->atomic;
		r->cut_mode = p.powercut;
		break;
	}
	case K_FREEZE: {
		uint8_t *img = malloc(DISK);
		uint64_t now;
		int64_t bad, v;
		int fret;

		/* As the control file's freeze: the queue, then the cache below it. */
		queue_freeze(&r->q, NULL, NULL);
		fret = chain_freeze(&r->ch);
		now = ++r->lt;
		snapshot_image(r, img);
		if (!fret && (r->checks & CHK_D6_FREEZE) &&
		    (bad = first_disallowed_block(r, img, now, now, &v)) >= 0) {
			char n1[64];

			diverge(r, "freeze", "after freeze block %u of the image holds %s, not what "
				"was acknowledged there", (uint32_t)bad,
				val_name(r, v, n1, sizeof(n1)));
		}
		chain_thaw(&r->ch);
		queue_thaw(&r->q);
		free(img);
		break;
	}
	default:
		break;
	}
}

/* May step @st run now? Steps that cannot are skipped, the same way in every replay. */
static bool step_runs(struct run *r, const struct step *st)
{
	if (step_needs_actor(st->k) && !idle_actor(r))
		return false;
	switch (st->k) {
	case K_FREEZE: /* freeze waits for stalled requests: only with none */
		return !r->nstall_live && !any_parked(r, job_any);
	case K_ON:
		if (!(r->checks & CHK_D1_READ_ACROSS_CUT) && any_parked(r, job_crossed_read))
			return false;
		if (!(r->checks & CHK_FX_FLUSH_ACROSS_CUT) && any_parked(r, job_crossed_flush))
			return false;
		return true;
	default:
		return true;
	}
}

static void run_step(struct run *r, const struct step *st, int stepno)
{
	struct actor *a = NULL;
	struct job job, *j = &job;
	bool here, tick_pre = false;

	r->cur_step = stepno;
	/* Nothing waits: no destage that an error fault planned to fail is still held. */
	if (r->werr_seen && !r->nwerr_live && !any_parked(r, job_any))
		r->werr_seen = false;
	if (!step_needs_actor(st->k)) {
		run_inline(r, st, stepno);
		/* What they release runs on; and a thread woken while this one held the cache's
		 * lock (arm, reconfigure) may not have run yet. */
		settle(r);
		return;
	}
	/* With no stall in force nothing can wait (every stage is synchronous and nothing else
	 * is in flight): run the step in this thread, which is the same and much cheaper. */
	here = !r->nstall_live && !any_parked(r, job_any);
	if (!here) {
		a = idle_actor(r);
		if (!a)
			return; /* step_runs() said there was one */
	}
	memset(j, 0, sizeof(*j));
	j->st = st;
	j->stepno = stepno;
	j->issue = ++r->lt;
	r->step_issue = j->issue;
	j->issued_off = !r->powered;
	j->err_ok = r->nerr_live > 0;
	j->errgen = r->errgen;
	j->honour = r->flush_mode == CACHE_FLUSH_HONOUR;
	j->mode = st->k == K_CUT ? (int)st->a : -1;
	j->must_fail = st->k == K_FLUSH && r->powered && j->honour && r->nflush_err;
	j->ferr_gone = r->flush_err_gone;
	switch (st->k) {
	case K_WRITE:
	case K_ZERO:
	case K_DISCARD: {
		struct vop *w = &r->v[r->nv];

		memset(w, 0, sizeof(*w));
		w->blk = st->blk;
		w->nblk = st->nblk;
		w->val = st->k == K_WRITE ? r->nv : 0;
		w->issue = j->issue;
		w->done = NEVER;
		w->e_lo = r->nclose;
		w->is_write = st->k != K_DISCARD;
		w->live = true;
		w->stepno = stepno;
		w->unit = r->atomic;
		for (uint32_t b = st->blk; b < st->blk + st->nblk; b++)
			r->hist[b][r->nh[b]++] = (uint16_t)r->nv;
		j->vop = (int)r->nv++;
		if (st->k == K_WRITE) {
			j->buf = malloc((uint64_t)st->nblk * BLK);
			for (uint32_t b = 0; b < st->nblk; b++)
				fill_block(j->buf + (uint64_t)b * BLK, w->val, st->blk + b);
		}
		break;
	}
	case K_READ:
		j->buf = calloc(st->nblk, BLK);
		break;
	case K_FLUSH:
		if (r->powered)
			r->nclose++;
		/* Over the cache, a fault may fail the flush before it reaches the cache and
		 * closes an epoch: from then on the epochs are not known. */
		if (r->faults_on_top && r->nerr_live)
			r->epochs_unknown = true;
		break;
	case K_TICK:
		/* The clock moves: stalls whose timeout passed end with their error. */
		smp_store_mb(r->now_ns, r->now_ns + (uint64_t)st->a * NSEC_PER_MSEC);
		if (r->armed && (r->powered || poweron_pending(r))) {
			snapshot_image(r, r->pre);
			tick_pre = true;
		}
		timer_run_due(&r->t, r->now_ns);
		/* What the timeouts release runs on before the tick: a flush or discard it lets
		 * go destages on, and the tick's cut must not race with it. */
		settle(r);
		break;
	case K_CUT:
		if (r->powered) {
			snapshot_image(r, r->pre);
			r->cut_t = j->issue;
			r->cutgen++;
			r->on_claimed = false;
			r->powered = false;
			r->armed = false;
		}
		break;
	default:
		break;
	}
	/* An armed cut may fire inside a write or a flush: keep the image from before it. (Or
	 * inside a tick that lets a waiting poweron finish first: a cut may be armed while the
	 * power is off.) */
	r->have_pre = tick_pre && r->cut_pending; /* fired in what the timeouts released */
	if (!r->have_pre && r->armed && (r->powered || poweron_pending(r)) &&
	    (st->k == K_WRITE || st->k == K_ZERO || st->k == K_FLUSH || st->k == K_TICK)) {
		snapshot_image(r, r->pre);
		r->have_pre = true;
	}
	j->cutgen = r->cutgen;
	if (here) {
		job_run(r, j);
		job_done(r, j);
		free(j->buf);
	} else {
		pthread_mutex_lock(&r->alock);
		a->job = job;
		a->state = A_GO;
		pthread_cond_signal(&a->go);
		pthread_mutex_unlock(&r->alock);
		settle(r);
	}
	if (a && st->k == K_CUT && !j->issued_off) {
		bool parked;

		pthread_mutex_lock(&r->alock);
		parked = a->state == A_RUN && a->job.stepno == stepno;
		pthread_mutex_unlock(&r->alock);
		if (parked) {
			/* Make sure: a slow machine is not a hang. */
			sleep_us(20000);
			settle(r);
			pthread_mutex_lock(&r->alock);
			parked = a->state == A_RUN && a->job.stepno == stepno;
			pthread_mutex_unlock(&r->alock);
		}
		if (parked)
			diverge(r, "cut-waits", "powercut did not return: it waits behind a stalled "
				"request");
	}
	note_armed_cut(r);
	if (r->cut_pending && !r->have_pre)
		diverge(r, "cut", "the power went off in a step no armed cut fires at");
	if (r->cut_pending && r->have_pre) {
		bool cutting;

		cache_is_powered(r, &cutting);
		if (cutting) {
			diverge(r, "cut-waits", "an armed power cut did not finish: it waits behind "
				"a stalled request");
		} else {
			r->cut_pending = false;
			check_cut_now(r, r->cut_mode_now);
		}
	}
}

/* Set-up that cannot fail in a test (must() in model.h); here outside Check's tests too
 * (make model). */
void must_fail(const char *what)
{
	fprintf(stderr, "test_model: %s failed\n", what);
	abort();
}

static void run_init(struct run *r, const struct seqcfg *cfg, unsigned int checks)
{
	struct queue_params qp;
	struct ctrl_params cp;

	memset(r, 0, sizeof(*r));
	r->checks = checks;
	pthread_mutex_init(&r->mem.lock, NULL);
	pthread_cond_init(&r->mem.cond, NULL);
	r->now_ns = T0;
	must(timer_init(&r->t, false) == 0, "timer_init");
	{
		/* As the daemon builds it: the write cache over the faults over the image. */
		static const struct stage_ops mem_ops = { .name = "memory", .exec = mem_exec };
		const struct stage mem = { .ops = &mem_ops, .self = &r->mem };
		struct cache_params p = cfg->p;
		struct chain_params chp = { .order = model_order, .timer = &r->t, .clock = clk,
					    .clock_arg = r,
					    .disk_size = DISK, .cache = &p };
		char err[256];

		p.log = (char *)"";
		if (checks & CHK_D2_LOG_EPOCHS) {
			const char *dir = getenv("TMPDIR");

			snprintf(r->log_path, sizeof(r->log_path), "%s/plugdisk-model-%d.log",
				 dir && *dir ? dir : "/tmp", (int)getpid());
			p.log = r->log_path;
		}
		must(chain_build(&r->ch, &mem, &chp, err, sizeof(err)) == 0, "chain_build");
		/* What a cut keeps goes straight to the image, past the holds: they stand for a
		 * disk still busy with the destages the cut left in flight. */
		cache_set_image(RCACHE(r), mem_image_exec, &r->mem);
	}
	ctrl_params_default(&cp);
	cp.workers = 0;
	cp.burst_ms = 0;
	must(ctrl_init(&r->ctrl, &cp, &r->t, chain_top(&r->ch)->ops->exec, chain_top(&r->ch)->self,
		       (int64_t)T0) == 0, "ctrl_init");
	r->ctrl.admit_ns = chain_admit_ns;
	r->ctrl.admit_arg = &r->ch;
	queue_params_default(&qp);
	must(queue_init(&r->q, &qp, &r->ctrl, &r->t, clk, r) == 0, "queue_init");
	r->powered = true;
	r->flush_mode = cfg->p.flush;
	if (model_order) {
		const char *f = strstr(model_order, "faults"), *c = strstr(model_order, "cache");

		r->faults_on_top = f && c && f < c;
	}
	r->cut_mode = cfg->p.powercut;
	r->atomic = cfg->p.atomic_write;
	r->nv = 1;
	pthread_mutex_init(&r->alock, NULL);
	pthread_cond_init(&r->fin, NULL);
	for (int i = 0; i < NR_ACTORS; i++) {
		r->act[i].r = r;
		pthread_cond_init(&r->act[i].go, NULL);
		must(pthread_create(&r->act[i].th, NULL, actor_main, &r->act[i]) == 0, "pthread_create");
	}
	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS; i++)
		while (!r->act[i].tid)
			pthread_cond_wait(&r->fin, &r->alock);
	pthread_mutex_unlock(&r->alock);
}

/* The write log's flush records must close epochs 1, 2, 3, ... with none missing: `plugdisk
 * replay --crash N` takes the writes of flush N's epoch + 1 as those between flush N and
 * N + 1. (Records may come out of order when flushes overlap; the set has no gap.) */
static void check_log(struct run *r)
{
	struct wlog_reader rd;
	struct wlog_rec rec;
	bool seen[2 * MAXSTEPS + 2] = { false };
	uint64_t max = 0;
	int ret;

	if (wlog_reader_open(&rd, r->log_path)) {
		diverge(r, "log", "cannot read the write log %s", r->log_path);
		return;
	}
	while ((ret = wlog_next(&rd, &rec)) == 1) {
		/* A failed flush has its own record: it used its epoch up, and says so. */
		if (rec.type != WLOG_FLUSH && rec.type != WLOG_FLUSH_FAILED)
			continue;
		if (rec.epoch == 0 || rec.epoch >= 2 * MAXSTEPS + 2 || seen[rec.epoch]) {
			diverge(r, "log-epochs", "the write log has a flush of epoch %" PRIu64
				" twice or out of range", rec.epoch);
			break;
		}
		seen[rec.epoch] = true;
		if (rec.epoch > max)
			max = rec.epoch;
	}
	wlog_reader_close(&rd);
	if (ret < 0)
		diverge(r, "log", "reading the write log: %d", ret);
	for (uint64_t e = 1; e <= max; e++)
		if (!seen[e]) {
			diverge(r, "log-epochs", "the write log's flushes skip epoch %" PRIu64 " (up "
				"to %" PRIu64 "): a flush that failed closed it, and replay --crash "
				"numbers epochs by flushes", e, max);
			break;
		}
}

/* Release everything, check the whole disk through the cache, and free the run. */
static void run_finish(struct run *r)
{
	bool stuck = false;

	r->cur_step = -1;
	fault_clear(RFAULTS(r));
	mem_gate_del(&r->mem, 0);
	r->nerr_live = r->nstall_live = r->nwerr_live = r->nflush_err = 0;
	r->flush_err_gone++; /* a flush still waiting may pass now */
	settle(r);
	pthread_mutex_lock(&r->alock);
	for (int i = 0; i < NR_ACTORS; i++)
		stuck |= r->act[i].state != A_IDLE;
	pthread_mutex_unlock(&r->alock);
	if (stuck) {
		/* Every stall is released: whatever still waits is a hang. Wait for real time
		 * before calling it one. */
		for (int i = 0; i < 200 && stuck; i++) {
			sleep_us(10000);
			settle(r);
			stuck = false;
			pthread_mutex_lock(&r->alock);
			for (int k = 0; k < NR_ACTORS; k++)
				stuck |= r->act[k].state != A_IDLE;
			pthread_mutex_unlock(&r->alock);
		}
		if (stuck) {
			diverge(r, "hang", "with every fault gone a request never completes");
			/* The threads cannot be joined: leave them (the process ends soon). */
			return;
		}
	}
	if (!r->cls) {
		uint8_t *buf = malloc(DISK);
		uint64_t ri, rd;
		int64_t bad, v;
		int ret;

		if (!cache_is_powered(r, NULL))
			chain_poweron(&r->ch);
		r->powered = true;
		ri = ++r->lt;
		ret = chain_io(r, BIO_OP_READ, 0, DISK, buf);
		rd = ++r->lt;
		if (ret)
			diverge(r, "final-read", "reading the whole disk at the end: %d", ret);
		if (!ret && (bad = first_disallowed_block(r, buf, ri, rd, &v)) >= 0) {
			char n1[64];

			diverge(r, "final-read", "at the end block %u reads %s, not a value the "
				"model allows", (uint32_t)bad, val_name(r, v, n1, sizeof(n1)));
		}
		free(buf);
	}
	r->digest = 0xcbf29ce484222325ull;
	for (uint64_t i = 0; i < DISK; i++) /* FNV-1a */
		r->digest = (r->digest ^ r->mem.img[i]) * 0x100000001b3ull;
	pthread_mutex_lock(&r->alock);
	r->quit = true;
	for (int i = 0; i < NR_ACTORS; i++)
		pthread_cond_signal(&r->act[i].go);
	pthread_mutex_unlock(&r->alock);
	for (int i = 0; i < NR_ACTORS; i++)
		pthread_join(r->act[i].th, NULL);
	queue_destroy(&r->q);
	ctrl_destroy(&r->ctrl);
	chain_writeout(&r->ch);
	chain_destroy(&r->ch);
	timer_destroy(&r->t);
	if (r->log_path[0]) {
		check_log(r);
		unlink(r->log_path);
	}
	for (int i = 0; i < NR_ACTORS; i++)
		pthread_cond_destroy(&r->act[i].go);
	pthread_cond_destroy(&r->fin);
	pthread_mutex_destroy(&r->alock);
	pthread_cond_destroy(&r->mem.cond);
	pthread_mutex_destroy(&r->mem.lock);
}

/* Run the steps of @steps that @keep marks (all when NULL). */
void run_sequence(const struct seqcfg *cfg, const struct step *steps, const bool *keep,
		  unsigned int checks, bool verbose, struct verdict *vd)
{
	struct run *r = malloc(sizeof(*r));

	if (!r)
		abort(); /* nothing to test with */
	run_init(r, cfg, checks);
	for (uint32_t i = 0; i < cfg->nsteps && !r->cls; i++) {
		if (keep && !keep[i])
			continue;
		if (!step_runs(r, &steps[i]))
			continue;
		if (verbose) {
			char buf[160];

			format_step(buf, sizeof(buf), &steps[i]);
			fprintf(stderr, "  step %3u: %s\n", i, buf);
		}
		run_step(r, &steps[i], (int)i);
	}
	run_finish(r);
	vd->cls = r->cls;
	vd->at_step = r->at_step;
	vd->hung = r->cls && !strcmp(r->cls, "hang");
	vd->digest = r->digest;
	snprintf(vd->msg, sizeof(vd->msg), "%s", r->msg);
	if (!vd->hung) /* a hung run's threads still use it */
		free(r);
}
