// SPDX-License-Identifier: MIT
/* `plugdisk replay`: rebuild an image from a write log (cache.log) at a flush boundary, or at
 * a crash state allowed between two flushes, with the write cache's own power-cut choices. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/parse.h"
#include "core/backend.h"
#include "core/cache.h"
#include "core/log.h"
#include "core/wlog.h"
#include "daemon/daemon.h"

static void replay_usage(FILE *f)
{
	fprintf(f,
		"Usage: plugdisk replay LOG --list\n"
		"       plugdisk replay LOG IMAGE --flush N\n"
		"       plugdisk replay LOG IMAGE --crash N [--mode drop|prefix|subset|tear]\n"
		"                          [--seed S] [--atomic BYTES]\n"
		"\n"
		"LOG is a cache.log write log. IMAGE must hold what the disk held when the log\n"
		"began (a copy taken before plugdisk started, or zeros for a new disk).\n"
		"  --list     the flushes in the log, with the writes before each\n"
		"  --flush N  apply every write the N-th completed flush made durable (0: none)\n"
		"  --crash N  as --flush N, then a power cut over the writes of the next epoch\n"
		"             (completed after flush N was issued, before flush N+1 was), chosen by\n"
		"             --mode (default subset) from --seed (default 1)\n"
		"  --atomic   the atomic write unit for tearing (default: the log's)\n"
		"Exit: 0 done, 1 I/O error or bad log, 2 usage.\n");
}

static int replay_list(struct wlog_reader *r)
{
	uint64_t writes = 0, bytes = 0, flushes = 0, discards = 0;
	struct wlog_rec rec;
	int ret;

	printf("# log: disk %" PRIu64 " bytes, atomic write %" PRIu32 "\n", r->hdr.disk_size,
	       r->hdr.atomic_write);
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
			       " bytes), %" PRIu64 " discards\n",
			       flushes, rec.epoch, writes, bytes, discards);
			break;
		case WLOG_CUT:
			printf("cut after %" PRIu64 " writes; replay stops here\n", writes);
			return 0;
		}
	}
	if (ret < 0) {
		fprintf(stderr, "plugdisk replay: bad record after %" PRIu64 " writes\n", writes);
		return 1;
	}
	printf("end after %" PRIu64 " writes (%" PRIu64 " bytes), %" PRIu64 " flushes\n", writes,
	       bytes, flushes);
	return 0;
}

/* Feed one record to the cache as the I/O it stands for. */
static int replay_io(struct cache *c, enum bio_op op, uint64_t off, uint64_t len, void *data)
{
	struct iovec iov = { data, len };
	struct bio bio = { .op = op, .offset = off, .len = (uint32_t)len, .iovcnt = data ? 1 : 0,
			   .iov = data ? &iov : NULL };
	struct request rq = { .op = op, .offset = off, .len = len, .bio = &bio, .biotail = &bio,
			      .nr_bios = 1, .nr_iov = data ? 1 : 0 };

	return cache_exec(c, &rq);
}

/* One pass over the log, as far as a replay of flush @n (and, for @crash, the epoch after it)
 * reads: with @c, each record goes to the cache as its I/O; without, the pass only checks
 * the records and counts, so that a request the log cannot meet fails before the image is
 * touched. 0 or -errno (-EINVAL: a bad record); *@flushes: the flushes replayed. */
static int replay_walk(struct wlog_reader *r, struct cache *c, uint64_t n, bool crash,
		       uint64_t *applied, uint64_t *flushes)
{
	uint64_t limit = crash ? n + 1 : n;
	struct wlog_rec rec;
	bool done = n == 0 && !crash;
	int ret = 0;

	/* Writes of epochs <= n (and n+1 for a crash), flushes up to n; stop at flush n (or
	 * n+1), at a cut, or at the end. */
	*applied = *flushes = 0;
	while (!done && (ret = wlog_next(r, &rec)) > 0) {
		ret = 0;
		switch (rec.type) {
		case WLOG_WRITE:
			if (rec.epoch > limit)
				break;
			if (c)
				ret = replay_io(c, BIO_OP_WRITE, rec.offset, rec.len, r->buf);
			(*applied)++;
			break;
		case WLOG_DISCARD:
			if (rec.epoch <= limit && c)
				ret = replay_io(c, BIO_OP_DISCARD, rec.offset, rec.len, NULL);
			break;
		case WLOG_FLUSH:
			if (rec.epoch > limit)
				break;
			if (rec.epoch == n + 1) { /* crash: the next flush bounds the epoch */
				done = true;
				break;
			}
			if (c)
				ret = replay_io(c, BIO_OP_FLUSH, 0, 0, NULL);
			(*flushes)++;
			if (rec.epoch == n)
				done = !crash;
			break;
		case WLOG_CUT:
			done = true;
			break;
		}
		if (ret < 0)
			return ret;
	}
	return ret < 0 ? ret : 0;
}

int pd_replay_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "list", no_argument, 0, 'l' },	{ "flush", required_argument, 0, 'f' },
		{ "crash", required_argument, 0, 'c' }, { "mode", required_argument, 0, 'm' },
		{ "seed", required_argument, 0, 's' },	{ "atomic", required_argument, 0, 'a' },
		{ "help", no_argument, 0, 'h' },	{ 0, 0, 0, 0 },
	};
	uint64_t n = 0, seed = 1, atomic = 0, applied = 0, flushes = 0;
	int opt, mode = CACHE_CUT_SUBSET, what = 0, ret, status = 1;
	struct cache_params p;
	struct wlog_reader r;
	struct backend be;
	struct cache c;
	char err[256];
	bool crash;

	/* Warnings and errors only: the cache's settings line and its power-cut report speak of
	 * a drive, not of a replay, which prints its own summary. */
	log_init("plugdisk", false, LOG_LVL_WARN);
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'l':
		case 'f':
		case 'c':
			if (what) {
				fprintf(stderr, "plugdisk replay: one of --list, --flush, --crash\n");
				return 2;
			}
			what = opt;
			if (opt != 'l' && conf_parse_u64_whole(optarg, &n)) {
				fprintf(stderr, "plugdisk replay: not a number: %s\n", optarg);
				return 2;
			}
			break;
		case 'm':
			mode = cache_name_index(cache_cut_names, optarg);
			if (mode < 0) {
				fprintf(stderr, "plugdisk replay: --mode drop|prefix|subset|tear\n");
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
		case 'h':
			replay_usage(stdout);
			return 0;
		default:
			replay_usage(stderr);
			return 2;
		}
	}
	if (!what || optind >= argc || argc - optind != (what == 'l' ? 1 : 2)) {
		replay_usage(stderr);
		return 2;
	}
	ret = wlog_reader_open(&r, argv[optind]);
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind],
			ret == -EINVAL ? "not a plugdisk write log" : strerror(-ret));
		return 1;
	}
	if (what == 'l') {
		status = replay_list(&r);
		wlog_reader_close(&r);
		return status;
	}
	crash = what == 'c';
	/* The whole request is checked against the log before the image is opened (or
	 * created): a replay that cannot be done leaves the image as it was. */
	ret = replay_walk(&r, NULL, n, crash, &applied, &flushes);
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind],
			ret == -EINVAL ? "bad record in the log" : strerror(-ret));
		goto out_log;
	}
	if (flushes < n) {
		fprintf(stderr, "plugdisk replay: the log has %" PRIu64 " flushes, not %" PRIu64 "\n",
			flushes, n);
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
	p.atomic_write = atomic ? (uint32_t)atomic : r.hdr.atomic_write;
	p.powercut = (uint32_t)mode;
	p.seed = seed;
	ret = cache_init(&c, &p, backend_exec, &be, NULL, NULL);
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s\n", strerror(-ret));
		goto out_be;
	}
	ret = replay_walk(&r, &c, n, crash, &applied, &flushes);
	if (ret) {
		fprintf(stderr, "plugdisk replay: %s: %s\n", argv[optind + 1], strerror(-ret));
		goto out_cache;
	}
	if (crash) {
		struct cache_stats st;

		cache_powercut(&c, mode, seed, "replay");
		cache_snapshot(&c, &st, NULL);
		printf("replay: flush %" PRIu64 ", %" PRIu64 " writes applied, then a %s cut with seed "
		       "%" PRIu64 ", atomic write %" PRIu32 ": %" PRIu64 " of %" PRIu64
		       " pending bytes lost\n",
		       n, applied, cache_cut_names[mode], seed, p.atomic_write, st.last_cut_dropped,
		       st.last_cut_pending);
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
