/* SPDX-License-Identifier: MIT */
/* Unit tests of the backing I/O (core/backend/backend.c, core/util/full_rw.c, core/util/sys.c) through fake
 * system calls: short reads and writes, EINTR from every call, zero-byte transfers, errors;
 * and rq_copy between a request's buffers and a flat buffer. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/backend/backend.h"
#include "core/util/full_rw.h"
#include "core/util/sys.h"
#include "tests/unit/suite.h"

#define IMAGE_SIZE (1024 * 1024)

/* What the fake calls do. */
static struct {
	size_t max_bytes;	/* preadv/pwritev move at most this much per call (0: all) */
	unsigned int eintr_every; /* preadv/pwritev: every Nth call fails with EINTR (0: none) */
	unsigned int eintr_left; /* fdatasync/fallocate: fail with EINTR this many times first */
	int fail_errno;		/* preadv/pwritev fail with this (0: don't) */
	bool zero;		/* preadv/pwritev move nothing */
	unsigned int rw_calls, sync_calls, falloc_calls;
	int max_iovcnt;
} fk;

static ssize_t fake_rw(bool write, int fd, const struct iovec *iov, int iovcnt, off_t off)
{
	struct iovec cut[IOV_MAX];
	size_t left = fk.max_bytes;
	int n = 0;

	fk.rw_calls++;
	if (iovcnt > fk.max_iovcnt)
		fk.max_iovcnt = iovcnt;
	if (iovcnt > IOV_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (fk.eintr_every && fk.rw_calls % fk.eintr_every == 0) {
		errno = EINTR;
		return -1;
	}
	if (fk.fail_errno) {
		errno = fk.fail_errno;
		return -1;
	}
	if (fk.zero)
		return 0;
	if (!left)
		return write ? pwritev(fd, iov, iovcnt, off) : preadv(fd, iov, iovcnt, off);
	/* Cut the vector after max_bytes, mid-entry if need be. */
	for (; n < iovcnt && left; n++) {
		cut[n] = iov[n];
		if (cut[n].iov_len > left)
			cut[n].iov_len = left;
		left -= cut[n].iov_len;
	}
	return write ? pwritev(fd, cut, n, off) : preadv(fd, cut, n, off);
}

static ssize_t fake_preadv(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
	return fake_rw(false, fd, iov, iovcnt, off);
}

static ssize_t fake_pwritev(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
	return fake_rw(true, fd, iov, iovcnt, off);
}

static int fake_fdatasync(int fd)
{
	fk.sync_calls++;
	if (fk.eintr_left) {
		fk.eintr_left--;
		errno = EINTR;
		return -1;
	}
	return fdatasync(fd);
}

static int fake_fallocate(int fd, int mode, off_t off, off_t len)
{
	fk.falloc_calls++;
	if (fk.eintr_left) {
		fk.eintr_left--;
		errno = EINTR;
		return -1;
	}
	return fallocate(fd, mode, off, len);
}

static const struct sys_ops fake_ops = {
	.preadv = fake_preadv,
	.pwritev = fake_pwritev,
	.fallocate = fake_fallocate,
	.fdatasync = fake_fdatasync,
	.ioctl = NULL, /* a regular image never discards through ioctl */
};

static char dir[64];
static char path[PATH_MAX];
static struct backend be;

static void setup(void)
{
	char err[256];

	snprintf(dir, sizeof(dir), "/tmp/plugdisk-test-backend-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/image", dir);
	ck_assert_int_eq(backend_open(&be, path, IMAGE_SIZE, err, sizeof(err)), 0);
	memset(&fk, 0, sizeof(fk));
	sys_ops = &fake_ops;
}

static void teardown(void)
{
	sys_ops = &sys_ops_libc;
	backend_close(&be);
	unlink(path);
	rmdir(dir);
}

/* A request of @nbios bios over @buf, each bio cut into entries of the given lengths. */
struct treq {
	struct request rq;
	struct bio bio[4];
	struct iovec iov[2048];
};

static void treq_build(struct treq *t, enum bio_op op, uint64_t off, char *buf,
		       const size_t *lens, unsigned int nlens, unsigned int per_bio)
{
	unsigned int b = 0, k = 0;
	size_t pos = 0;

	memset(t, 0, sizeof(*t));
	t->rq.op = op;
	t->rq.offset = off;
	for (unsigned int i = 0; i < nlens; i++) {
		if (i % per_bio == 0) {
			b = i / per_bio;
			ck_assert_uint_lt(b, 4);
			t->bio[b].op = op;
			t->bio[b].offset = off + pos;
			t->bio[b].iov = &t->iov[k];
			if (b)
				t->bio[b - 1].next = &t->bio[b];
			t->rq.nr_bios++;
		}
		t->iov[k].iov_base = buf + pos;
		t->iov[k].iov_len = lens[i];
		t->bio[b].iovcnt++;
		t->bio[b].len += (uint32_t)lens[i];
		t->rq.nr_iov++;
		pos += lens[i];
		k++;
	}
	t->rq.len = pos;
	t->rq.bio = &t->bio[0];
	t->rq.biotail = &t->bio[b];
}

static void fill(char *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(seed + i * 7 + i / 251);
}

static const size_t odd_lens[] = { 1000, 3096, 5000, 1, 4095, 123, 123, 123, 8192, 77 };
#define NODD (sizeof(odd_lens) / sizeof(odd_lens[0]))

static size_t odd_total(void)
{
	size_t t = 0;

	for (unsigned int i = 0; i < NODD; i++)
		t += odd_lens[i];
	return t;
}

START_TEST(test_short_and_interrupted_writes_move_every_byte)
{
	static struct treq t;
	size_t len = odd_total();
	char *src = malloc(len), *got = malloc(len);

	fill(src, len, 1);
	treq_build(&t, BIO_OP_WRITE, 4096 + 3, src, odd_lens, NODD, 4);
	fk.max_bytes = 777;
	fk.eintr_every = 3;
	ck_assert_int_eq(backend_exec(&be, &t.rq), 0);
	ck_assert_uint_gt(fk.rw_calls, len / 777); /* it really was cut short */
	ck_assert_int_eq(pread(be.fd, got, len, 4096 + 3), (ssize_t)len);
	ck_assert_mem_eq(got, src, len);
	free(src);
	free(got);
}
END_TEST

START_TEST(test_short_and_interrupted_reads_fill_every_byte)
{
	static struct treq t;
	size_t len = odd_total();
	char *src = malloc(len), *got = calloc(1, len);

	fill(src, len, 2);
	ck_assert_int_eq(pwrite(be.fd, src, len, 65536), (ssize_t)len);
	treq_build(&t, BIO_OP_READ, 65536, got, odd_lens, NODD, 3);
	fk.max_bytes = 1001;
	fk.eintr_every = 2;
	ck_assert_int_eq(backend_exec(&be, &t.rq), 0);
	ck_assert_uint_gt(fk.rw_calls, len / 1001);
	ck_assert_mem_eq(got, src, len);
	free(src);
	free(got);
}
END_TEST

/* More entries than one call may take: sent IOV_MAX at a time. */
START_TEST(test_more_than_iov_max_entries)
{
	static struct treq t;
	static size_t lens[1500];
	size_t len = 1500 * 512;
	char *src = malloc(len), *got = malloc(len);

	for (int i = 0; i < 1500; i++)
		lens[i] = 512;
	fill(src, len, 3);
	treq_build(&t, BIO_OP_WRITE, 0, src, lens, 1500, 500);
	ck_assert_int_eq(backend_exec(&be, &t.rq), 0);
	ck_assert_int_le(fk.max_iovcnt, IOV_MAX);
	ck_assert_int_eq(pread(be.fd, got, len, 0), (ssize_t)len);
	ck_assert_mem_eq(got, src, len);
	free(src);
	free(got);
}
END_TEST

/* A range that starts and ends inside entries of different bios moves exactly its bytes,
 * both ways, and no byte beside it. */
START_TEST(test_rq_copy_range_across_bios)
{
	static struct treq t;
	static char buf[10000], flat[10000], want[10000];
	const size_t lens[] = { 1000, 3000, 500, 2500, 3000 };

	fill(buf, sizeof(buf), 7);
	treq_build(&t, BIO_OP_WRITE, 40960, buf, lens, 5, 2);
	memset(flat, 0xee, sizeof(flat));
	rq_copy(&t.rq, 700, flat + 1, 8000, false);
	ck_assert_uint_eq((unsigned char)flat[0], 0xee);
	ck_assert_int_eq(memcmp(flat + 1, buf + 700, 8000), 0);
	ck_assert_uint_eq((unsigned char)flat[8001], 0xee);

	memcpy(want, buf, sizeof(want));
	fill(flat, sizeof(flat), 9);
	memcpy(want + 3999, flat, 2502);
	rq_copy(&t.rq, 3999, flat, 2502, true);
	ck_assert_int_eq(memcmp(buf, want, sizeof(want)), 0);
}
END_TEST

START_TEST(test_zero_byte_read_is_eio)
{
	static struct treq t;
	static char buf[8192];
	const size_t lens[] = { 4096, 4096 };

	treq_build(&t, BIO_OP_READ, 0, buf, lens, 2, 1);
	fk.zero = true;
	ck_assert_int_eq(backend_exec(&be, &t.rq), -EIO);
	ck_assert_uint_eq(fk.rw_calls, 1);
}
END_TEST

START_TEST(test_write_error_returned_not_retried)
{
	static struct treq t;
	static char buf[4096];
	const size_t lens[] = { 4096 };

	treq_build(&t, BIO_OP_WRITE, 0, buf, lens, 1, 1);
	fk.fail_errno = ENOSPC;
	ck_assert_int_eq(backend_exec(&be, &t.rq), -ENOSPC);
	ck_assert_uint_eq(fk.rw_calls, 1);
}
END_TEST

START_TEST(test_flush_retries_eintr)
{
	struct request rq = { .op = BIO_OP_FLUSH };

	fk.eintr_left = 3;
	ck_assert_int_eq(backend_exec(&be, &rq), 0);
	ck_assert_uint_eq(fk.sync_calls, 4);
}
END_TEST

START_TEST(test_discard_retries_eintr)
{
	struct request rq = { .op = BIO_OP_DISCARD, .offset = 8192, .len = 8192 };
	char buf[8192], zero[8192] = { 0 };

	fill(buf, sizeof(buf), 4);
	ck_assert_int_eq(pwrite(be.fd, buf, sizeof(buf), 8192), (ssize_t)sizeof(buf));
	fk.eintr_left = 2;
	ck_assert_int_eq(backend_exec(&be, &rq), 0);
	ck_assert_uint_eq(fk.falloc_calls, 3);
	ck_assert_int_eq(pread(be.fd, buf, sizeof(buf), 8192), (ssize_t)sizeof(buf));
	ck_assert_mem_eq(buf, zero, sizeof(buf));
}
END_TEST

static Suite *backend_suite(void)
{
	Suite *s = suite_create("backend");
	TCase *tc = tcase_create("io");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_short_and_interrupted_writes_move_every_byte);
	tcase_add_test(tc, test_short_and_interrupted_reads_fill_every_byte);
	tcase_add_test(tc, test_more_than_iov_max_entries);
	tcase_add_test(tc, test_zero_byte_read_is_eio);
	tcase_add_test(tc, test_rq_copy_range_across_bios);
	tcase_add_test(tc, test_write_error_returned_not_retried);
	tcase_add_test(tc, test_flush_retries_eintr);
	tcase_add_test(tc, test_discard_retries_eintr);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(backend_suite());
}
