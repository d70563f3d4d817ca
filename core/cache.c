// SPDX-License-Identifier: MIT
/* The volatile write cache and the power cut.
 *
 * Notes on the design.
 *
 * The cache is an I/O stage between the controller and the backend. With cache.mode =
 * writeback the daemon puts it there; with none it is not in the path at all.
 *
 * Pending writes. A write completes once its data is copied into a struct cache_write on
 * c->head..c->tail, in completion order (seq). It belongs to the open flush epoch
 * (c->epoch). A flush closes that epoch (epoch++) the moment it reaches the cache, so a write
 * still in flight then, which nobody has been told is done, falls into the next epoch; that is
 * the order dm-log-writes records. The flush then destages every write of the epochs it
 * closed, calls the lower stage's flush (fdatasync) and only then completes: every write that
 * completed before the flush was issued is on the image and synced. With cache.flush =
 * ignore it completes at once and nothing is made durable (a disk that lies).
 *
 * Destaging. A background thread (or cache_tick() in unit tests) writes pending writes to the
 * image once they have waited cache.destage_delay_ms, at cache.destage_rate, picking a
 * random eligible one among the oldest (PICK_WINDOW) each time: a drive's cache does not
 * destage in submission order. A chunk index (struct chunk_link) finds the pending writes
 * that overlap a range without walking the list.
 * A write is eligible when no older pending write overlaps it, so overlapping writes reach
 * the image in their order and the image never holds an older write over a newer one.
 * Flushes, discards and a write that finds the cache full destage in the same random order
 * in their own thread, without the rate (the controller's latency models their cost).
 * A new write that covers a pending write of the same epoch supersedes it, as a drive
 * overwrites a cache line: a hot block does not pile up copies.
 *
 * Reads. A read takes a reference on every pending write it overlaps, reads the image, then
 * lays those writes over what it read, oldest first. A write destaged meanwhile is then laid
 * over its own data, which is harmless; one that was destaged before is in what was read.
 *
 * The power cut. c->powered goes false under the lock, so nothing new gets in; the cut waits
 * for the destages in flight (they reach the image), takes the pending list, and decides for
 * each write from a seeded generator what reaches the image, by cache.powercut:
 *   drop    nothing;
 *   prefix  in each epoch, the first k writes in completion order, k uniform in 0..n;
 *   subset  each write independently: kept, dropped, or torn;
 *   tear    every write torn.
 * Torn: the write is split at the atomic unit's boundaries (cache.atomic_write, aligned on
 * the disk) and each piece is kept or dropped on its own; inside a unit it is all or nothing.
 * Kept pieces are written in completion order. Bytes outside a write's range never change.
 * The seed is logged with the cut's summary, every choice at debug level, and the same seed
 * over the same pending writes makes the same choices. Until cache_poweron() every request
 * fails with EIO.
 *
 * Locking: one mutex, c->lock, guards everything; it is never held across the lower stage.
 * A write being destaged is marked (destaging) and stays on the list until it is on the
 * image; a cut waits for c->destaging to fall to 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cache.h"
#include "core/prng.h"
#include "core/clock.h"
#include "core/log.h"

const char *const cache_mode_names[] = { "none", "writeback", NULL };
const char *const cache_flush_names[] = { "honour", "ignore", NULL };
const char *const cache_cut_names[] = { "drop", "prefix", "subset", "tear", NULL };

/* One link of a pending write in the chunk index: a write is on the bucket list of every
 * CACHE_CHUNK-sized chunk of the disk it touches, so that finding the writes that overlap a
 * range costs the chunks it spans, not the whole list. */
struct chunk_link {
	struct chunk_link *prev, *next;	/* c->lock: the bucket's list */
	uint64_t chunk;			/* offset >> CACHE_CHUNK_SHIFT */
	struct cache_write *w;
};

#define CACHE_CHUNK_SHIFT 16
#define CACHE_BUCKETS (1u << 16)

struct cache_write {
	struct cache_write *prev, *next;	/* c->lock: the pending list, oldest first */
	struct chunk_link *links;	/* nlinks, allocated with the write */
	uint32_t nlinks;
	uint64_t seq;		/* completion order */
	uint64_t epoch;
	uint64_t offset, len;	/* bytes */
	uint64_t cached_ns;	/* when it completed */
	bool destaging;		/* c->lock: being written to the image */
	bool detached;		/* c->lock: off the list, freed by the last reader */
	bool older_overlap;	/* c->lock: an older pending write overlapped it when cached */
	uint64_t mark;		/* c->lock: the query that last saw it (see overlaps()) */
	unsigned int refs;	/* c->lock: readers laying it over their data */
	uint8_t data[];
};

int cache_name_index(const char *const *names, const char *name)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

void cache_params_default(struct cache_params *p)
{
	memset(p, 0, sizeof(*p));
	p->mode = CACHE_MODE_NONE;
	p->size = CACHE_DEFAULT_SIZE;
	p->destage_delay_ms = CACHE_DEFAULT_DESTAGE_DELAY_MS;
	p->destage_rate = CACHE_DEFAULT_DESTAGE_RATE;
	p->flush = CACHE_FLUSH_HONOUR;
	p->atomic_write = CACHE_DEFAULT_ATOMIC_WRITE;
	p->powercut = CACHE_CUT_SUBSET;
	p->seed = 0;
}

static uint64_t cache_now(const struct cache *c)
{
	return c->clock ? c->clock(c->clock_arg) : clock_now_ns();
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

static size_t chunk_bucket(const struct cache *c, uint64_t chunk)
{
	return (size_t)((chunk * 0x9e3779b97f4a7c15ull) >> 32) & (c->nbuckets - 1);
}

static void index_add(struct cache *c, struct cache_write *w)
{
	uint64_t first = w->offset >> CACHE_CHUNK_SHIFT;

	for (uint32_t i = 0; i < w->nlinks; i++) {
		struct chunk_link *l = &w->links[i];
		struct chunk_link **head = &c->buckets[chunk_bucket(c, first + i)];

		l->chunk = first + i;
		l->w = w;
		l->prev = NULL;
		l->next = *head;
		if (*head)
			(*head)->prev = l;
		*head = l;
	}
}

static void index_del(struct cache *c, struct cache_write *w)
{
	for (uint32_t i = 0; i < w->nlinks; i++) {
		struct chunk_link *l = &w->links[i];

		if (l->prev)
			l->prev->next = l->next;
		else
			c->buckets[chunk_bucket(c, l->chunk)] = l->next;
		if (l->next)
			l->next->prev = l->prev;
	}
}

/* Call @fn for every pending write other than @self that overlaps [off, off+len) and is
 * older than @max_seq, each once, in no particular order; stop when it returns true.
 * Returns whether it stopped. c->lock held; @fn may not change the index. */
static bool overlaps(struct cache *c, uint64_t off, uint64_t len, uint64_t max_seq,
		     bool (*fn)(struct cache_write *o, void *arg), void *arg)
{
	uint64_t first = off >> CACHE_CHUNK_SHIFT, last = (off + len - 1) >> CACHE_CHUNK_SHIFT;
	uint64_t mark = ++c->query;

	for (uint64_t k = first; k <= last; k++) {
		for (struct chunk_link *l = c->buckets[chunk_bucket(c, k)]; l; l = l->next) {
			struct cache_write *o = l->w;

			if (l->chunk != k || o->mark == mark || o->seq >= max_seq)
				continue;
			o->mark = mark;
			if (ranges_overlap(o->offset, o->len, off, len) && fn(o, arg))
				return true;
		}
	}
	return false;
}

static bool found_one(struct cache_write *o, void *arg)
{
	(void)o, (void)arg;
	return true;
}

/* Copy between a request's buffers, from byte @at of the request, and @buf. */
static void rq_copy(struct request *rq, uint64_t at, void *buf, uint64_t len, bool to_rq)
{
	uint64_t pos = 0;
	uint8_t *p = buf;

	for (struct bio *bio = rq->bio; bio && len; bio = bio->next) {
		for (int i = 0; i < bio->iovcnt && len; i++) {
			uint64_t ilen = bio->iov[i].iov_len, skip, n;

			if (pos + ilen <= at) {
				pos += ilen;
				continue;
			}
			skip = at > pos ? at - pos : 0;
			n = ilen - skip < len ? ilen - skip : len;
			if (to_rq)
				memcpy((uint8_t *)bio->iov[i].iov_base + skip, p, n);
			else
				memcpy(p, (uint8_t *)bio->iov[i].iov_base + skip, n);
			p += n;
			len -= n;
			at += n;
			pos += ilen;
		}
	}
}

/* Write @len bytes of @data at @off through the lower stage. 0 or -errno. */
static int lower_write(struct cache *c, uint64_t off, const void *data, uint64_t len)
{
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct bio bio = { .op = BIO_OP_WRITE, .offset = off, .len = (uint32_t)len, .iovcnt = 1,
			   .iov = &iov };
	struct request rq = { .op = BIO_OP_WRITE, .offset = off, .len = len, .bio = &bio,
			      .biotail = &bio, .nr_bios = 1, .nr_iov = 1 };

	return io_exec_wait(c->lower, c->lower_arg, &rq);
}

static int lower_simple(struct cache *c, struct request *orig, enum bio_op op)
{
	struct request rq = { .op = op, .offset = orig->offset, .len = orig->len,
			      .bio = orig->bio, .biotail = orig->biotail,
			      .nr_bios = orig->nr_bios, .nr_iov = orig->nr_iov };

	return io_exec_wait(c->lower, c->lower_arg, &rq);
}

static void write_unlink(struct cache *c, struct cache_write *w)
{
	index_del(c, w);
	if (w->prev)
		w->prev->next = w->next;
	else
		c->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		c->tail = w->prev;
	w->prev = w->next = NULL;
	c->dirty -= w->len;
	c->nr_dirty--;
	if (w->refs)
		w->detached = true;
	else
		free(w);
}

/* May @w go to the image now? c->lock held. */
static bool write_is_eligible(struct cache *c, struct cache_write *w)
{
	if (w->destaging)
		return false;
	if (!w->older_overlap)
		return true;
	if (overlaps(c, w->offset, w->len, w->seq, found_one, NULL))
		return false;
	w->older_overlap = false; /* older writes never appear later */
	return true;
}

/* Which writes a destage pass may take. */
struct destage_filter {
	uint64_t max_epoch;	/* only writes of epochs <= this */
	uint64_t due_ns;	/* only writes cached at or before this */
};

static bool write_matches(const struct cache_write *w, const struct destage_filter *f)
{
	return w->epoch <= f->max_epoch && w->cached_ns <= f->due_ns;
}

/* How far from the oldest write the random pick may start: the writes that match a filter
 * are a prefix of the list (epochs and cache times grow with seq), so a pick looks at the
 * oldest ones, in a random order within this window, and never walks the whole list. */
#define PICK_WINDOW 64

/* A random eligible write that matches @f, or NULL. c->lock held. */
static struct cache_write *pick_eligible(struct cache *c, const struct destage_filter *f)
{
	struct cache_write *start, *w;
	uint64_t r;

	if (!c->head || !write_matches(c->head, f))
		return NULL;
	r = prng_splitmix64(&c->destage_rng) % (c->nr_dirty < PICK_WINDOW ? c->nr_dirty : PICK_WINDOW);
	for (start = c->head; r-- && start->next && write_matches(start->next, f);)
		start = start->next;
	/* From the start to the end of the matching prefix, then from the head to the start. */
	for (w = start; w && write_matches(w, f); w = w->next)
		if (write_is_eligible(c, w))
			return w;
	for (w = c->head; w != start; w = w->next)
		if (write_is_eligible(c, w))
			return w;
	return NULL;
}

/* Write @w to the image and take it off the list. c->lock held; dropped meanwhile. */
static int destage_one(struct cache *c, struct cache_write *w)
{
	int ret;

	w->destaging = true;
	c->destaging++;
	pthread_mutex_unlock(&c->lock);
	ret = lower_write(c, w->offset, w->data, w->len);
	pthread_mutex_lock(&c->lock);
	w->destaging = false;
	c->destaging--;
	if (ret == 0) {
		c->st.destaged_bytes += w->len;
		c->st.destaged_writes++;
		write_unlink(c, w);
	}
	pthread_cond_broadcast(&c->cond);
	return ret;
}

/* Destage every write matching @f, waiting for those others are destaging. c->lock held.
 * 0, -EIO when the power goes, or the lower stage's error. */
static int drain(struct cache *c, const struct destage_filter *f)
{
	for (;;) {
		struct cache_write *w;
		int ret;

		if (!c->powered)
			return -EIO;
		if (!c->head || !write_matches(c->head, f))
			return 0; /* the oldest write is the first to match */
		w = pick_eligible(c, f);
		if (!w) {
			pthread_cond_wait(&c->cond, &c->lock);
			continue;
		}
		ret = destage_one(c, w);
		if (ret)
			return ret;
	}
}

static const struct destage_filter filter_all = { UINT64_MAX, UINT64_MAX };

/* --- the power cut ---------------------------------------------------------------------- */

/* What the cut keeps of @w: a bitmap of its atomic units, returned in @keep (nunits bits).
 * Returns the bytes kept. */
static uint64_t cut_tear(struct cache *c, const struct cache_write *w, uint64_t *rng,
			 uint8_t *keep, uint64_t nunits)
{
	uint64_t unit = c->p.atomic_write, kept = 0, u = 0;

	for (uint64_t off = w->offset; off < w->offset + w->len; u++) {
		uint64_t end = (off / unit + 1) * unit;

		if (end > w->offset + w->len)
			end = w->offset + w->len;
		if (u < nunits && (prng_splitmix64(rng) & 1)) {
			keep[u / 8] |= (uint8_t)(1u << (u % 8));
			kept += end - off;
		}
		off = end;
	}
	return kept;
}

static uint64_t write_units(const struct cache_write *w, uint64_t unit)
{
	return (w->offset + w->len - 1) / unit - w->offset / unit + 1;
}

/* Write the kept units of @w to the image, each run of kept units as one write. */
static int cut_apply(struct cache *c, const struct cache_write *w, const uint8_t *keep)
{
	uint64_t unit = c->p.atomic_write, end = w->offset + w->len, off = w->offset, u = 0;
	uint64_t run = 0;
	bool in_run = false;
	int ret = 0, r;

	while (off < end) {
		uint64_t next = (off / unit + 1) * unit;
		bool k = keep[u / 8] & (1u << (u % 8));

		if (next > end)
			next = end;
		if (k && !in_run) {
			run = off;
			in_run = true;
		} else if (!k && in_run) {
			r = lower_write(c, run, w->data + (run - w->offset), off - run);
			if (r && !ret)
				ret = r;
			in_run = false;
		}
		off = next;
		u++;
	}
	if (in_run) {
		r = lower_write(c, run, w->data + (run - w->offset), end - run);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

/* Finish a cut begun by setting c->powered = false. c->lock held; dropped meanwhile. */
static void cut_finish(struct cache *c, int mode, uint64_t seed, const char *why)
{
	struct cache_write *list, *w, *next;
	uint64_t rng = seed, pending = 0, kept_bytes = 0, nkept = 0, ntorn = 0, ndropped = 0;
	uint64_t n = 0, epoch_left = 0, epoch_keep = 0;
	int ret = 0;

	if (mode < 0 || mode >= CACHE_CUT_NR)
		mode = (int)c->p.powercut;
	c->cutting = true;
	if (c->has_log)
		wlog_append(&c->wlog, WLOG_CUT, c->epoch, 0, 0, NULL);
	pthread_cond_broadcast(&c->cond); /* flushes and full-cache writers fail now */
	while (c->destaging)
		pthread_cond_wait(&c->cond, &c->lock);
	list = c->head;
	c->head = c->tail = NULL;
	memset(c->buckets, 0, c->nbuckets * sizeof(*c->buckets)); /* every write leaves */
	pending = c->dirty;
	n = c->nr_dirty;
	c->dirty = 0;
	c->nr_dirty = 0;
	c->arm.kind = CACHE_ARM_NONE;
	pthread_mutex_unlock(&c->lock);

	for (w = list; w; w = w->next) {
		uint64_t nunits = write_units(w, c->p.atomic_write);
		uint8_t keepbuf[64], *keep = keepbuf;
		const char *what;
		uint64_t kept = 0;

		if ((nunits + 7) / 8 > sizeof(keepbuf)) {
			keep = calloc(1, (nunits + 7) / 8);
			if (!keep) {
				log_err("powercut: out of memory: dropping write seq %" PRIu64,
					w->seq);
				ndropped++;
				continue;
			}
		} else {
			memset(keepbuf, 0, sizeof(keepbuf));
		}
		switch (mode) {
		case CACHE_CUT_PREFIX:
			if (!epoch_left) {
				/* first write of an epoch: count it and draw its prefix */
				for (next = w; next && next->epoch == w->epoch; next = next->next)
					epoch_left++;
				epoch_keep = prng_splitmix64(&rng) % (epoch_left + 1);
			}
			kept = epoch_keep ? w->len : 0;
			if (epoch_keep)
				epoch_keep--;
			epoch_left--;
			break;
		case CACHE_CUT_SUBSET:
			switch (prng_splitmix64(&rng) % 3) {
			case 0:
				kept = w->len;
				break;
			case 1:
				break;
			default:
				kept = cut_tear(c, w, &rng, keep, nunits);
				break;
			}
			break;
		case CACHE_CUT_TEAR:
			kept = cut_tear(c, w, &rng, keep, nunits);
			break;
		default: /* CACHE_CUT_DROP */
			break;
		}
		if (kept == w->len) {
			memset(keep, 0xff, (nunits + 7) / 8);
			what = "kept";
			nkept++;
		} else if (kept) {
			what = "torn";
			ntorn++;
		} else {
			what = "dropped";
			ndropped++;
		}
		log_debug("powercut: write seq %" PRIu64 " epoch %" PRIu64 " offset %" PRIu64
			  " len %" PRIu64 ": %s (%" PRIu64 " bytes kept)",
			  w->seq, w->epoch, w->offset, w->len, what, kept);
		if (kept) {
			int r = cut_apply(c, w, keep);
			if (r && !ret)
				ret = r;
		}
		kept_bytes += kept;
		if (keep != keepbuf)
			free(keep);
	}

	pthread_mutex_lock(&c->lock);
	for (w = list; w; w = next) {
		next = w->next;
		w->prev = w->next = NULL;
		if (w->refs)
			w->detached = true;
		else
			free(w);
	}
	c->st.powercuts++;
	c->st.last_cut_pending = pending;
	c->st.last_cut_dropped = pending - kept_bytes;
	c->st.last_cut_seed = seed;
	log_info("powercut (%s): mode %s seed %" PRIu64 ": %" PRIu64 " pending writes (%" PRIu64
		 " bytes): %" PRIu64 " kept, %" PRIu64 " torn, %" PRIu64 " dropped; %" PRIu64
		 " bytes lost; epochs up to %" PRIu64 " were durable%s",
		 why, cache_cut_names[mode], seed, n, pending, nkept, ntorn, ndropped,
		 pending - kept_bytes, c->durable_epoch, ret ? "; writing kept data failed" : "");
	c->cutting = false;
	pthread_cond_broadcast(&c->cond);
}

/* A cut from inside the data path or the tick. c->lock held. */
static void cut_now_locked(struct cache *c, const char *why)
{
	int mode = c->arm.has_mode ? (int)c->arm.mode : -1;

	c->powered = false;
	cut_finish(c, mode, prng_splitmix64(&c->cut_rng), why);
}

/* Does an armed cut fire at this op? c->lock held. */
static bool arm_fires(struct cache *c, enum bio_op op)
{
	struct cache_arm *a = &c->arm;

	switch (a->kind) {
	case CACHE_ARM_FLUSH:
		return op == BIO_OP_FLUSH && ++a->flushes == a->n;
	case CACHE_ARM_WRITE:
		if (op == BIO_OP_FLUSH && a->flushes < a->after_flush)
			a->flushes++;
		else if (op == BIO_OP_WRITE && a->flushes >= a->after_flush)
			return ++a->writes == a->n;
		return false;
	case CACHE_ARM_RANDOM:
		if (op != BIO_OP_WRITE && op != BIO_OP_FLUSH)
			return false;
		return ++a->writes == a->n;
	case CACHE_ARM_TIME:
		return cache_now(c) >= a->at_ns;
	default:
		return false;
	}
}

static const char *arm_name(enum cache_arm_kind k)
{
	switch (k) {
	case CACHE_ARM_FLUSH: return "armed at a flush";
	case CACHE_ARM_WRITE: return "armed at a write";
	case CACHE_ARM_RANDOM: return "armed at a random op";
	case CACHE_ARM_TIME: return "armed at a time";
	default: return "none";
	}
}

/* --- the stage -------------------------------------------------------------------------- */

/* The overlapping writes a read lays over its data. */
struct collect {
	struct cache_write **v;
	size_t n, cap;
	bool oom;
	struct cache_write **stackv;
};

static bool collect_one(struct cache_write *o, void *arg)
{
	struct collect *col = arg;

	if (col->n == col->cap) {
		struct cache_write **nv = malloc(2 * col->cap * sizeof(*nv));

		if (!nv) {
			col->oom = true;
			return true;
		}
		memcpy(nv, col->v, col->n * sizeof(*nv));
		if (col->v != col->stackv)
			free(col->v);
		col->v = nv;
		col->cap *= 2;
	}
	col->v[col->n++] = o;
	return false;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct cache_write *x = *(struct cache_write *const *)a;
	const struct cache_write *y = *(struct cache_write *const *)b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cache_read(struct cache *c, struct request *rq)
{
	struct cache_write *stackv[16], **v = stackv;
	size_t n = 0;
	int ret;

	pthread_mutex_lock(&c->lock);
	if (!c->powered) {
		pthread_mutex_unlock(&c->lock);
		return -EIO;
	}
	if (c->head) {
		struct collect col = { stackv, 0, 16, false, stackv };

		overlaps(c, rq->offset, rq->len, UINT64_MAX, collect_one, &col);
		v = col.v;
		n = col.n;
		if (col.oom) {
			ret = -ENOMEM;
			goto out_unref;
		}
		qsort(v, n, sizeof(*v), cmp_seq);
		for (size_t i = 0; i < n; i++)
			v[i]->refs++;
	}
	pthread_mutex_unlock(&c->lock);

	ret = lower_simple(c, rq, BIO_OP_READ);
	for (size_t i = 0; i < n && ret == 0; i++) {
		uint64_t s = v[i]->offset > rq->offset ? v[i]->offset : rq->offset;
		uint64_t e = v[i]->offset + v[i]->len < rq_end(rq) ? v[i]->offset + v[i]->len
								     : rq_end(rq);

		rq_copy(rq, s - rq->offset, v[i]->data + (s - v[i]->offset), e - s, true);
	}

	pthread_mutex_lock(&c->lock);
	if (!c->powered)
		ret = -EIO;
	for (size_t i = 0; i < n; i++)
		if (--v[i]->refs == 0 && v[i]->detached)
			free(v[i]);
out_unref:
	pthread_mutex_unlock(&c->lock);
	if (v != stackv)
		free(v);
	return ret;
}

static int cache_write(struct cache *c, struct request *rq)
{
	struct cache_write *w, *o, *stackv[16];
	bool was_empty;

	uint64_t nlinks = ((rq_end(rq) - 1) >> CACHE_CHUNK_SHIFT) - (rq->offset >> CACHE_CHUNK_SHIFT) + 1;

	if (!rq->len)
		return 0;
	w = malloc(sizeof(*w) + rq->len + nlinks * sizeof(struct chunk_link) + 8);
	if (!w)
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	w->offset = rq->offset;
	w->len = rq->len;
	w->nlinks = (uint32_t)nlinks;
	/* The links follow the data, 8-byte aligned. */
	w->links = (struct chunk_link *)(((uintptr_t)(w->data + rq->len) + 7) & ~(uintptr_t)7);
	rq_copy(rq, 0, w->data, rq->len, false);

	pthread_mutex_lock(&c->lock);
	if (c->powered && arm_fires(c, BIO_OP_WRITE))
		cut_now_locked(c, arm_name(c->arm.kind));
	/* Room: destage in this thread, as a full drive cache makes the host wait. */
	while (c->powered && c->dirty + w->len > c->p.size) {
		o = pick_eligible(c, &filter_all);
		if (o) {
			int ret = destage_one(c, o);

			if (ret) {
				pthread_mutex_unlock(&c->lock);
				free(w);
				return ret;
			}
		} else {
			pthread_cond_wait(&c->cond, &c->lock);
		}
	}
	if (!c->powered) {
		pthread_mutex_unlock(&c->lock);
		free(w);
		return -EIO;
	}
	w->seq = ++c->seq;
	w->epoch = c->epoch;
	w->cached_ns = cache_now(c);
	/* Supersede what it covers in its epoch; note whether an older write overlaps. */
	if (c->head) {
		struct collect col = { stackv, 0, 16, false, stackv };

		overlaps(c, w->offset, w->len, UINT64_MAX, collect_one, &col);
		for (size_t i = 0; i < col.n; i++) {
			o = col.v[i];
			if (o->epoch == w->epoch && !o->destaging && !o->refs &&
			    o->offset >= w->offset && o->offset + o->len <= w->offset + w->len)
				write_unlink(c, o);
			else
				w->older_overlap = true;
		}
		if (col.oom)
			w->older_overlap = true; /* some went unseen: check at destage time */
		if (col.v != stackv)
			free(col.v);
	}
	index_add(c, w);
	was_empty = !c->head;
	w->prev = c->tail;
	if (c->tail)
		c->tail->next = w;
	else
		c->head = w;
	c->tail = w;
	c->dirty += w->len;
	c->nr_dirty++;
	if (c->has_log)
		wlog_append(&c->wlog, WLOG_WRITE, w->epoch, w->offset, w->len, w->data);
	if (was_empty)
		pthread_cond_broadcast(&c->cond); /* the destage thread sleeps without work */
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int cache_flush(struct cache *c, struct request *rq)
{
	struct destage_filter f = { 0, UINT64_MAX };
	uint64_t epoch;
	int ret;

	pthread_mutex_lock(&c->lock);
	if (c->powered && arm_fires(c, BIO_OP_FLUSH))
		cut_now_locked(c, arm_name(c->arm.kind));
	if (!c->powered) {
		pthread_mutex_unlock(&c->lock);
		return -EIO;
	}
	epoch = c->epoch++;
	c->st.flushes++;
	if (c->p.flush == CACHE_FLUSH_IGNORE) {
		c->st.flushes_ignored++;
		if (c->has_log) /* the host saw it complete: so does the log */
			wlog_append(&c->wlog, WLOG_FLUSH, epoch, 0, 0, NULL);
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	f.max_epoch = epoch;
	ret = drain(c, &f);
	pthread_mutex_unlock(&c->lock);
	if (ret)
		return ret;
	ret = lower_simple(c, rq, BIO_OP_FLUSH);
	pthread_mutex_lock(&c->lock);
	if (!c->powered)
		ret = -EIO;
	if (!ret && epoch > c->durable_epoch)
		c->durable_epoch = epoch;
	if (!ret && c->has_log)
		wlog_append(&c->wlog, WLOG_FLUSH, epoch, 0, 0, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static int cache_discard(struct cache *c, struct request *rq)
{
	int ret;

	/* Rare: every pending write goes first, so none lands on the discarded range later. */
	pthread_mutex_lock(&c->lock);
	ret = drain(c, &filter_all);
	pthread_mutex_unlock(&c->lock);
	if (ret)
		return ret;
	ret = lower_simple(c, rq, BIO_OP_DISCARD);
	pthread_mutex_lock(&c->lock);
	if (!c->powered)
		ret = -EIO;
	if (!ret && c->has_log)
		wlog_append(&c->wlog, WLOG_DISCARD, c->epoch, rq->offset, rq->len, NULL);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int cache_exec(void *arg, struct request *rq)
{
	struct cache *c = arg;

	switch (rq->op) {
	case BIO_OP_READ:
		return cache_read(c, rq);
	case BIO_OP_WRITE:
		return cache_write(c, rq);
	case BIO_OP_FLUSH:
		return cache_flush(c, rq);
	case BIO_OP_DISCARD:
		return cache_discard(c, rq);
	default:
		return -EINVAL;
	}
}

/* --- background destaging --------------------------------------------------------------- */

#define DESTAGE_SLACK_NS NSEC_PER_MSEC

uint64_t cache_tick(struct cache *c)
{
	struct destage_filter f = { UINT64_MAX, 0 };
	uint64_t now, delay, wait = UINT64_MAX;
	struct cache_write *w;

	pthread_mutex_lock(&c->lock);
	now = cache_now(c);
	if (c->powered && c->arm.kind == CACHE_ARM_TIME) {
		if (now >= c->arm.at_ns) {
			cut_now_locked(c, "armed at a time");
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
		wait = c->arm.at_ns - now;
	}
	if (!c->powered || !c->head)
		goto out;
	/* The rate allows a burst of DESTAGE_SLACK_NS: waking a thread for every small write
	 * would cost more than the write. */
	if (c->p.destage_rate && now + DESTAGE_SLACK_NS < c->next_destage_ns) {
		if (c->next_destage_ns - DESTAGE_SLACK_NS - now < wait)
			wait = c->next_destage_ns - DESTAGE_SLACK_NS - now;
		goto out;
	}
	delay = (uint64_t)c->p.destage_delay_ms * NSEC_PER_MSEC;
	f.due_ns = now >= delay ? now - delay : 0;
	w = pick_eligible(c, &f);
	if (!w) {
		/* The oldest write is the first due; one blocked by a destage in flight is
		 * retried when that ends (the cond wakes the thread). */
		uint64_t due = c->head->cached_ns + delay;

		if (due > now && due - now < wait)
			wait = due - now;
		else if (due <= now && NSEC_PER_MSEC < wait)
			wait = NSEC_PER_MSEC;
		goto out;
	}
	if (c->p.destage_rate) {
		uint64_t start = c->next_destage_ns > now ? c->next_destage_ns : now;

		c->next_destage_ns = start + w->len * NSEC_PER_SEC / c->p.destage_rate;
	}
	if (destage_one(c, w)) {
		/* A failing image: back off instead of spinning; flushes report the error. */
		wait = 100 * NSEC_PER_MSEC;
		goto out;
	}
	wait = 0;
out:
	pthread_mutex_unlock(&c->lock);
	return wait;
}

static void *cache_thread(void *arg)
{
	struct cache *c = arg;

	pthread_setname_np(pthread_self(), "plugdisk-cache");
	for (;;) {
		uint64_t wait = cache_tick(c);
		struct timespec ts;

		if (!wait)
			continue;
		if (wait > NSEC_PER_SEC)
			wait = NSEC_PER_SEC;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(wait / NSEC_PER_SEC);
		ts.tv_nsec += (long)(wait % NSEC_PER_SEC);
		if (ts.tv_nsec >= (long)NSEC_PER_SEC) {
			ts.tv_sec++;
			ts.tv_nsec -= (long)NSEC_PER_SEC;
		}
		pthread_mutex_lock(&c->lock);
		if (!c->stop)
			pthread_cond_timedwait(&c->cond, &c->lock, &ts);
		if (c->stop) {
			pthread_mutex_unlock(&c->lock);
			break;
		}
		pthread_mutex_unlock(&c->lock);
	}
	return NULL;
}

/* --- control ---------------------------------------------------------------------------- */

int cache_init(struct cache *c, const struct cache_params *p, io_exec_fn lower, void *lower_arg,
	       uint64_t (*clock)(void *), void *clock_arg)
{
	pthread_condattr_t ca;
	uint64_t seed;
	int err;

	memset(c, 0, sizeof(*c));
	c->p = *p;
	c->lower = lower;
	c->lower_arg = lower_arg;
	c->clock = clock;
	c->clock_arg = clock_arg;
	c->powered = true;
	c->epoch = 1;
	seed = p->seed ? p->seed : (clock_now_ns() ^ ((uint64_t)getpid() << 32));
	c->destage_rng = seed;
	c->cut_rng = seed ^ 0x5bd1e995u;
	c->nbuckets = CACHE_BUCKETS;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets)
		return -ENOMEM;
	err = pthread_mutex_init(&c->lock, NULL);
	if (err) {
		free(c->buckets);
		return -err;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (err) {
		pthread_mutex_destroy(&c->lock);
		free(c->buckets);
		return -err;
	}
	if (p->mode == CACHE_MODE_WRITEBACK)
		log_info("cache: writeback, %" PRIu64 " bytes, flush %s, powercut %s, atomic write "
			 "%" PRIu32 ", seed %" PRIu64,
			 p->size, cache_flush_names[p->flush], cache_cut_names[p->powercut],
			 p->atomic_write, seed);
	return 0;
}

int cache_open_log(struct cache *c, const char *path, uint64_t disk_size)
{
	int ret = wlog_open(&c->wlog, path, disk_size, c->p.atomic_write);

	if (ret)
		return ret;
	c->has_log = true;
	log_info("cache: logging writes and flushes to %s", path);
	return 0;
}

int cache_start_thread(struct cache *c)
{
	int err = pthread_create(&c->thread, NULL, cache_thread, c);

	if (err) {
		log_err("pthread_create (cache): %s", strerror(err));
		return -err;
	}
	c->has_thread = true;
	return 0;
}

int cache_destroy(struct cache *c)
{
	int ret = 0;

	if (c->has_thread) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
		c->has_thread = false;
	}
	pthread_mutex_lock(&c->lock);
	if (c->powered)
		ret = drain(c, &filter_all);
	for (struct cache_write *w = c->head, *next; w; w = next) {
		next = w->next;
		write_unlink(c, w);
	}
	pthread_mutex_unlock(&c->lock);
	if (ret)
		log_err("cache: destaging at exit failed: %s", strerror(-ret));
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c->buckets);
	c->buckets = NULL;
	if (c->has_log)
		wlog_close(&c->wlog);
	c->has_log = false;
	return ret;
}

int cache_powercut(struct cache *c, int mode, uint64_t seed, const char *why)
{
	pthread_mutex_lock(&c->lock);
	if (!c->powered) {
		/* Another cut (armed, or a second command): answer once the disk is down. */
		while (c->cutting)
			pthread_cond_wait(&c->cond, &c->lock);
		pthread_mutex_unlock(&c->lock);
		return -EALREADY;
	}
	c->powered = false;
	if (!seed)
		seed = prng_splitmix64(&c->cut_rng);
	cut_finish(c, mode, seed, why);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int cache_poweron(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->cutting) /* the cut's kept data goes down before anything new */
		pthread_cond_wait(&c->cond, &c->lock);
	if (c->powered) {
		pthread_mutex_unlock(&c->lock);
		return -EALREADY;
	}
	c->powered = true;
	c->next_destage_ns = 0;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	log_info("poweron: the disk serves requests again");
	return 0;
}

int cache_arm(struct cache *c, const struct cache_arm *a)
{
	struct cache_arm n = { .kind = a->kind, .has_mode = a->has_mode, .mode = a->mode };

	if (a->has_mode && a->mode >= CACHE_CUT_NR)
		return -EINVAL;
	switch (a->kind) {
	case CACHE_ARM_NONE:
		break;
	case CACHE_ARM_FLUSH:
	case CACHE_ARM_WRITE:
		if (!a->n)
			return -EINVAL;
		n.n = a->n;
		n.after_flush = a->kind == CACHE_ARM_WRITE ? a->after_flush : 0;
		break;
	case CACHE_ARM_RANDOM: {
		uint64_t s;

		if (!a->n)
			return -EINVAL;
		pthread_mutex_lock(&c->lock);
		n.seed = a->seed ? a->seed : prng_splitmix64(&c->cut_rng) | 1;
		pthread_mutex_unlock(&c->lock);
		s = n.seed;
		n.n = 1 + prng_splitmix64(&s) % a->n;
		n.range = a->n;
		break;
	}
	case CACHE_ARM_TIME:
		n.at_ns = a->at_ns;
		break;
	default:
		return -EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	c->arm = n;
	pthread_cond_broadcast(&c->cond); /* the thread's next wake-up may be the arm's time */
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void cache_reconfigure(struct cache *c, const struct cache_params *p)
{
	pthread_mutex_lock(&c->lock);
	c->p.flush = p->flush;
	c->p.destage_delay_ms = p->destage_delay_ms;
	c->p.destage_rate = p->destage_rate;
	c->p.atomic_write = p->atomic_write;
	c->p.powercut = p->powercut;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void cache_stats_reset(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	memset(&c->st, 0, sizeof(c->st));
	pthread_mutex_unlock(&c->lock);
}

void cache_snapshot(struct cache *c, struct cache_stats *st, struct cache_arm *arm)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	st->powered = c->powered;
	st->dirty_bytes = c->dirty;
	st->dirty_writes = c->nr_dirty;
	st->size = c->p.size;
	st->p = c->p;
	st->epoch = c->epoch;
	st->durable_epoch = c->durable_epoch;
	if (arm)
		*arm = c->arm;
	pthread_mutex_unlock(&c->lock);
}
