/* SPDX-License-Identifier: MIT */
/* Unit tests of the write log (core/cache/wlog.c): records read back as written, a torn last record
 * is ignored, a file that is not a log is refused; and the cache logs its writes, flushes and
 * cuts in completion order with their epochs. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cache/cache.h"
#include "core/cache/wlog.h"
#include "tests/unit/cacheio.h"
#include "tests/unit/suite.h"

#define PATH_TEMPLATE "/tmp/plugdisk-test-wlog.XXXXXX"
static char path[] = PATH_TEMPLATE;

static void make_path(void)
{
	make_tmp_file(path, sizeof(path), PATH_TEMPLATE);
}

START_TEST(test_round_trip)
{
	struct wlog l;
	struct wlog_reader r;
	struct wlog_rec rec;
	uint8_t data[1000];

	make_path();
	memset(data, 0x5c, sizeof(data));
	ck_assert_int_eq(wlog_open(&l, path, 1 << 20, 4096), 0);
	wlog_append(&l, WLOG_WRITE, 1, 4096, sizeof(data), data);
	wlog_append(&l, WLOG_FLUSH, 1, 0, 0, NULL);
	wlog_append(&l, WLOG_DISCARD, 2, 8192, 4096, NULL);
	wlog_append(&l, WLOG_CUT, 2, 0, 0, NULL);
	wlog_close(&l);

	ck_assert_int_eq(wlog_reader_open(&r, path), 0);
	ck_assert_uint_eq(r.hdr.disk_size, 1 << 20);
	ck_assert_uint_eq(r.hdr.atomic_write, 4096);
	ck_assert_int_eq(wlog_next(&r, &rec), 1);
	ck_assert_uint_eq(rec.type, WLOG_WRITE);
	ck_assert_uint_eq(rec.epoch, 1);
	ck_assert_uint_eq(rec.offset, 4096);
	ck_assert_uint_eq(rec.len, sizeof(data));
	ck_assert(!memcmp(r.buf, data, sizeof(data)));
	ck_assert_int_eq(wlog_next(&r, &rec), 1);
	ck_assert_uint_eq(rec.type, WLOG_FLUSH);
	ck_assert_int_eq(wlog_next(&r, &rec), 1);
	ck_assert_uint_eq(rec.type, WLOG_DISCARD);
	ck_assert_uint_eq(rec.offset, 8192);
	ck_assert_int_eq(wlog_next(&r, &rec), 1);
	ck_assert_uint_eq(rec.type, WLOG_CUT);
	ck_assert_int_eq(wlog_next(&r, &rec), 0);
	wlog_reader_close(&r);
	unlink(path);
}
END_TEST

START_TEST(test_torn_last_record_and_bad_files)
{
	struct wlog l;
	struct wlog_reader r;
	struct wlog_rec rec;
	uint8_t data[4096] = { 0 };
	FILE *f;

	make_path();
	ck_assert_int_eq(wlog_open(&l, path, 1 << 20, 512), 0);
	wlog_append(&l, WLOG_WRITE, 1, 0, sizeof(data), data);
	wlog_append(&l, WLOG_WRITE, 1, 4096, sizeof(data), data);
	wlog_close(&l);
	ck_assert_int_eq(truncate(path, 32 + 2 * (32 + 4096) - 100), 0);
	ck_assert_int_eq(wlog_reader_open(&r, path), 0);
	ck_assert_int_eq(wlog_next(&r, &rec), 1);
	ck_assert_int_eq(wlog_next(&r, &rec), 0); /* torn: the end */
	wlog_reader_close(&r);

	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not a log at all, not a log at all", f);
	fclose(f);
	ck_assert_int_eq(wlog_reader_open(&r, path), -EINVAL);
	unlink(path);
	ck_assert_int_eq(wlog_reader_open(&r, path), -ENOENT);
}
END_TEST

/* The cache's log: writes with their epochs, completed flushes, the cut. */
static uint8_t img[1 << 20];

static int mem_exec(void *arg, struct request *rq)
{
	uint64_t pos = rq->offset;

	(void)arg;
	if (rq->op != BIO_OP_WRITE && rq->op != BIO_OP_READ)
		return 0;
	for (struct bio *b = rq->bio; b; b = b->next)
		for (int i = 0; i < b->iovcnt; i++) {
			if (rq->op == BIO_OP_WRITE)
				memcpy(img + pos, b->iov[i].iov_base, b->iov[i].iov_len);
			else
				memcpy(b->iov[i].iov_base, img + pos, b->iov[i].iov_len);
			pos += b->iov[i].iov_len;
		}
	return 0;
}

/* Start a writeback cache over @exec that destages only at a flush, logging to a new file
 * at path. */
static void start_logged(struct cache *c, io_exec_fn exec)
{
	struct cache_params p;

	make_path();
	cache_params_default(&p);
	p.mode = CACHE_MODE_WRITEBACK;
	p.destage_delay_ms = 100000;
	p.seed = 3;
	ck_assert_int_eq(cache_init(c, &p, exec, NULL, NULL, NULL), 0);
	ck_assert_int_eq(cache_open_log(c, path, sizeof(img)), 0);
}

START_TEST(test_cache_logs_in_completion_order)
{
	static const struct { uint32_t type; uint64_t epoch, off; } want[] = {
		{ WLOG_WRITE, 1, 0 },  { WLOG_WRITE, 1, 4096 }, { WLOG_FLUSH, 1, 0 },
		{ WLOG_WRITE, 2, 8192 }, { WLOG_CUT, 2, 0 },
	};
	struct cache c;
	struct wlog_reader r;
	struct wlog_rec rec;
	uint8_t b[4096];

	start_logged(&c, mem_exec);
	memset(b, 1, sizeof(b));
	ck_assert_int_eq(cache_io(&c, BIO_OP_WRITE, 0, 4096, b), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_WRITE, 4096, 4096, b), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_FLUSH, 0, 0, NULL), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_WRITE, 8192, 4096, b), 0);
	ck_assert_int_eq(cache_powercut(&c, CACHE_CUT_DROP, 1, "test"), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_WRITE, 0, 4096, b), -EIO); /* not logged */
	cache_destroy(&c);

	ck_assert_int_eq(wlog_reader_open(&r, path), 0);
	for (unsigned int i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_int_eq(wlog_next(&r, &rec), 1);
		ck_assert_uint_eq(rec.type, want[i].type);
		ck_assert_uint_eq(rec.epoch, want[i].epoch);
		ck_assert_uint_eq(rec.offset, want[i].off);
	}
	ck_assert_int_eq(wlog_next(&r, &rec), 0);
	wlog_reader_close(&r);
	unlink(path);
}
END_TEST

/* A flush the stage below fails: logged as failed with the epoch it used up, so that the
 * next completed flush is the next FLUSH record. */
static bool fail_flush;

static int flaky_exec(void *arg, struct request *rq)
{
	if (rq->op == BIO_OP_FLUSH && fail_flush)
		return -EIO;
	return mem_exec(arg, rq);
}

START_TEST(test_cache_logs_a_failed_flush)
{
	static const struct { uint32_t type; uint64_t epoch; } want[] = {
		{ WLOG_WRITE, 1 }, { WLOG_FLUSH, 1 }, { WLOG_WRITE, 2 }, { WLOG_FLUSH_FAILED, 2 },
		{ WLOG_WRITE, 3 }, { WLOG_FLUSH, 3 },
	};
	struct cache c;
	struct wlog_reader r;
	struct wlog_rec rec;
	uint8_t b[4096];

	start_logged(&c, flaky_exec);
	memset(b, 2, sizeof(b));
	ck_assert_int_eq(cache_io(&c, BIO_OP_WRITE, 0, 4096, b), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_FLUSH, 0, 0, NULL), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_WRITE, 4096, 4096, b), 0);
	fail_flush = true;
	ck_assert_int_eq(cache_io(&c, BIO_OP_FLUSH, 0, 0, NULL), -EIO);
	fail_flush = false;
	ck_assert_int_eq(cache_io(&c, BIO_OP_WRITE, 8192, 4096, b), 0);
	ck_assert_int_eq(cache_io(&c, BIO_OP_FLUSH, 0, 0, NULL), 0);
	cache_destroy(&c);

	ck_assert_int_eq(wlog_reader_open(&r, path), 0);
	ck_assert_uint_eq(r.hdr.version, WLOG_VERSION_BASE);
	for (unsigned int i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_int_eq(wlog_next(&r, &rec), 1);
		ck_assert_uint_eq(rec.type, want[i].type);
		ck_assert_uint_eq(rec.epoch, want[i].epoch);
	}
	ck_assert_int_eq(wlog_next(&r, &rec), 0);
	wlog_reader_close(&r);
	unlink(path);
}
END_TEST

/* Set the version field of the log at path. */
static void set_version(uint32_t v)
{
	FILE *f = fopen(path, "r+");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 8, SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(&v, sizeof(v), 1, f), 1);
	fclose(f);
}

/* A version 1 log (no failed-flush records) still reads; a failed-flush record in one is
 * bad; a version this reader does not know is refused as such, not as "not a log". */
START_TEST(test_versions)
{
	struct wlog l;
	struct wlog_reader r;
	struct wlog_rec rec;

	make_path();
	ck_assert_int_eq(wlog_open(&l, path, 1 << 20, 4096), 0);
	wlog_append(&l, WLOG_FLUSH, 1, 0, 0, NULL);
	wlog_append(&l, WLOG_FLUSH_FAILED, 2, 0, 0, NULL);
	wlog_close(&l);
	set_version(1);
	ck_assert_int_eq(wlog_reader_open(&r, path), 0);
	ck_assert_int_eq(wlog_next(&r, &rec), 1);
	ck_assert_uint_eq(rec.type, WLOG_FLUSH);
	ck_assert_int_eq(wlog_next(&r, &rec), -EINVAL);
	wlog_reader_close(&r);
	set_version(WLOG_VERSION + 1);
	ck_assert_int_eq(wlog_reader_open(&r, path), -EPROTO);
	set_version(0);
	ck_assert_int_eq(wlog_reader_open(&r, path), -EPROTO);
	unlink(path);
}
END_TEST

/* The validator over a buffer (the fuzzing entry point): a good log is summed up; a bad
 * header field or record is named by its number and byte. */
START_TEST(test_validate_buf)
{
	struct {
		struct wlog_hdr h;
		struct wlog_rec w;
		uint8_t data[8];
		struct wlog_rec f, d;
	} log = {
		.h = { .magic = "PDWLOG01", .version = 2, .atomic_write = 512, .disk_size = 4096 },
		.w = { .type = WLOG_WRITE, .epoch = 1, .offset = 4088, .len = 8 },
		.f = { .type = WLOG_FLUSH, .epoch = 1 },
		.d = { .type = WLOG_DISCARD, .epoch = 2, .offset = 0, .len = 4096 },
	};
	struct wlog_summary sum;
	char err[256];

	memcpy(log.h.magic, WLOG_MAGIC, 8);
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), 0);
	ck_assert_uint_eq(sum.records, 3);
	ck_assert_uint_eq(sum.writes, 1);
	ck_assert_uint_eq(sum.flushes, 1);
	ck_assert_uint_eq(sum.discards, 1);
	ck_assert_uint_eq(sum.end, sizeof(log));
	ck_assert(!sum.torn);
	/* torn: the last record's header cut */
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log) - 1, &sum, err, sizeof(err)), 0);
	ck_assert_uint_eq(sum.records, 2);
	ck_assert_int_eq(wlog_validate_buf(&log, 0, &sum, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(wlog_validate_buf(&log, 31, &sum, err, sizeof(err)), -EINVAL);
	log.d.len = 0;
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "record 3 at byte 104: discard length 0 (offset 0, length 0)");
	log.d.len = 4096;
	log.w.offset = 4089; /* one byte past the end */
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "record 1 at byte 32: write past the disk's end"));
	log.w.offset = 4088;
	log.h.atomic_write = 0;
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "header: atomic write unit 0"));
	log.h.atomic_write = 512;
	log.h.end = 32 + 48; /* cut short after the write */
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), 0);
	ck_assert_uint_eq(sum.records, 1);
	ck_assert_uint_eq(sum.cut_short, 80);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wlog");
	TCase *tc = tcase_create("wlog");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_torn_last_record_and_bad_files);
	tcase_add_test(tc, test_cache_logs_in_completion_order);
	tcase_add_test(tc, test_cache_logs_a_failed_flush);
	tcase_add_test(tc, test_versions);
	tcase_add_test(tc, test_validate_buf);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
