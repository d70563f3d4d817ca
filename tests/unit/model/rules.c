/* SPDX-License-Identifier: MIT */
/* The reference model's rules: what a read, a cut and an error may show, given what the model
 * recorded; and each request's result taken into the model. */
#include <stdarg.h>

#include "tests/unit/model/model.h"

/* Did a power cut begin while @j was in flight? */
bool crossed(const struct run *r, const struct job *j)
{
	return j->cutgen != r->cutgen;
}

void diverge(struct run *r, const char *cls, const char *fmt, ...)
{
	va_list ap;

	if (r->cls)
		return;
	r->cls = cls;
	r->at_step = r->cur_step;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
}

/* Name value @v for a message: "the write of step N", "zeroes", "garbage". */
const char *val_name(const struct run *r, int64_t v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "data no operation wrote");
	else if (!v)
		snprintf(buf, len, "zeroes");
	else
		snprintf(buf, len, "the data of step %d's write", r->v[v].stepno);
	return buf;
}


/* ---- the model's rules -------------------------------------------------------------------- */

/* May a read issued at @ri that ended at @rd see @val in block @b? */
bool read_allows(const struct run *r, uint32_t b, uint64_t ri, uint64_t rd, uint32_t val)
{
	bool base_gone = false;

	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *y = &r->v[r->hist[b][i]];

		if (y->ok && y->done < ri && r->base_t < y->issue)
			base_gone = true;
	}
	if (!base_gone && r->base_val[b] == val)
		return true;
	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *x = &r->v[r->hist[b][i]];
		bool gone = false;

		if (x->val != val || x->issue >= rd)
			continue;
		for (uint32_t j = 0; j < r->nh[b] && !gone; j++) {
			const struct vop *y = &r->v[r->hist[b][j]];

			gone = y->ok && y->done < ri && x->done < y->issue;
		}
		if (!gone)
			return true;
	}
	return false;
}

/* The first block of @img, the whole disk as a read issued at @ri that ended at @rd saw it,
 * holding what the model does not allow there, with what it holds in @v (-1: no value
 * written); -1 when every block holds an allowed value. */
int64_t first_disallowed_block(const struct run *r, const uint8_t *img, uint64_t ri,
			       uint64_t rd, int64_t *v)
{
	for (uint32_t b = 0; b < NBLK; b++) {
		*v = decode_block(img + (uint64_t)b * BLK, b);
		if (*v < 0 || !read_allows(r, b, ri, rd, (uint32_t)*v))
			return b;
	}
	return -1;
}

/* May the image keep @val in block @b at time @t, after a power loss: was it written by an
 * operation issued before @t and not replaced by a durable one issued after it ended? */
static bool durable_allows(const struct run *r, uint32_t b, uint32_t val, uint64_t t)
{
	bool base_gone = false;

	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *y = &r->v[r->hist[b][i]];

		if (y->durable && r->base_t < y->issue)
			base_gone = true;
	}
	if (!base_gone && r->base_val[b] == val)
		return true;
	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *x = &r->v[r->hist[b][i]];
		bool gone = false;

		if (x->val != val || x->issue >= t)
			continue;
		for (uint32_t j = 0; j < r->nh[b] && !gone; j++) {
			const struct vop *y = &r->v[r->hist[b][j]];

			gone = y->durable && x->done < y->issue;
		}
		if (!gone)
			return true;
	}
	return false;
}

bool cut_allows(const struct run *r, uint32_t b, uint32_t val)
{
	return durable_allows(r, b, val, r->cut_t);
}

/* A flush that succeeded at @now made every operation acknowledged before it durable: the
 * image's durable contents (as the last flush that reached the image left them) must hold
 * each block a durable operation wrote, or something newer. */
static void check_durable(struct run *r, uint64_t now)
{
	uint8_t *dur = malloc(DISK);

	must(dur != NULL, "malloc");
	snapshot_durable(r, dur);
	for (uint32_t b = 0; b < NBLK; b++) {
		bool any = false;
		int64_t v;

		for (uint32_t i = 0; i < r->nh[b] && !any; i++) {
			const struct vop *y = &r->v[r->hist[b][i]];

			any = y->durable && r->base_t < y->issue;
		}
		if (!any)
			continue;
		v = decode_block(dur + (uint64_t)b * BLK, b);
		if (v < 0 || !durable_allows(r, b, (uint32_t)v, now)) {
			char n1[64];

			diverge(r, "flush-durability", "a flush succeeded, but block %u of the "
				"image's durable contents holds %s, which a write acknowledged "
				"before the flush replaced: the flush did not reach the image",
				b, val_name(r, v, n1, sizeof(n1)));
			break;
		}
	}
	free(dur);
}

static bool covers(const struct vop *w, uint32_t b)
{
	return b >= w->blk && b < w->blk + w->nblk;
}

/* Is the value @val seen in block @b (before the cut) of an operation issued after @w ended?
 * Zeroes are anybody's: then only if a zero-valued operation after @w covers @b. */
static bool shows_later(const struct run *r, uint32_t b, uint32_t val, const struct vop *w)
{
	if (val) {
		const struct vop *y = &r->v[val];

		return y->live && w->done < y->issue;
	}
	for (uint32_t i = 0; i < r->nh[b]; i++) {
		const struct vop *y = &r->v[r->hist[b][i]];

		if (!y->val && w->done < y->issue)
			return true;
	}
	return false;
}

/* Is @val in block @b known to be older than every live operation? */
static bool shows_base(const struct run *r, uint32_t b, uint32_t val)
{
	if (val)
		return !r->v[val].live;
	for (uint32_t i = 0; i < r->nh[b]; i++)
		if (!r->v[r->hist[b][i]].val)
			return false;
	return true;
}

/* The atomic unit, in blocks, at which a cut may tear write @w: the one it was cached under. */
static uint32_t vop_unit(const struct run *r, const struct vop *w)
{
	return (w->unit ? w->unit : r->atomic) / BLK;
}

/* Check the image after a cut against the model, then start the next power cycle from it. */
void check_cut(struct run *r, int mode, const uint8_t *pre, const uint8_t *post)
{
	int64_t vi[NBLK], vx[NBLK];
	uint8_t ust[MAXV][MAXUNITS];	/* per write and unit: 1 kept, 2 lost */
	bool pending[MAXV];
	/* A destage an error fault failed, or holds to fail it (a stall over an error: no I/O,
	 * even once the fault is gone), loses its write: no order to read from the image. */
	bool constrained = !r->nwerr_live && !r->werr_seen;

	if (mode < 0 || mode >= CACHE_CUT_NR)
		mode = (int)r->cut_mode;
	for (uint32_t b = 0; b < NBLK; b++) {
		vi[b] = decode_block(pre + (uint64_t)b * BLK, b);
		vx[b] = decode_block(post + (uint64_t)b * BLK, b);
		if (vx[b] < 0) {
			diverge(r, "cut-garbage", "after a %s cut block %u holds data no operation "
				"wrote (torn inside a block?)", cache_cut_names[mode], b);
			return;
		}
		if (!cut_allows(r, b, (uint32_t)vx[b])) {
			char n1[64];

			diverge(r, "cut-durability", "after a %s cut block %u holds %s, which a "
				"durable write replaced or which was never written there",
				cache_cut_names[mode], b, val_name(r, vx[b], n1, sizeof(n1)));
			return;
		}
		if (mode == CACHE_CUT_DROP && vx[b] != vi[b]) {
			char n1[64], n2[64];

			diverge(r, "cut-drop", "a drop cut changed block %u from %s to %s", b,
				val_name(r, vi[b], n1, sizeof(n1)), val_name(r, vx[b], n2, sizeof(n2)));
			return;
		}
		if (vi[b] < 0)
			constrained = false; /* a torn destage in flight: nothing to reason on */
	}
	if (!constrained)
		goto reset;

	/* The writes the cut decides on: acknowledged, not durable, not possibly destaged. */
	memset(ust, 0, sizeof(ust));
	memset(pending, 0, sizeof(pending));
	for (uint32_t i = 1; i < r->nv; i++) {
		struct vop *w = &r->v[i];
		bool destaged = true;

		if (!w->live || !w->is_write || !w->ok || w->durable || w->done == NEVER ||
		    w->issue >= r->cut_t)
			continue;
		for (uint32_t b = w->blk; b < w->blk + w->nblk && destaged; b++)
			destaged = vi[b] == (int64_t)w->val ||
				   shows_later(r, b, (uint32_t)vi[b], w);
		pending[i] = !destaged;
	}
	/* What each block says of them: the value it shows was kept (if the cut wrote it), and
	 * every pending write after that value, over this block, was lost in this unit. */
	for (uint32_t b = 0; b < NBLK; b++) {
		uint32_t x = (uint32_t)vx[b];
		bool base = shows_base(r, b, x);

		if (vx[b] != vi[b] && x && pending[x])
			ust[x][b / vop_unit(r, &r->v[x]) - r->v[x].blk / vop_unit(r, &r->v[x])] |= 1;
		if (!x && !base)
			continue; /* zeroes of someone live: no order to read from them */
		for (uint32_t i = 1; i < r->nv; i++) {
			const struct vop *w = &r->v[i];

			if (pending[i] && covers(w, b) && i != x && (base || r->v[x].done < w->issue))
				ust[i][b / vop_unit(r, w) - w->blk / vop_unit(r, w)] |= 2;
		}
	}
	for (uint32_t i = 1; i < r->nv; i++) {
		const struct vop *w = &r->v[i];
		uint32_t unit = vop_unit(r, w), nu = (w->blk + w->nblk - 1) / unit - w->blk / unit + 1;
		uint8_t all = 0;

		if (!pending[i])
			continue;
		for (uint32_t u = 0; u < nu; u++) {
			if (ust[i][u] == 3) {
				diverge(r, "cut-unit", "a %s cut left the write of step %d (blocks "
					"%u+%u) both kept and lost inside one %u-byte atomic unit",
					cache_cut_names[mode], w->stepno, w->blk, w->nblk, unit * BLK);
				return;
			}
			all |= ust[i][u];
		}
		if (mode == CACHE_CUT_PREFIX && all == 3) {
			diverge(r, "prefix-torn", "a prefix cut tore the write of step %d (blocks "
				"%u+%u)", w->stepno, w->blk, w->nblk);
			return;
		}
		ust[i][0] = all;
	}
	if (mode != CACHE_CUT_PREFIX || r->epochs_unknown)
		goto reset;
	for (uint32_t a = 1; a < r->nv; a++) {
		const struct vop *wa = &r->v[a];

		if (!pending[a] || ust[a][0] != 2 || wa->e_lo != wa->e_hi)
			continue;
		for (uint32_t k = 1; k < r->nv; k++) {
			const struct vop *wb = &r->v[k];
			bool shadowed = false;

			if (!pending[k] || ust[k][0] != 1 || wb->e_lo != wb->e_hi)
				continue;
			if (wa->e_hi < wb->e_lo) {
				if (r->checks & CHK_D7_PREFIX_EPOCHS) {
					diverge(r, "prefix-epoch", "a prefix cut kept the write of "
						"step %d (flush epoch +%" PRIu64 ") and lost the write of "
						"step %d (earlier epoch +%" PRIu64 ")", wb->stepno,
						wb->e_lo, wa->stepno, wa->e_lo);
					return;
				}
				continue;
			}
			if (wa->e_hi != wb->e_lo || wa->done >= wb->issue)
				continue;
			/* A later write of the epoch that covers @wa may have replaced it. */
			for (uint32_t c = 1; c < r->nv && !shadowed; c++) {
				const struct vop *wc = &r->v[c];

				shadowed = c != a && wc->live && wc->is_write && wc->ok &&
					   wa->done < wc->issue && wc->e_lo == wa->e_hi &&
					   wc->e_hi == wa->e_hi && wc->blk <= wa->blk &&
					   wc->blk + wc->nblk >= wa->blk + wa->nblk;
			}
			if (!shadowed) {
				diverge(r, "prefix-order", "a prefix cut kept the write of step %d "
					"and lost the earlier write of step %d, of the same epoch",
					wb->stepno, wa->stepno);
				return;
			}
		}
	}
reset:
	/* The next power cycle starts from this image; what is in flight stays live. */
	for (uint32_t b = 0; b < NBLK; b++) {
		r->base_val[b] = (uint32_t)vx[b];
		r->nh[b] = 0;
	}
	r->base_t = r->cut_t;
	for (uint32_t i = 1; i < r->nv; i++) {
		struct vop *w = &r->v[i];

		w->live = w->live && w->done == NEVER;
		if (w->live)
			for (uint32_t b = w->blk; b < w->blk + w->nblk; b++)
				r->hist[b][r->nh[b]++] = (uint16_t)i;
	}
}

void check_cut_now(struct run *r, int mode)
{
	uint8_t *pre = malloc(DISK), *post = malloc(DISK);

	must(pre && post, "malloc");
	memcpy(pre, r->pre, DISK);
	snapshot_image(r, post);
	/* The destages a hold keeps were in flight: they land once released, after what the cut
	 * wrote and before poweron. Both images as if they had landed: they are free. */
	mem_apply_held(&r->mem, pre);
	mem_apply_held(&r->mem, post);
	check_cut(r, mode, pre, post);
	free(pre);
	free(post);
}

/* ---- results into the model ---------------------------------------------------------------- */

/* The cache's power, as it says itself: how an armed cut is seen to have fired. */
bool cache_is_powered(struct run *r, bool *cutting)
{
	bool on;

	pthread_mutex_lock(&RCACHE(r)->lock);
	on = RCACHE(r)->powered;
	if (cutting)
		*cutting = RCACHE(r)->cutting;
	pthread_mutex_unlock(&RCACHE(r)->lock);
	return on;
}

/* An armed cut fired inside the step now running: the power is off from its issue on. */
void note_armed_cut(struct run *r)
{
	if (!r->powered || !r->armed || cache_is_powered(r, NULL))
		return;
	r->powered = false;
	r->armed = false;
	r->cut_pending = true;
	r->cut_t = r->step_issue;
	r->cut_mode_now = r->arm_mode;
	r->cutgen++;
	r->on_claimed = false;
}

/* May @j have failed? From the power (EIO), or from an error fault in force at some time
 * while it was in flight. */
static bool error_allowed(struct run *r, const struct job *j)
{
	bool fault = j->err_ok || r->nerr_live || r->errgen != j->errgen;

	if (j->ret == -EIO && (j->issued_off || crossed(r, j)))
		return true;
	return fault && j->ret == -EIO;
}

void job_done(struct run *r, struct job *j)
{
	const struct step *st = j->st;
	uint64_t now;

	note_armed_cut(r);
	now = ++r->lt;
	if (j->issued_off && !r->powered && st->k != K_CUT && st->k != K_ON &&
	    st->k != K_TICK && j->ret != -EIO)
		diverge(r, "powered-off", "%s issued while the power was off returned %d, not "
			"-EIO", kind_names[st->k], j->ret);
	if (j->ret && st->k != K_CUT && st->k != K_ON && st->k != K_TICK && !error_allowed(r, j))
		diverge(r, "error", "%s blocks %u+%u failed with %d with no fault or cut to cause "
			"it", kind_names[st->k], st->blk, st->nblk, j->ret);
	if (j->vop) {
		struct vop *w = &r->v[j->vop];

		w->done = now;
		w->ok = j->ret == 0;
		w->e_hi = r->nclose;
		if (j->issued_off && j->ret == -EIO && w->live) {
			/* refused by a disk without power: it never happened */
			w->live = false;
			for (uint32_t b = w->blk; b < w->blk + w->nblk; b++)
				for (uint32_t i = 0; i < r->nh[b]; i++)
					if (r->hist[b][i] == j->vop)
						r->hist[b][i] = r->hist[b][--r->nh[b]];
		}
	}
	switch (st->k) {
	case K_READ:
		if (j->ret)
			break;
		for (uint32_t b = st->blk; b < st->blk + st->nblk; b++) {
			int64_t v = decode_block(j->buf + (uint64_t)(b - st->blk) * BLK, b);

			if (v < 0) {
				diverge(r, "read-garbage", "read blocks %u+%u: block %u holds data "
					"no operation wrote", st->blk, st->nblk, b);
				break;
			}
			if (!read_allows(r, b, j->issue, now, (uint32_t)v)) {
				char n1[64], n2[64];

				diverge(r, crossed(r, j) ? "read-across-cut" : "read", "read of step "
					"%d, blocks %u+%u%s: block %u holds %s; the image after the "
					"last cut held %s", j->stepno, st->blk, st->nblk,
					crossed(r, j) ? ", in flight across a power cut and poweron" : "",
					b, val_name(r, v, n1, sizeof(n1)),
					val_name(r, r->base_val[b], n2, sizeof(n2)));
				break;
			}
		}
		break;
	case K_FLUSH:
		if (!j->ret && j->must_fail && !crossed(r, j) && r->flush_err_gone == j->ferr_gone)
			diverge(r, "flush-error", "a flush succeeded while a fault failing every "
				"flush (op=flush error=EIO every=1) was in force");
		if (j->ret)
			break;
		if (crossed(r, j)) {
			if (r->checks & CHK_FX_FLUSH_ACROSS_CUT)
				diverge(r, "flush-across-cut", "a flush in flight across a power cut "
					"succeeded: the writes it covered were subject to the cut");
			break;
		}
		if (!j->honour)
			break;
		for (uint32_t i = 1; i < r->nv; i++)
			if (r->v[i].live && r->v[i].ok && r->v[i].done < j->issue)
				r->v[i].durable = true;
		check_durable(r, now);
		break;
	case K_CUT:
		if (j->ret == -EALREADY) {
			if (!j->issued_off)
				diverge(r, "cut", "powercut said the power was already off");
			break;
		}
		if (j->ret) {
			diverge(r, "cut", "powercut returned %d", j->ret);
			break;
		}
		if (j->issued_off) {
			diverge(r, "cut", "powercut with the power off returned 0, not -EALREADY");
			break;
		}
		check_cut_now(r, j->mode);
		break;
	case K_ON:
		/* A poweron waits for what the cut left in flight, so several may wait at once:
		 * one of them powers on (0), the others find it on (-EALREADY). */
		if (j->ret == 0) {
			if (!job_may_power_on(r, j) || r->on_claimed)
				diverge(r, "poweron", "poweron with the power on returned 0");
			r->on_claimed = true;
		} else if (j->ret == -EALREADY) {
			if (!r->powered && !poweron_pending(r))
				diverge(r, "poweron", "poweron with the power off returned -EALREADY");
		} else {
			diverge(r, "poweron", "poweron returned %d", j->ret);
		}
		r->powered = true;
		break;
	default:
		break;
	}
}
