/* SPDX-License-Identifier: MIT */
/* Unit tests of disk.image's two forms (core/backend/backend_uri.c): which strings are NBD URIs, how
 * they are taken apart and which are refused; and of what the backend interface does for
 * every backend (core/backend/backend_if.c): read-only disks and alignment, with a fake backend. */
#undef NDEBUG
#include <check.h>
#include <errno.h>
#include <string.h>

#include "core/backend/backend.h"
#include "tests/unit/suite.h"

static struct nbd_uri u;
static char err[256];

START_TEST(test_detects_nbd_schemes)
{
	ck_assert(backend_uri_is_nbd("nbd://localhost/x"));
	ck_assert(backend_uri_is_nbd("nbds://h/"));
	ck_assert(backend_uri_is_nbd("nbd+unix:///?socket=/s"));
	ck_assert(backend_uri_is_nbd("nbds+unix:///e?socket=/s"));
	ck_assert(backend_uri_is_nbd("nbd+vsock://2/"));
	/* A misspelt transport is still an NBD URI, so it is refused, not created as a file. */
	ck_assert(backend_uri_is_nbd("nbd+unx:///?socket=/s"));
}
END_TEST

START_TEST(test_paths_are_not_nbd)
{
	ck_assert(!backend_uri_is_nbd("plugdisk.img"));
	ck_assert(!backend_uri_is_nbd("/var/lib/nbd://x"));
	ck_assert(!backend_uri_is_nbd("nbd.img"));
	ck_assert(!backend_uri_is_nbd("nbd:/x"));
	ck_assert(!backend_uri_is_nbd("./nbd://x"));
	ck_assert(!backend_uri_is_nbd("http://h/x"));
	ck_assert(!backend_uri_is_nbd(""));
	ck_assert(!backend_uri_is_nbd(NULL));
}
END_TEST

/* disk.image: another scheme, or an NBD URI mistyped, is refused rather than made a path. */
START_TEST(test_image_check_refuses_other_schemes)
{
	ck_assert_int_eq(backend_image_check("plugdisk.img", err, sizeof(err)), 0);
	ck_assert_int_eq(backend_image_check("/var/lib/x.img", err, sizeof(err)), 0);
	ck_assert_int_eq(backend_image_check("disk:1.img", err, sizeof(err)), 0);
	ck_assert_int_eq(backend_image_check("./http://x", err, sizeof(err)), 0);
	ck_assert_int_eq(backend_image_check("nbd://h/x", err, sizeof(err)), 0);
	ck_assert_int_eq(backend_image_check("http://h/x", err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "unknown URI scheme \"http:\""), "%s", err);
	ck_assert_int_eq(backend_image_check("file:///x", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(backend_image_check("NBD://h/x", err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "is not an NBD URI"), "%s", err);
	ck_assert_int_eq(backend_image_check("nbd:/x", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(backend_image_check("nbd:x", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(backend_image_check("Nbds+unix:///?socket=/s", err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(backend_image_check("nbd+unx:///?socket=/s", err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "unknown NBD transport"), "%s", err);
}
END_TEST

START_TEST(test_tcp_host_port_export)
{
	ck_assert_int_eq(nbd_uri_parse("nbd://example.com:10810/vol%2F1", &u, err, sizeof(err)),
			 0);
	ck_assert_str_eq(u.host, "example.com");
	ck_assert_uint_eq(u.port, 10810);
	ck_assert_str_eq(u.export_name, "vol/1");
	ck_assert(!u.tls && !u.unix_socket);
}
END_TEST

START_TEST(test_default_port_and_export)
{
	ck_assert_int_eq(nbd_uri_parse("nbd://127.0.0.1", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.host, "127.0.0.1");
	ck_assert_uint_eq(u.port, 10809);
	ck_assert_str_eq(u.export_name, "");
	ck_assert_int_eq(nbd_uri_parse("nbd://h/", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.export_name, "");
	/* Only the first slash separates: the export name may start with one. */
	ck_assert_int_eq(nbd_uri_parse("nbd://h//abs", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.export_name, "/abs");
}
END_TEST

START_TEST(test_ipv6_and_user)
{
	ck_assert_int_eq(nbd_uri_parse("nbds://alice@[::1]:99/e", &u, err, sizeof(err)), 0);
	ck_assert_str_eq(u.host, "::1");
	ck_assert_uint_eq(u.port, 99);
	ck_assert(u.tls);
	ck_assert_str_eq(u.export_name, "e");
}
END_TEST

START_TEST(test_unix_socket)
{
	ck_assert_int_eq(
		nbd_uri_parse("nbd+unix:///disk?tls=off&socket=/run/my%20sock", &u, err, sizeof(err)),
		0);
	ck_assert(u.unix_socket);
	ck_assert_str_eq(u.socket, "/run/my sock");
	ck_assert_str_eq(u.export_name, "disk");
	ck_assert_str_eq(u.host, "");
}
END_TEST

static void refused(const char *uri, const char *why)
{
	err[0] = '\0';
	ck_assert_msg(nbd_uri_parse(uri, &u, err, sizeof(err)) == -EINVAL, "%s was taken", uri);
	ck_assert_msg(strstr(err, why), "%s: message '%s' lacks '%s'", uri, err, why);
}

START_TEST(test_refused)
{
	refused("nbd+unix:///x", "socket=");
	refused("nbd+unix://host/x?socket=/s", "no host");
	refused("nbd://h/x?socket=/s", "only goes with nbd+unix");
	refused("nbd:///x", "no host");
	refused("nbd://h:0/x", "port");
	refused("nbd://h:65536/x", "port");
	refused("nbd://h:99999999999999999999/x", "port");
	refused("nbd://h:12a/x", "port");
	refused("nbd://h:/x", "empty port");
	refused("nbd://[::1/x", "IPv6");
	refused("nbd+tls://h/x", "unknown NBD transport");
	refused("nbd://h/x%2", "escape");
	refused("nbd://h/x%zz", "escape");
	refused("nbd://h/x%00y", "escape");
	refused("nbd://h/x#frag", "fragment");
	refused("file:///x", "not an NBD URI");
}
END_TEST

/* ---- the interface, over a fake backend that counts what reaches it ---- */

static int fake_calls;

static int fake_exec(void *be, struct request *rq)
{
	(void)be;
	(void)rq;
	fake_calls++;
	return 0;
}

static int fake_sync(struct backend *be)
{
	(void)be;
	return -EIO;
}

static int fake_closed;

static void fake_close(struct backend *be)
{
	(void)be;
	fake_closed++;
}

static const struct backend_ops fake_ops = {
	.kind = "fake",
	.exec = fake_exec,
	.sync = fake_sync,
	.close = fake_close,
};

static struct request mkrq(enum bio_op op, uint64_t off, uint64_t len)
{
	struct request rq;

	memset(&rq, 0, sizeof(rq));
	rq.op = op;
	rq.offset = off;
	rq.len = len;
	return rq;
}

START_TEST(test_read_only_refuses_writes_and_discards)
{
	struct backend be = { .ops = &fake_ops, .size = 1 << 20, .read_only = true,
			      .block_size = 1 };
	struct request w = mkrq(BIO_OP_WRITE, 0, 4096), d = mkrq(BIO_OP_DISCARD, 0, 4096);
	struct request r = mkrq(BIO_OP_READ, 0, 4096), f = mkrq(BIO_OP_FLUSH, 0, 0);

	fake_calls = 0;
	ck_assert_int_eq(backend_exec(&be, &w), -EROFS);
	ck_assert_int_eq(backend_exec(&be, &d), -EROFS);
	ck_assert_int_eq(fake_calls, 0);
	ck_assert_int_eq(backend_exec(&be, &r), 0);
	ck_assert_int_eq(backend_exec(&be, &f), 0);
	ck_assert_int_eq(fake_calls, 2);
}
END_TEST

START_TEST(test_alignment_of_the_backend)
{
	struct backend be = { .ops = &fake_ops, .size = 1 << 20, .block_size = 512 };
	struct request a = mkrq(BIO_OP_WRITE, 512, 1024), b = mkrq(BIO_OP_READ, 100, 512);
	struct request c = mkrq(BIO_OP_READ, 0, 100), f = mkrq(BIO_OP_FLUSH, 0, 0);

	fake_calls = 0;
	ck_assert_int_eq(backend_exec(&be, &a), 0);
	ck_assert_int_eq(backend_exec(&be, &b), -EINVAL);
	ck_assert_int_eq(backend_exec(&be, &c), -EINVAL);
	ck_assert_int_eq(backend_exec(&be, &f), 0);
	ck_assert_int_eq(fake_calls, 2);
}
END_TEST

START_TEST(test_sync_stats_close_go_to_the_backend)
{
	struct backend be = { .ops = &fake_ops, .size = 1 << 20, .block_size = 1 };
	char buf[16] = "junk";

	ck_assert_int_eq(backend_sync(&be), -EIO);
	ck_assert_uint_eq(backend_stats(&be, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	fake_closed = 0;
	backend_close(&be);
	backend_close(&be); /* closing twice is harmless */
	ck_assert_int_eq(fake_closed, 1);
	ck_assert_ptr_null(be.ops);
}
END_TEST

static Suite *uri_suite(void)
{
	Suite *s = suite_create("backend_uri");
	TCase *tc = tcase_create("uri");

	tcase_add_test(tc, test_detects_nbd_schemes);
	tcase_add_test(tc, test_paths_are_not_nbd);
	tcase_add_test(tc, test_image_check_refuses_other_schemes);
	tcase_add_test(tc, test_tcp_host_port_export);
	tcase_add_test(tc, test_default_port_and_export);
	tcase_add_test(tc, test_ipv6_and_user);
	tcase_add_test(tc, test_unix_socket);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("interface");
	tcase_add_test(tc, test_read_only_refuses_writes_and_discards);
	tcase_add_test(tc, test_alignment_of_the_backend);
	tcase_add_test(tc, test_sync_stats_close_go_to_the_backend);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(uri_suite());
}
