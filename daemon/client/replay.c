// SPDX-License-Identifier: MIT
/* `plugdisk replay`: rebuild an image from a write log (cache.log) at a flush boundary, or at
 * a crash state allowed between two flushes, with the write cache's own power-cut choices. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conf/parse.h"
#include "core/backend/backend.h"
#include "core/cache/cache.h"
#include "core/util/log.h"
#include "core/cache/wlog.h"
#include "core/crash/dmlog.h"
#include "daemon/daemon.h"

static void replay_usage(FILE *f)
{
	fprintf(f,
		"Usage: plugdisk replay LOG --list\n"
		"       plugdisk replay LOG --export-dm-log-writes OUT [--sector-size 512|4096]\n"
		"       plugdisk replay LOG IMAGE --flush N\n"
		"       plugdisk replay LOG IMAGE --crash N [--mode drop|prefix|subset|tear]\n"
		"                          [--seed S] [--atomic BYTES]\n"
		"\n"
		"LOG is a cache.log write log, or a dm-log-writes log (the kernel's target),\n"
		"found by its magic. IMAGE must hold what the disk held when the log\n"
		"began (a copy taken before plugdisk started, or zeros for a new disk).\n"
		"  --list     the flushes in the log, with the writes before each, and the marks\n"
		"  --flush N  apply every write the N-th completed flush made durable (0: none);\n"
		"             failed flushes are not counted (--list shows them)\n"
		"  --crash N  as --flush N, then a power cut over the writes flush N left pending\n"
		"             that completed before flush N+1 was issued, chosen by\n"
		"             --mode (default subset) from --seed (default 1)\n"
		"  --export-dm-log-writes OUT  write LOG as a dm-log-writes log, for xfstests'\n"
		"             replay-log (sectors of --sector-size bytes, default 512)\n"
		"  --atomic   the atomic write unit for tearing every write (default: the unit\n"
		"             in force when each was logged; --list shows the changes)\n"
		"A replay the log cannot meet exits 1, the image left as it was; a bad log exits 2\n"
		"(the message names the record).\n");
	pd_exit_help(f);
}

static int replay_list(struct wlog_reader *r, const struct wlog_summary *sum)
{
	uint64_t writes = 0, bytes = 0, flushes = 0, discards = 0, durable = 0;
	struct wlog_rec rec;
	int ret;

	printf("# log: disk %" PRIu64 " bytes, atomic write %" PRIu32 "\n", r->hdr.disk_size,
	       r->hdr.atomic_write);
	r->skip_data = true; /* counted, never read */
	while ((ret = wlog_next(r, &rec)) > 0) {
		switch (rec.type) {
		case WLOG_WRITE:
			writes++;
			bytes += rec.len;
			break;
		case WLOG_DISCARD:
			discards++;
			break;
		case WLOG_FLUSH:
			flushes++;
			printf("flush %" PRIu64 " epoch %" PRIu64 " after %" PRIu64 " writes (%" PRIu64
			       " bytes), %" PRIu64 " discards",
			       flushes, rec.epoch, writes, bytes, discards);
			if (rec.epoch < durable) /* completed after a later flush */
				printf("; epochs up to %" PRIu64 " were durable already", durable);
			if (rec.reserved & WLOG_F_IGNORED)
				printf("; ignored (cache.flush = ignore): it made nothing durable, "
				       "and --flush %" PRIu64 " rebuilds what it claimed", flushes);
			printf("\n");
			if (rec.epoch > durable)
				durable = rec.epoch;
			break;
		case WLOG_FLUSH_FAILED:
			printf("failed flush (epoch %" PRIu64 ") after %" PRIu64 " writes: not "
			       "counted; a later flush covers its writes\n", rec.epoch, writes);
			break;
		case WLOG_CUT:
			printf("cut after %" PRIu64 " writes; replay stops here\n", writes);
			return 0;
		case WLOG_ATOMIC:
			printf("atomic write %" PRIu64 " after %" PRIu64 " writes: a reload; the "
			       "writes from here on tear at it\n", rec.len, writes);
			break;
		case WLOG_MARK:
			printf("mark after %" PRIu64 " writes: ", writes);
			/* The text as written, with a byte that is not printable as '?'. */
			for (uint64_t i = 0; i < rec.len; i++)
				putchar(isprint(r->buf[i]) ? r->buf[i] : '?');
			putchar('\n');
			break;
		}
	}
	if (ret < 0) {
		fprintf(stderr, "plugdisk replay: record %" PRIu64 " at byte %" PRIu64 ": %s\n",
			r->nrec, r->rec_pos, ret == -EINVAL ? r->why : strerror(-ret));
		return ret == -EINVAL ? 2 : 1;
	}
	if (sum->cut_short) {
		char msg[256];

		wlog_cut_short_text(msg, sizeof(msg), sum->cut_short_after, sum->cut_short);
		printf("LOG: %s (after %" PRIu64 " writes)\n", msg, writes);
	}
	printf("end after %" PRIu64 " writes (%" PRIu64 " bytes), %" PRIu64 " flushes\n", writes,
	       bytes, flushes);
	return 0;
}

/* A bio carries at most this much (its len is 32 bits). */
#define REPLAY_BIO_MAX (1u << 30)
/* Durable writes go to the image in chunks of this much, read from the log one at a time:
 * a replay holds a chunk, not a write. */
#define REPLAY_CHUNK (1u << 20)

/* Run one I/O of any length (@data NULL for a discard) through @exec as one request, in
 * bios of at most REPLAY_BIO_MAX. 0 or -errno. */
static int replay_io(int (*exec)(void *, struct request *), void *arg, enum bio_op op,
		     uint64_t off, uint64_t len, uint8_t *data)
{
	unsigned int n = (unsigned int)((len + REPLAY_BIO_MAX - 1) / REPLAY_BIO_MAX), i;
	struct request rq = { .op = op, .offset = off, .len = len, .nr_bios = n ? n : 1 };
	struct bio *bios = calloc(rq.nr_bios, sizeof(*bios));
	struct iovec *iov = calloc(rq.nr_bios, sizeof(*iov));
	int ret;

	if (!bios || !iov) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < rq.nr_bios; i++) {
		uint64_t at = (uint64_t)i * REPLAY_BIO_MAX;
		uint32_t blen = len - at > REPLAY_BIO_MAX ? REPLAY_BIO_MAX : (uint32_t)(len - at);

		bios[i] = (struct bio){ .op = op, .offset = off + at, .len = blen };
		if (data) {
			iov[i] = (struct iovec){ data + at, blen };
			bios[i].iov = &iov[i];
			bios[i].iovcnt = 1;
		}
		if (i)
			bios[i - 1].next = &bios[i];
	}
	rq.bio = bios;
	rq.biotail = &bios[rq.nr_bios - 1];
	rq.nr_iov = data ? rq.nr_bios : 0;
	ret = exec(arg, &rq);
out:
	free(bios);
	free(iov);
	return ret;
}

static int replay_cache_exec(void *c, struct request *rq)
{
	return cache_exec(c, rq);
}

/* A durable write: straight to the image, REPLAY_CHUNK at a time from the log. */
static int replay_durable_write(struct wlog_reader *r, struct backend *be,
				const struct wlog_rec *rec, uint8_t *chunk)
{
	for (uint64_t at = 0; at < rec->len; at += REPLAY_CHUNK) {
		size_t n = rec->len - at > REPLAY_CHUNK ? REPLAY_CHUNK : (size_t)(rec->len - at);
		int ret = wlog_read_data(r, at, chunk, n);

		if (!ret)
			ret = replay_io(backend_exec, be, BIO_OP_WRITE, rec->offset + at, n, chunk);
		if (ret)
			return ret;
	}
	return 0;
}

/* A pending write: whole, into the cache, whose cut may keep, drop or tear it. */
static int replay_pending_write(struct wlog_reader *r, struct cache *c,
				const struct wlog_rec *rec)
{
	uint8_t *data = malloc(rec->len);
	int ret;

	if (!data)
		return -ENOMEM;
	ret = wlog_read_data(r, 0, data, rec->len);
	if (!ret)
		ret = replay_io(replay_cache_exec, c, BIO_OP_WRITE, rec->offset, rec->len, data);
	free(data);
	return ret;
}

/* What a replay of flush n (or a crash after it) takes from the log, found by a first pass
 * before the image is touched. Flush n is the n-th FLUSH record (failed flushes have their
 * own record and are not counted); writes and discards carry the epoch that was open when
 * they completed, and epochs only grow in the log's order, so the writes flush n made
 * durable are a prefix of them, those of epochs <= durable. */
struct replay_plan {
	uint64_t n;
	bool crash;
	uint64_t durable;	/* the largest epoch of flushes 1..n: those writes are durable */
	uint64_t pending_max;	/* crash: the epoch flush n+1 closed (UINT64_MAX: none); the
				 * writes of epochs in (durable, pending_max] go through the cut */
	uint64_t flushes;	/* FLUSH records read, up to flush n (n + 1), a cut or the end */
	uint64_t atomic_changes;	/* ATOMIC records read (reloads that changed the unit) */
	bool atomic_fixed;	/* --atomic: one unit for every write, whatever the log says */
};

/* Whether @rec ends the replay's part of the log, counting it into @plan. */
static bool replay_at_end(struct replay_plan *plan, const struct wlog_rec *rec, bool scan)
{
	if (rec->type == WLOG_CUT)
		return true;
	if (rec->type != WLOG_FLUSH)
		return false;
	plan->flushes++;
	if (plan->flushes == plan->n + 1) { /* only a crash reads this far */
		if (scan)
			plan->pending_max = rec->epoch;
		return true;
	}
	if (scan && rec->epoch > plan->durable)
		plan->durable = rec->epoch;
	return plan->flushes == plan->n && !plan->crash;
}

/* The first pass, over a validated log: fill @plan. 0 or -errno. */
static int replay_scan(struct wlog_reader *r, struct replay_plan *plan)
{
	struct wlog_rec rec;
	int ret;

	plan->durable = plan->flushes = 0;
	plan->atomic_changes = 0;
	plan->pending_max = UINT64_MAX;
	if (plan->n == 0 && !plan->crash)
		return 0;
	r->skip_data = true;
	while ((ret = wlog_next(r, &rec)) > 0) {
		if (rec.type == WLOG_ATOMIC)
			plan->atomic_changes++;
		if (replay_at_end(plan, &rec, true))
			return 0;
	}
	return ret;
}

/* A reload changed the atomic unit: the pending writes cached from here on tear at it, as
 * the daemon's did. */
static void replay_set_unit(struct cache *c, uint32_t unit)
{
	struct cache_stats st;

	cache_snapshot(c, &st, NULL);
	st.p.atomic_write = unit;
	cache_reconfigure(c, &st.p);
}

/* The second pass: the durable writes and discards straight to the image (they are a prefix
 * of the log, and a flush made each of them durable), then for a crash the pending ones into
 * the cache. Write data is read from the log as it is applied. 0 or -errno; *@applied: the
 * writes applied. */
static int replay_apply(struct wlog_reader *r, struct backend *be, struct cache *c,
			struct replay_plan *plan, uint64_t *applied)
{
	uint64_t limit = plan->durable;
	bool done = plan->n == 0 && !plan->crash;
	struct wlog_rec rec;
	uint8_t *chunk;
	int ret = 0;

	if (plan->crash && plan->pending_max > limit)
		limit = plan->pending_max;
	*applied = 0;
	plan->flushes = 0;
	r->skip_data = true;
	chunk = malloc(REPLAY_CHUNK);
	if (!chunk)
		return -ENOMEM;
	while (!done && (ret = wlog_next(r, &rec)) > 0) {
		ret = 0;
		done = replay_at_end(plan, &rec, false);
		if (rec.type == WLOG_ATOMIC && !plan->atomic_fixed)
			replay_set_unit(c, (uint32_t)rec.len);
		if ((rec.type != WLOG_WRITE && rec.type != WLOG_DISCARD) || rec.epoch > limit)
			continue;
		if (rec.type == WLOG_DISCARD)
			ret = replay_io(rec.epoch > plan->durable ? replay_cache_exec : backend_exec,
					rec.epoch > plan->durable ? (void *)c : (void *)be,
					BIO_OP_DISCARD, rec.offset, rec.len, NULL);
		else if (rec.epoch > plan->durable)
			ret = replay_pending_write(r, c, &rec);
		else
			ret = replay_durable_write(r, be, &rec, chunk);
		if (ret)
			break;
		if (rec.type == WLOG_WRITE)
			(*applied)++;
	}
	free(chunk);
	return ret < 0 ? ret : 0;
}

int pd_replay_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "list", no_argument, 0, 'l' },	{ "flush", required_argument, 0, 'f' },
		{ "crash", required_argument, 0, 'c' }, { "mode", required_argument, 0, 'm' },
		{ "seed", required_argument, 0, 's' },	{ "atomic", required_argument, 0, 'a' },
		{ "export-dm-log-writes", required_argument, 0, 'x' },
		{ "sector-size", required_argument, 0, 'S' },
		{ "help", no_argument, 0, 'h' },	{ 0, 0, 0, 0 },
	};
	const char *export_out = NULL;
	uint64_t sector_size = 512, disk_size = 0;
	struct dmlog_src src;
	struct stat ist;
	uint64_t n = 0, seed = 1, atomic = 0, applied = 0;
	struct replay_plan plan;
	int opt, mode = CACHE_CUT_SUBSET, what = 0, ret, status = 1;
	struct cache_params p;
	struct wlog_summary sum;
	struct wlog_reader r;
	struct backend be;
	struct cache c;
	char err[512];
	bool crash;

	/* Warnings and errors only: the cache's settings line and its power-cut report speak of
	 * a drive, not of a replay, which prints its own summary. */
	log_init("plugdisk", false, LOG_LVL_WARN);
	argv[0] = (char *)"plugdisk replay";	/* getopt's messages start with it */
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'x':
			export_out = optarg;
			/* fall through */
		case 'l':
		case 'f':
		case 'c':
			if (what) {
				fprintf(stderr, "plugdisk replay: one of --list, --flush, --crash, "
					"--export-dm-log-writes\n");
				return 2;
			}
			what = opt;
			if (opt != 'l' && opt != 'x' && conf_parse_u64_whole(optarg, &n)) {
				fprintf(stderr, "plugdisk replay: not a number: %s\n", optarg);
				return 2;
			}
			break;
		case 'm':
			mode = cache_name_index(cache_cut_names, optarg);
			if (mode < 0) {
				fprintf(stderr, "plugdisk replay: --mode %s: must be drop, prefix, subset "
						"or tear\n", optarg);
				return 2;
			}
			break;
		case 's':
		case 'a':
			if (conf_parse_u64_whole(optarg, opt == 's' ? &seed : &atomic) ||
			    (opt == 'a' && (atomic < 512 || atomic > 16384 || (atomic & (atomic - 1))))) {
				fprintf(stderr, "plugdisk replay: bad --%s %s\n",
					opt == 's' ? "seed" : "atomic", optarg);
				return 2;
			}
			break;
		case 'S':
			if (conf_parse_u64_whole(optarg, &sector_size) || sector_size < 512 ||
			    sector_size > 4096 || (sector_size & (sector_size - 1))) {
				fprintf(stderr, "plugdisk replay: bad --sector-size %s (512, 1024, 2048 "
					"or 4096)\n", optarg);
				return 2;
			}
			break;
		case 'h':
			replay_usage(stdout);
			return 0;
		default:
			replay_usage(stderr);
			return 2;
		}
	}
	if (!what || optind >= argc || argc - optind != (what == 'l' || what == 'x' ? 1 : 2)) {
		replay_usage(stderr);
		return 2;
	}
	/* A dm-log-writes log is read as the write log it converts to, for the image's size
	 * when the image is there (else the log's extent). */
	if (what != 'l' && what != 'x' && !stat(argv[optind + 1], &ist) && S_ISREG(ist.st_mode))
		disk_size = (uint64_t)ist.st_size;
	ret = dmlog_src_open(&src, argv[optind], disk_size, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind], err);
		return ret == -EINVAL || ret == -EPROTO ? 2 : 1;
	}
	if (what == 'x') {
		struct dmlog_summary ds;

		ret = dmlog_from_wlog(src.path, export_out, (uint32_t)sector_size, &ds, err,
				      sizeof(err));
		dmlog_src_close(&src);
		if (ret) {
			fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind], err);
			return ret == -EINVAL || ret == -EPROTO ? 2 : 1;
		}
		printf("replay: %s: %" PRIu64 " entries: %" PRIu64 " writes (%" PRIu64 " bytes), %"
		       PRIu64 " flushes, %" PRIu64 " discards, %" PRIu64 " marks, %" PRIu64
		       "-byte sectors\n", export_out, ds.entries, ds.writes, ds.write_bytes,
		       ds.flushes, ds.discards, ds.marks, sector_size);
		return 0;
	}
	ret = wlog_reader_open(&r, src.path);
	dmlog_src_close(&src); /* the reader holds the file */
	if (!ret)
		ret = wlog_validate(&r, &sum, err, sizeof(err));
	else if (ret == -EPROTO)
		snprintf(err, sizeof(err), "write log version %" PRIu32 "; this plugdisk reads "
			 "versions 1 to %d", r.hdr.version, WLOG_VERSION);
	else
		snprintf(err, sizeof(err), "%s", ret == -EINVAL ? r.why : strerror(-ret));
	if (ret) {
		/* A log that is not one, or any bad field in it: bad input, named, before
		 * anything is written. */
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind], err);
		wlog_reader_close(&r);
		return ret == -EINVAL || ret == -EPROTO ? 2 : 1;
	}
	if (sum.cut_short) {
		/* Warned on stderr by every mode (--list also says it in its listing, where it
		 * falls): a replay past the last flush is not every state a cut could leave. */
		wlog_cut_short_text(err, sizeof(err), sum.cut_short_after, sum.cut_short);
		fprintf(stderr, "plugdisk replay: %s: warning: %s\n", argv[optind], err);
	}
	ret = wlog_reader_rewind(&r);
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind], strerror(-ret));
		goto out_log;
	}
	if (what == 'l') {
		status = replay_list(&r, &sum);
		wlog_reader_close(&r);
		return status;
	}
	crash = what == 'c';
	/* The whole request is checked against the log before the image is opened (or
	 * created): a replay that cannot be done leaves the image as it was. */
	plan.n = n;
	plan.crash = crash;
	ret = replay_scan(&r, &plan);
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind], strerror(-ret));
		goto out_log;
	}
	if (plan.flushes < n) {
		fprintf(stderr, "plugdisk replay: the log has %" PRIu64 " flushes, not %" PRIu64 "\n",
			plan.flushes, n);
		goto out_log;
	}
	ret = wlog_reader_rewind(&r);
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind], strerror(-ret));
		goto out_log;
	}
	ret = backend_open(&be, argv[optind + 1], r.hdr.disk_size, err, sizeof(err));
	if (ret == -BACKEND_ESIZE) {
		fprintf(stderr, "plugdisk replay: %s: not the size of the log's disk, %" PRIu64
			" bytes\n", argv[optind + 1], r.hdr.disk_size);
		goto out_log;
	}
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s\n", err);
		goto out_log;
	}
	cache_params_default(&p);
	p.mode = CACHE_MODE_WRITEBACK;
	p.size = UINT64_MAX / 2;	/* an epoch stays whole in the cache, however large */
	p.destage_delay_ms = 3600000;
	/* Each pending write tears at the unit in force when it was logged (the header's, then
	 * each ATOMIC record's), unless --atomic names one for all. */
	plan.atomic_fixed = atomic != 0;
	p.atomic_write = atomic ? (uint32_t)atomic : r.hdr.atomic_write;
	p.powercut = (uint32_t)mode;
	p.seed = seed;
	ret = cache_init(&c, &p, backend_exec, &be, NULL, NULL);
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s\n", strerror(-ret));
		goto out_be;
	}
	ret = replay_apply(&r, &be, &c, &plan, &applied);
	if (ret == -ENOMEM) {
		fprintf(stderr, "plugdisk replay: out of memory after %" PRIu64 " writes (a "
			"pending write is held whole)\n", applied);
		goto out_cache;
	} else if (ret) {
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind + 1], strerror(-ret));
		goto out_cache;
	}
	if (crash) {
		struct cache_stats st;

		cache_powercut(&c, mode, seed, "replay");
		cache_snapshot(&c, &st, NULL);
		printf("replay: flush %" PRIu64 ", %" PRIu64 " writes applied, then a %s cut with seed "
		       "%" PRIu64 ", atomic write %" PRIu32 "%s: %" PRIu64 " of %" PRIu64
		       " pending bytes lost\n",
		       n, applied, cache_cut_names[mode], seed, p.atomic_write,
		       !atomic && plan.atomic_changes ? " at first, then as the log's reloads say"
						      : "",
		       st.last_cut_dropped, st.last_cut_pending);
	} else {
		printf("replay: flush %" PRIu64 ", %" PRIu64 " writes applied\n", n, applied);
	}
	status = 0;
out_cache:
	if (cache_destroy(&c))
		status = 1;
	if (backend_sync(&be))
		status = 1;
out_be:
	backend_close(&be);
out_log:
	wlog_reader_close(&r);
	return status;
}
