/* SPDX-License-Identifier: MIT */
/* Unit tests of the write log (core/cache/wlog.c): records read back as written, a torn last record
 * is ignored, a file that is not a log is refused, a write error cuts the log short and its
 * header says where; and the cache logs its writes, flushes and cuts in completion order with
 * their epochs. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

/* The header's end field, as the file holds it. */
static uint64_t hdr_end(void)
{
	struct wlog_hdr h;
	FILE *f = fopen(path, "rb");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fread(&h, sizeof(h), 1, f), 1);
	fclose(f);
	return h.end;
}

static uint64_t file_size(void)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

/* A write to the log fails part way (EFBIG past RLIMIT_FSIZE, as ENOSPC on a full
 * filesystem): the log stops, the half-written record is cut off, the header says where the
 * log ends, the records after it are counted lost, and readers find it cut short after the
 * last whole record. */
START_TEST(test_write_error_cuts_log_short)
{
	struct rlimit old, lim;
	struct wlog_summary sum;
	uint8_t data[4096];
	char err[256], msg[256];
	uint64_t whole = 32 + (32 + sizeof(data)) + 32;
	struct wlog l;

	make_path();
	memset(data, 0x3c, sizeof(data));
	ck_assert_int_eq(wlog_open(&l, path, 1 << 20, 4096), 0);
	wlog_append(&l, WLOG_WRITE, 1, 0, sizeof(data), data);
	wlog_append(&l, WLOG_FLUSH, 1, 0, 0, NULL);
	ck_assert_uint_eq(hdr_end(), 0); /* a whole log so far */
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = whole + 100;	/* the next write's record fits in part */
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	wlog_append(&l, WLOG_WRITE, 2, 4096, sizeof(data), data);
	wlog_append(&l, WLOG_FLUSH, 2, 0, 0, NULL);
	wlog_append(&l, WLOG_MARK, 2, 0, 4, "done");
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	ck_assert_int_eq(l.error, -EFBIG);
	ck_assert_uint_eq(l.lost, 3);
	wlog_close(&l);

	ck_assert_uint_eq(file_size(), whole);	/* the torn record cut off */
	ck_assert_uint_eq(hdr_end(), whole);
	ck_assert_int_eq(wlog_validate_path(path, &sum, err, sizeof(err)), 0);
	ck_assert_uint_eq(sum.records, 2);
	ck_assert_uint_eq(sum.cut_short, whole);
	ck_assert_uint_eq(sum.cut_short_after, 2);
	ck_assert(!sum.torn);
	wlog_cut_short_text(msg, sizeof(msg), sum.cut_short_after, sum.cut_short);
	ck_assert_ptr_nonnull(strstr(msg, "the log is cut short after record 2 (at byte 4192)"));
	unlink(path);
}
END_TEST

/* The header could not be rewritten when the log failed (here the log's descriptor is
 * read-only for a moment, so every call on it fails): the log reads whole until it is
 * closed, and closing it rewrites the header. */
START_TEST(test_cut_short_header_rewritten_at_close)
{
	struct wlog_summary sum;
	uint8_t data[512] = { 0 };
	char err[256];
	struct wlog l;
	int wfd;

	make_path();
	ck_assert_int_eq(wlog_open(&l, path, 1 << 20, 4096), 0);
	wlog_append(&l, WLOG_WRITE, 1, 0, sizeof(data), data);
	wfd = l.fd;
	l.fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(l.fd, 0);
	wlog_append(&l, WLOG_FLUSH, 1, 0, 0, NULL);
	ck_assert_int_eq(l.error, -EBADF);
	ck_assert(l.end_unsaved);
	ck_assert_uint_eq(hdr_end(), 0);
	ck_assert_int_eq(wlog_validate_path(path, &sum, err, sizeof(err)), 0);
	ck_assert_uint_eq(sum.cut_short, 0);	/* not yet known */
	close(l.fd);
	l.fd = wfd;
	wlog_close(&l);
	ck_assert_uint_eq(hdr_end(), 32 + 32 + sizeof(data));
	ck_assert_int_eq(wlog_validate_path(path, &sum, err, sizeof(err)), 0);
	ck_assert_uint_eq(sum.cut_short, 32 + 32 + sizeof(data));
	ck_assert_uint_eq(sum.cut_short_after, 1);
	unlink(path);
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
	ck_assert_uint_eq(sum.cut_short_after, 1);
	log.h.end = 32; /* before any record */
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), 0);
	ck_assert_uint_eq(sum.records, 0);
	ck_assert_uint_eq(sum.cut_short, 32);
	ck_assert_uint_eq(sum.cut_short_after, 0);
	/* an end outside the file is a bad header field */
	log.h.end = sizeof(log) + 8;
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "header: end 144 outside the file (136 bytes)"));
	log.h.end = 16;
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "header: end 16 outside the file"));
	/* cut short after a power cut: read whole up to the cut */
	log.d = (struct wlog_rec){ .type = WLOG_CUT };
	log.h.end = sizeof(log);
	ck_assert_int_eq(wlog_validate_buf(&log, sizeof(log), &sum, err, sizeof(err)), 0);
	ck_assert(sum.cut);
	ck_assert_uint_eq(sum.cut_short, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("wlog");
	TCase *tc = tcase_create("wlog");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_torn_last_record_and_bad_files);
	tcase_add_test(tc, test_write_error_cuts_log_short);
	tcase_add_test(tc, test_cut_short_header_rewritten_at_close);
	tcase_add_test(tc, test_cache_logs_in_completion_order);
	tcase_add_test(tc, test_cache_logs_a_failed_flush);
	tcase_add_test(tc, test_versions);
	tcase_add_test(tc, test_validate_buf);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
